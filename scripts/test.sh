#!/usr/bin/env bash
# The tests in one command: set up, build, run every test. First the build without CUDA
# (FLASHIO_CUDA=OFF: the analysis commands and the CPU tests, configured with no CUDA compiler
# on PATH), then the full build; without a GPU the GPU tests skip with a message, with one they
# run too. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test

nocuda="${FLASHIO_BUILD_DIR:-build}-nocuda"
echo "== test.sh: build without CUDA ($nocuda)"
plain_path=/usr/bin:/bin  # the system's compiler, CMake, Ninja and Python; no CUDA Toolkit
if PATH="$plain_path" command -v nvcc >/dev/null; then
  echo "test.sh: nvcc is in $plain_path: this build is configured without CUDA but could find it"
else
  echo "test.sh: no nvcc on PATH ($plain_path) for this build"
fi
PATH="$plain_path" cmake -S . -B "$nocuda" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHIO_CUDA=OFF >/dev/null
PATH="$plain_path" cmake --build "$nocuda"
(cd "$nocuda" && PATH="$plain_path" ctest --output-on-failure --timeout 900 -j "$(nproc)")

# Hostile input (docs/hostile-input.md): each libFuzzer target for FLASHIO_FUZZ_SECONDS (default
# 60), then the suite again with flashio under ASan and UBSan (from the same sanitizer build).
echo "== test.sh: fuzzing the readers and the CLI (${FLASHIO_FUZZ_SECONDS:-60} s each)"
scripts/fuzz.sh
echo "== test.sh: hostile-input suite under AddressSanitizer and UndefinedBehaviorSanitizer"
scripts/hostile.sh

echo "== test.sh: build with CUDA (${FLASHIO_BUILD_DIR:-build})"
scripts/build.sh
cd "${FLASHIO_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j "$(nproc)"
