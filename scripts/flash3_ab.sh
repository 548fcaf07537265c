#!/usr/bin/env bash
# A change to flash3's forward, on a GPU machine: the new build's flash3 GPU tests, then the old
# and the new build alternated (scripts/ab_run.sh: before, after, before, after) on
# scripts/lib/flash3-fwd-ab.json (the FA-2 setting's forward at d 64/128/256, causal off/on,
# N 512-16384; the 128-key tile at d 128; odd sizes), and the table (scripts/ab_table.py).
# With --peers also the flash3 stage of scripts/reproduce_results.sh on the new build (cuDNN and
# PyTorch's FA-2 in the same call).
#   scripts/flash3_ab.sh BEFORE_FLASHIO AFTER_FLASHIO OUT [--peers]
# Files: OUT/flash3-tests.txt, OUT/ab.md, OUT/ab/{before,after}-{1,2}.json, OUT/reproduce/ (--peers).
# FLASHIO_BUILD_DIR names the build whose tests/flashio_gpu_tests runs (default build).
set -uo pipefail
before="${1:?usage: scripts/flash3_ab.sh BEFORE AFTER OUT [--peers]}"
after="${2:?}"
out="${3:?}"
peers="${4:-}"
cd "$(dirname "$0")/.."
mkdir -p "$out"
status=0
"${FLASHIO_BUILD_DIR:-build}/tests/flashio_gpu_tests" --gtest_filter='*Flash3*' --gtest_brief=1 >"$out/flash3-tests.txt" 2>&1 || status=1
tail -2 "$out/flash3-tests.txt"
scripts/ab_run.sh "$before" "$after" "$out/ab" scripts/lib/flash3-fwd-ab.json || status=1
python3 scripts/ab_table.py --before "$out"/ab/before-{1,2}.json --after "$out"/ab/after-{1,2}.json >"$out/ab.md" || status=1
tail -1 "$out/ab.md"
if [ "$peers" = --peers ]; then
  FLASHIO_BIN="$after" scripts/reproduce_results.sh "$out/reproduce" flash3 >"$out/reproduce.txt" 2>&1 || status=1
  tail -3 "$out/reproduce.txt"
fi
exit $status
