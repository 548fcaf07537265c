// Launch of the flash3 backward for one (element type, head dim): flash2's preprocess (D) and the
// dQ accumulator's tiles zeroed, the causal or non-causal main kernel of kFlash3BwdTile, flash3's
// dQ conversion (its accumulator's order: flash3_dq_layout.h). The tensor maps come made
// (flash3_dispatch.cu).
#pragma once
#include "bench/cuda/cuda_check.h"
#include "kernels/flash2/flash2_bwd_launch.cuh"
#include "kernels/flash3/flash3_bwd_kernel.cuh"

namespace flashio::kernels {

template <typename T, int kHeadDim>
using Flash3BwdTraitsOf =
    Flash3BwdTraits<T, kHeadDim, kFlash3BwdTile.block_r, kFlash3BwdTile.block_c, kFlash3BwdTile.stages>;

template <typename T, int kHeadDim>
void run_flash3_bwd(const Flash3BwdArgs& args, cudaStream_t stream) {
  using Tr = Flash3BwdTraitsOf<T, kHeadDim>;
  const BwdParams& p = args.p;
  launch_flash2_bwd_preprocess<T, kHeadDim>(p, stream);
  const size_t accum = size_t(flash3_dq_accum_floats(p.batch, p.heads, p.seqlen_q, kHeadDim));
  FLASHIO_CUDA_CHECK(cudaMemsetAsync(p.dq_accum, 0, accum * sizeof(float), stream));
  const dim3 grid((p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN, p.kv_heads, p.batch);
  auto kernel = p.causal ? flash3_bwd_kernel<Tr, true> : flash3_bwd_kernel<Tr, false>;
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(args);
  FLASHIO_CHECK_LAUNCH();
  const int64_t items = int64_t(p.batch) * p.heads * flash3_dq_tiles(p.seqlen_q) * (kFlash3DqTileRows / 2) *
                        (kHeadDim / 8);  // row pairs × 8-column chunks
  flash3_bwd_convert_dq_kernel<T, kHeadDim>
      <<<unsigned((items + kBwdSideThreads - 1) / kBwdSideThreads), kBwdSideThreads, 0, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
}

}  // namespace flashio::kernels
