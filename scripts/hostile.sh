#!/usr/bin/env bash
# The hostile-input suite (tests/hostile/hostile.py, issue 21) against the CUDA-free flashio
# compiled with AddressSanitizer and UndefinedBehaviorSanitizer (FLASHIO_SANITIZE=ON): every case
# must hold and no sanitizer may report. Builds only the flashio target in ${FLASHIO_BUILD_DIR:-build}-asan.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${FLASHIO_BUILD_DIR:-build}-asan"
plain_path=/usr/bin:/bin  # no CUDA Toolkit
PATH="$plain_path" cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHIO_CUDA=OFF \
  -DFLASHIO_SANITIZE=ON -DFLASHIO_BUILD_TESTS=OFF >/dev/null
PATH="$plain_path" cmake --build "$dir" --target flashio
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=86}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=87}"
exec python3 tests/hostile/hostile.py --flashio "$dir/flashio" "$@"
