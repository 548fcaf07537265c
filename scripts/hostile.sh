#!/usr/bin/env bash
# The hostile-input suite (tests/hostile/hostile.py, issue 21) against the CUDA-free flashio
# compiled with AddressSanitizer and UndefinedBehaviorSanitizer: every case must hold and no
# sanitizer may report. The binary is the fuzz build's (scripts/sanitizer_build.sh), so that after
# fuzz.sh only flashio's link is left to do (CI runs fuzz.sh first): one sanitizer build, not two.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${FLASHIO_BUILD_DIR:-build}-fuzz"
scripts/sanitizer_build.sh flashio
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=86}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=87}"
exec python3 tests/hostile/hostile.py --flashio "$dir/flashio" "$@"
