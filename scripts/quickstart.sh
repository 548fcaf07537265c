#!/usr/bin/env bash
# The main job in one command: set up, build, and run the default sweep on GPU 0
# (FlashAttention-2's setting, standard vs flash2 forward), writing
# results/<gpu>-<date>.json and printing the table. Extra arguments go to `flashio run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh flashio
exec build/flashio run "$@"
