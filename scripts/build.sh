#!/usr/bin/env bash
# Configures and builds flashio into build/ (or $FLASHIO_BUILD_DIR).
# CUDA architectures: $FLASHIO_CUDA_ARCHS if set (e.g. "90" or "80;90"), else the GPU
# present, else — with no GPU — a single architecture (90) to keep the build short; set
# FLASHIO_CUDA_ARCHS="75;80;86;89;90" for a binary that runs on every supported GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FLASHIO_BUILD_DIR:-build}"
nvcc="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
args=(-S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc")
if [ -n "${FLASHIO_CUDA_ARCHS:-}" ]; then
  args+=("-DCMAKE_CUDA_ARCHITECTURES=${FLASHIO_CUDA_ARCHS}")
elif ! nvidia-smi -L >/dev/null 2>&1; then
  args+=("-DCMAKE_CUDA_ARCHITECTURES=90")
fi
cmake "${args[@]}" >/dev/null
cmake --build "$build" -- "$@"
