// Launch of the flash2 backward for one (element type, head dim): preprocess, main, convert.
#pragma once
#include <stdexcept>
#include <utility>

#include "bench/cuda/cuda_check.h"
#include "kernels/flash2/flash2_bwd_kernel.cuh"

namespace flashio::kernels {

// The main kernel for the run-time masks: (causal, dropout) → template arguments.
template <typename Tr, bool kSparse, bool kDeterministic>
auto flash2_bwd_kernel_for(bool causal, bool dropout) {
  return causal ? (dropout ? flash2_bwd_kernel<Tr, true, true, kSparse, kDeterministic>
                           : flash2_bwd_kernel<Tr, true, false, kSparse, kDeterministic>)
                : (dropout ? flash2_bwd_kernel<Tr, false, true, kSparse, kDeterministic>
                           : flash2_bwd_kernel<Tr, false, false, kSparse, kDeterministic>);
}

// The launches around a backward main kernel (mma.sync and wgmma alike): before it,
// D = rowsum(dO∘O) and the fp32 dQ accumulator zeroed; after it, dQ = scale·accumulator in the
// element type.
constexpr int kBwdSideThreads = 256;
template <typename T, int kHeadDim>
void launch_flash2_bwd_preprocess(const BwdParams& p, cudaStream_t stream) {
  const int64_t rows = int64_t(p.batch) * p.heads * p.seqlen_q;
  constexpr int kChunks = kHeadDim / 8;
  constexpr int kLanes = kChunks <= 4 ? 4 : kChunks <= 8 ? 8 : kChunks <= 16 ? 16 : 32;
  flash2_bwd_preprocess_kernel<T, kHeadDim>
      <<<unsigned((rows * kLanes + kBwdSideThreads - 1) / kBwdSideThreads), kBwdSideThreads, 0, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
}
template <typename T, int kHeadDim>
void launch_flash2_bwd_prologue(const BwdParams& p, cudaStream_t stream) {
  launch_flash2_bwd_preprocess<T, kHeadDim>(p, stream);
  const int64_t rows = int64_t(p.batch) * p.heads * p.seqlen_q;
  FLASHIO_CUDA_CHECK(cudaMemsetAsync(p.dq_accum, 0, size_t(rows) * kHeadDim * sizeof(float), stream));
}
template <typename T, int kHeadDim>
void launch_flash2_bwd_epilogue(const BwdParams& p, cudaStream_t stream) {
  const int64_t elements = int64_t(p.batch) * p.heads * p.seqlen_q * kHeadDim;
  flash2_bwd_convert_dq_kernel<T>
      <<<unsigned((elements / 8 + kBwdSideThreads - 1) / kBwdSideThreads), kBwdSideThreads, 0, stream>>>(p, elements);
  FLASHIO_CHECK_LAUNCH();
}

// The main kernel for tile MmaBwdConfigs<kHeadDim>::list[kIndex], between the prologue and
// the epilogue.
template <typename T, int kHeadDim, int kIndex, bool kSparse>
void launch_flash2_bwd_config(const BwdParams& p, cudaStream_t stream) {
  constexpr TileShape s = MmaBwdConfigs<kHeadDim>::list[kIndex];
  using Tr = Flash2BwdTraits<T, kHeadDim, s.block_c, s.block_r, s.warps>;
  launch_flash2_bwd_prologue<T, kHeadDim>(p, stream);

  // n_block is blockIdx.x, the fastest-varying index: see the deterministic mode below.
  const dim3 grid((p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN, p.kv_heads, p.batch);
  auto kernel = flash2_bwd_kernel_for<Tr, kSparse, false>(p.causal, p.dropout);
  if (p.deterministic) {
    // Block (n, hk, b) waits only for block (n − 1, hk, b), one lower in linear block order
    // (n_block fastest). Thread blocks are dispatched in increasing linear order (what
    // FlashAttention's deterministic backward relies on too; CUDA does not promise it in
    // words), so when block n is resident, block n − 1 has been dispatched: it is resident or
    // done, never waiting behind block n for an SM. Block 0 never waits, and by induction on n
    // each block n − 1 reaches every (head, Q tile) that block n waits on (it visits the same
    // tiles, in the same order, and more): no deadlock, whatever the occupancy.
    if constexpr (kSparse) {
      throw std::invalid_argument("blocksparse_flash: no deterministic backward");
    } else {
      if (!p.dq_semaphore) throw std::invalid_argument("flash2: deterministic backward without dq_semaphore");
      const size_t semaphores = size_t(p.batch) * p.heads * ((p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM);
      FLASHIO_CUDA_CHECK(cudaMemsetAsync(p.dq_semaphore, 0, semaphores * sizeof(int), stream));
      kernel = flash2_bwd_kernel_for<Tr, false, true>(p.causal, p.dropout);
    }
  }
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  kernel<<<grid, Tr::kNThreads, Tr::kSmemBytes, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
  launch_flash2_bwd_epilogue<T, kHeadDim>(p, stream);
}

template <typename T, int kHeadDim, bool kSparse, size_t... I>
void run_flash2_bwd_impl(const BwdParams& p, const KernelTile& tile, cudaStream_t stream,
                         std::index_sequence<I...>) {
  bool launched = false;
  auto try_one = [&](auto index) {
    constexpr TileShape s = MmaBwdConfigs<kHeadDim>::list[decltype(index)::value];
    if (!launched && s.block_r == tile.block_r && s.block_c == tile.block_c && s.warps == tile.warps) {
      launch_flash2_bwd_config<T, kHeadDim, int(decltype(index)::value), kSparse>(p, stream);
      launched = true;
    }
  };
  (try_one(std::integral_constant<size_t, I>{}), ...);
  if (!launched) throw std::invalid_argument("flash2: backward tile configuration not compiled");
}

// The backward with tile `tile` (one of MmaBwdConfigs<kHeadDim>::list). kSparse: the
// block-sparse main kernel (blocksparse_flash), compiled for the list's first tile only; not with
// p.deterministic (the deterministic kernels are compiled for the dense case only).
template <typename T, int kHeadDim, bool kSparse = false>
void run_flash2_bwd(const BwdParams& p, const KernelTile& tile, cudaStream_t stream) {
  constexpr size_t n = kSparse ? 1 : size_t(mma_bwd_config_count<kHeadDim>());
  run_flash2_bwd_impl<T, kHeadDim, kSparse>(p, tile, stream, std::make_index_sequence<n>{});
}

}  // namespace flashio::kernels
