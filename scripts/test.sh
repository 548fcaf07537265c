#!/usr/bin/env bash
# The tests in one command: set up, build, run every test. Without a GPU the GPU tests
# skip with a message; with one they run too. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd "${FLASHIO_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j "$(nproc)"
