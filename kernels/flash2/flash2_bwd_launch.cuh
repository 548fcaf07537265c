// Launch of the flash2 backward for one (element type, head dim): preprocess, main, convert.
#pragma once
#include <stdexcept>

#include "bench/cuda_check.h"
#include "kernels/flash2/flash2_bwd_kernel.cuh"

namespace flashio::kernels {

// The backward's tile per head dim: Bc = Br = 64, four warps (16 key rows each). d = 256
// would need 256 accumulator registers per thread for dK and dV: not compiled.
template <int kHeadDim>
struct Flash2BwdConfig {
  static constexpr bool kAvailable = kHeadDim <= 128;
  static constexpr int kBlockN = 64, kBlockM = 64, kWarps = 4;
};

// kSparse: the block-sparse main kernel (blocksparse_flash), same tile and launches.
template <typename T, int kHeadDim, bool kSparse = false>
void run_flash2_bwd(const Flash2BwdParams& p, cudaStream_t stream) {
  if constexpr (!Flash2BwdConfig<kHeadDim>::kAvailable) {
    throw std::invalid_argument("flash2: no backward kernel for this head dim");
  } else {
    using C = Flash2BwdConfig<kHeadDim>;
    using Tr = Flash2BwdTraits<T, kHeadDim, C::kBlockN, C::kBlockM, C::kWarps>;
    static_assert(Tr::kSmemBytes == flash2_bwd_smem_bytes(kHeadDim, C::kBlockN, C::kBlockM));
    constexpr int kThreads = 256;
    const int64_t rows = int64_t(p.batch) * p.heads * p.seqlen_q;
    constexpr int kChunks = kHeadDim / 8;
    constexpr int kLanes = kChunks <= 4 ? 4 : kChunks <= 8 ? 8 : kChunks <= 16 ? 16 : 32;
    flash2_bwd_preprocess_kernel<T, kHeadDim>
        <<<unsigned((rows * kLanes + kThreads - 1) / kThreads), kThreads, 0, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();
    FLASHIO_CUDA_CHECK(cudaMemsetAsync(p.dq_accum, 0, size_t(rows) * kHeadDim * sizeof(float), stream));

    const dim3 grid((p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN, p.kv_heads, p.batch);
    auto kernel = p.causal ? (p.dropout ? flash2_bwd_kernel<Tr, true, true, kSparse> : flash2_bwd_kernel<Tr, true, false, kSparse>)
                           : (p.dropout ? flash2_bwd_kernel<Tr, false, true, kSparse> : flash2_bwd_kernel<Tr, false, false, kSparse>);
    FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
    kernel<<<grid, Tr::kNThreads, Tr::kSmemBytes, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();

    const int64_t elements = rows * kHeadDim;
    flash2_bwd_convert_dq_kernel<T><<<unsigned((elements / 8 + kThreads - 1) / kThreads), kThreads, 0, stream>>>(p, elements);
    FLASHIO_CHECK_LAUNCH();
  }
}

}  // namespace flashio::kernels
