#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck and synccheck on the flash3 GPU tests (odd sizes, key
# padding, each head dim and dtype, the ablations; forward and backward — a backward test runs the forward
# first, whose item hand-off racecheck reports: kernels/flash3/NOTES.md), writing what
# results/crosscheck/nvidia-*-sanitize-flash3.txt holds: the filters, then each tool's summary
# lines and any error line. Needs a GPU and a build. racecheck leaves out the no-warp-specialisation
# test of 340 items (under it the tests' GPU float64 reference takes minutes): that kernel's
# racecheck runs through the CLI with the reference on the host (results/crosscheck/issue16-no-warpspec/run.sh).
#   scripts/sanitize_flash3.sh [OUT]    (default: stdout); exits non-zero on any error
set -uo pipefail
cd "$(dirname "$0")/.."
tests="${FLASHIO_BUILD_DIR:-build}/tests/flashio_gpu_tests"
out="${1:-/dev/stdout}"
memcheck_filter='*Flash3Forward*/n1_*:*Flash3Forward*/n17_*:Flash3Test.KeyPadding*:*Flash3Backward*/n1_*:*Flash3Backward*/n17_*:Flash3Test.BackwardKeyPadding*:Flash3Test.EveryCompiledTile*:Flash3Test.AblationsMatchReference:Flash3Test.WithoutWarpSpecialisation*'
race_filter='*Flash3Forward*/n17_d128_fp16_causal:*Flash3Forward*/n1013_d64_bf16:*Flash3Forward*/n17_d256_bf16_causal:*Flash3Forward*/n1013_d256_fp16:*Flash3Backward*/n17_d128_fp16_causal:*Flash3Backward*/n1013_d64_bf16:*Flash3Backward*/n1013_d128_fp16_causal:Flash3Test.EveryCompiledTile*:Flash3Test.AblationsMatchReference'
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
status=0
{
  echo "# compute-sanitizer on the flash3 GPU tests, $gpu, revision $(cat "${FLASHIO_BUNDLE_DIR:-.gpu}/revision" 2>/dev/null || git rev-parse --short HEAD)"
  echo "# (scripts/sanitize_flash3.sh). Output lines as printed (grep SUMMARY|PASSED|FAILED|rror)."
  for tool in memcheck racecheck synccheck; do
    if [ "$tool" = memcheck ]; then filter=$memcheck_filter; else filter=$race_filter; fi
    echo "# $tool: --gtest_filter='$filter'"
    compute-sanitizer --tool "$tool" --error-exitcode 3 "$tests" --gtest_filter="$filter" --gtest_brief=1 \
      >/tmp/sanitize_flash3.$tool 2>&1 || status=1
    grep -E "SUMMARY|PASSED|FAILED|rror" /tmp/sanitize_flash3.$tool
  done
} >"$out"
exit $status
