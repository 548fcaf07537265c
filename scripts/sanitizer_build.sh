#!/usr/bin/env bash
# The one sanitizer build of the CUDA-free tree (Clang, AddressSanitizer + UndefinedBehaviorSanitizer,
# FLASHIO_FUZZ=ON) in ${FLASHIO_BUILD_DIR:-build}-fuzz, shared by scripts/fuzz.sh (the fuzz targets)
# and scripts/hostile.sh (flashio itself), so that the tree compiles once with sanitizers for both.
#   scripts/sanitizer_build.sh TARGET...
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${FLASHIO_BUILD_DIR:-build}-fuzz"
clang=$(command -v clang++ || command -v clang++-14 || true)
[ -n "$clang" ] || { echo "sanitizer_build: clang++ not found (scripts/setup.sh --test installs it)" >&2; exit 1; }
PATH=/usr/bin:/bin CXX="$clang" cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHIO_CUDA=OFF \
  -DFLASHIO_FUZZ=ON -DFLASHIO_BUILD_TESTS=OFF >/dev/null
PATH=/usr/bin:/bin cmake --build "$dir" --target "$@"
