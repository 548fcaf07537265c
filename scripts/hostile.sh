#!/usr/bin/env bash
# The hostile-input suite (tests/hostile/hostile.py, issue 21) against the CUDA-free flashio
# compiled with AddressSanitizer and UndefinedBehaviorSanitizer: every case must hold and no
# sanitizer may report. The binary is the fuzz build's (scripts/fuzz.sh: Clang, the same two
# sanitizers, FLASHIO_FUZZ=ON), configured the same way here, so that after fuzz.sh only flashio's
# link is left to do (CI runs fuzz.sh first): one sanitizer build of the tree, not two.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${FLASHIO_BUILD_DIR:-build}-fuzz"
clang=$(command -v clang++ || command -v clang++-14 || true)
[ -n "$clang" ] || { echo "hostile: clang++ not found (apt-get install clang)" >&2; exit 1; }
PATH=/usr/bin:/bin CXX="$clang" cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHIO_CUDA=OFF \
  -DFLASHIO_FUZZ=ON -DFLASHIO_BUILD_TESTS=OFF >/dev/null
PATH=/usr/bin:/bin cmake --build "$dir" --target flashio
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=86}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=87}"
exec python3 tests/hostile/hostile.py --flashio "$dir/flashio" "$@"
