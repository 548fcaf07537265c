#!/usr/bin/env bash
# The sm_75 and sm_80 code paths of the fused kernels (kernels/common/mma.cuh: two
# mma.m16n8k8 per k16 and plain 16-byte copies below sm_80, bf16 refused there; m16n8k16 and
# cp.async from sm_80), run on whatever GPU is here — an H100 — from PTX only, JIT-compiled by
# the driver. What that proves and what not: kernels/flash2/NOTES.md, "Older code paths
# through PTX".
#
#   scripts/ptx_paths.sh build [75 80]   configure and build build-ptx75/ and build-ptx80/
#                                        (CMAKE_CUDA_ARCHITECTURES=75-virtual, 80-virtual: PTX
#                                        only, no SASS), targets flashio_gpu_tests and flashio
#   scripts/ptx_paths.sh pack [OUT]      strip them and pack ptx75/{flashio_gpu_tests,flashio}
#                                        and ptx80/... into OUT (build-dist-ptx/ptx-bins.tar.xz)
#   scripts/ptx_paths.sh test DIR [LOG]  run the flash1, flash2 and blocksparse_flash GPU tests
#                                        with DIR/ptx75/flashio_gpu_tests and DIR/ptx80/...
#                                        (a few minutes each on an H100, the first JIT
#                                        included); output also to LOG/ptx75.log, LOG/ptx80.log
#                                        if given. FLASHIO_PTX_ARCHS="75" (or "80") runs one;
#                                        FLASHIO_PTX_TIMEOUT (s, default 540) bounds each run
#
# No SASS is used: (1) the builds ask for code=[compute_XX] only (cmake's "-virtual"), which
# `cuobjdump --list-elf` confirms where cuobjdump exists (no ELF in the binary; --list-ptx shows
# compute_XX); (2) the tests run with CUDA_FORCE_PTX_JIT=1, which makes the driver ignore any
# embedded SASS and JIT the PTX (a kernel without PTX would fail to launch); (3) the test
# GpuFeatures.FusedKernelArchIsReported prints cudaFuncGetAttributes' ptxVersion and
# binaryVersion ("compute_75 code running as sm_90") and this script requires that line.
# With compute_75 code the bf16 points of the fused methods are `skipped` (bf16 mma traps
# below sm_80) and their tests skip with a message.
set -euo pipefail
cd "$(dirname "$0")/.."

# The fused methods' GPU tests, kept to a few minutes: every flash2 backward and deterministic
# case, flash2's forward grid, GQA/padding/tiles, flash1 at N 17 and 1013 (d 64), every
# block-sparse pattern and the density-1 bitwise comparison with flash2. No test that runs the
# cuBLAS methods: cuBLAS ships SASS only, and CUDA_FORCE_PTX_JIT=1 makes its handle fail.
FILTER="${FLASHIO_PTX_FILTER:-GpuFeatures.FusedKernelArchIsReported:Grid/Flash2Backward.*:Flash2BackwardFeatures.GqaPaddingUnequalLengthsDropout:Grid/Flash2Deterministic.*:Flash2DeterministicFeatures.*:Forward/GpuMethod.*/flash2_*:GpuFeatures.EveryFlash2TileAndHeadDim:Grid/Flash1Gpu.*/n17_*:Grid/Flash1Gpu.*/n1013_d64_*:Patterns/BlocksparseFlash.*:BlocksparseFeatures.DensityOneIsBitwiseDenseFlash2}"

cmd="${1:-}"
shift || true
case "$cmd" in
  build)
    archs=("$@")
    [ ${#archs[@]} -eq 0 ] && archs=(75 80)
    for a in "${archs[@]}"; do
      cmake -S . -B "build-ptx$a" -G Ninja -DCMAKE_CUDA_ARCHITECTURES="$a-virtual" \
        ${FLASHIO_CMAKE_ARGS:-}
      ninja -C "build-ptx$a" -j "${FLASHIO_JOBS:-$(nproc)}" flashio_gpu_tests flashio
    done
    ;;
  pack)
    out="${1:-build-dist-ptx/ptx-bins.tar.xz}"
    stage="$(mktemp -d)"
    trap 'rm -rf "$stage"' EXIT
    for a in 75 80; do
      mkdir -p "$stage/ptx$a"
      for b in flashio_gpu_tests flashio; do
        src="build-ptx$a/$b"
        [ "$b" = flashio_gpu_tests ] && src="build-ptx$a/tests/$b"
        [ -f "$src" ] || { echo "ptx_paths.sh: $src missing (run: scripts/ptx_paths.sh build)" >&2; exit 1; }
        cp "$src" "$stage/ptx$a/$b"
        strip "$stage/ptx$a/$b"
      done
    done
    mkdir -p "$(dirname "$out")"
    tar -C "$stage" -cJf "$out" ptx75 ptx80
    ls -l "$out"
    ;;
  test)
    dir="${1:?usage: scripts/ptx_paths.sh test DIR [LOG]}"
    log="${2:-}"
    [ -n "$log" ] && mkdir -p "$log"
    export CUDA_FORCE_PTX_JIT=1                      # never the embedded SASS (there is none)
    export CUDA_CACHE_MAXSIZE="${CUDA_CACHE_MAXSIZE:-4294967296}"  # keep every JIT-compiled kernel
    status=0
    for a in ${FLASHIO_PTX_ARCHS:-75 80}; do
      bin="$dir/ptx$a/flashio_gpu_tests"
      [ -x "$bin" ] || { echo "ptx_paths.sh: $bin missing" >&2; exit 1; }
      echo "=== compute_$a PTX: $bin"
      if command -v cuobjdump > /dev/null; then
        if [ -n "$(cuobjdump --list-elf "$bin" 2> /dev/null)" ]; then
          echo "ptx_paths.sh: $bin carries SASS:" >&2
          cuobjdump --list-elf "$bin" >&2
          exit 1
        fi
        cuobjdump --list-ptx "$bin" | sort | uniq -c | head -5
      else
        echo "(no cuobjdump here: relying on CUDA_FORCE_PTX_JIT=1 and the reported ptxVersion)"
      fi
      out="$(mktemp)"
      set +e
      timeout "${FLASHIO_PTX_TIMEOUT:-540}" "$bin" --gtest_filter="$FILTER" 2>&1 | tee "$out"
      rc=${PIPESTATUS[0]}
      set -e
      [ -n "$log" ] && cp "$out" "$log/ptx$a.log"
      if ! grep -q "fused kernels: compute_$a code running as sm_" "$out"; then
        echo "ptx_paths.sh: the fused kernels did not report compute_$a code" >&2
        rc=1
      fi
      echo "=== compute_$a: exit $rc; $(grep -E '^\[  (PASSED|FAILED)  \]|^\[  SKIPPED \] [0-9]' "$out" | tr '\n' ' ')"
      rm -f "$out"
      [ "$rc" -eq 0 ] || status=1
    done
    exit $status
    ;;
  *)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 2
    ;;
esac
