#!/usr/bin/env bash
# Two H200s: issue 22's scaling files (scripts/scaling.sh both) with the committed build.
set -uo pipefail
xz -dc .gpu/sc4.tar.xz | tar xf -
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
build/flashio --version
mkdir -p /tmp/sc
FLASHIO_BIN=build/flashio scripts/scaling.sh /tmp/sc both 2>&1 | tee /tmp/sc/scaling.txt
tar cf $OUT/sc.tar -C /tmp sc
