#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck on every GPU kernel at small sizes (the GPU
# tests with N = 1 and 17, and the tile/feature tests). Needs a GPU and a build
# (scripts/build.sh). Prints each tool's error summary; exits non-zero on any error.
set -euo pipefail
cd "$(dirname "$0")/.."
tests="${FLASHIO_BUILD_DIR:-build}/tests/flashio_gpu_tests"
filter='*n1_*:*n17_*:GpuFeatures.*'
status=0
for tool in memcheck racecheck; do
  echo "== compute-sanitizer --tool $tool"
  if ! compute-sanitizer --tool "$tool" --error-exitcode 3 "$tests" --gtest_filter="$filter" --gtest_brief=1 \
    2>&1 | grep -E "SUMMARY|PASSED|FAILED"; then
    status=1
  fi
done
if [ $status -eq 0 ]; then echo "sanitize: clean"; else echo "sanitize: FAILED"; fi
exit $status
