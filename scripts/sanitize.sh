#!/usr/bin/env bash
# compute-sanitizer on every GPU kernel at small sizes: memcheck over the GPU tests with
# N = 1 and 17 and the tile/feature tests; racecheck (slow) over one test per kernel family
# and pass with masks and dropout, and the d = 256 flash2 backward (its warps share Pᵀ and dSᵀ
# through shared memory). Needs a GPU and a build (scripts/build.sh). Prints each tool's
# summary; exits non-zero on any error.
set -euo pipefail
cd "$(dirname "$0")/.."
tests="${FLASHIO_BUILD_DIR:-build}/tests/flashio_gpu_tests"
memcheck_filter='*n1_*:*n17_*:GpuFeatures.*:BlocksparseFeatures.MasksDropoutGqaAndHeadDim128ComposeWithSparsity'
racecheck_filter='*n17_d64_fp16_causal:*n17_d256_fp16_causal_dropout:*n17_d256_bf16_padding:*n17_d64_bf16_causal_dropout:*n17_d64_fp16_padding_dropout:Flash2BackwardFeatures.GqaPaddingUnequalLengthsDropout:*BlocksparseFlash.*/random_n1013_bf16_causal:*BlocksparseStandard.*/file_n1013_fp16'
status=0
for tool in memcheck racecheck; do
  echo "== compute-sanitizer --tool $tool"
  if [ "$tool" = memcheck ]; then filter=$memcheck_filter; else filter=$racecheck_filter; fi
  if ! compute-sanitizer --tool "$tool" --error-exitcode 3 "$tests" --gtest_filter="$filter" --gtest_brief=1 \
    2>&1 | grep -E "SUMMARY|PASSED|FAILED"; then
    status=1
  fi
done
if [ $status -eq 0 ]; then echo "sanitize: clean"; else echo "sanitize: FAILED"; fi
exit $status
