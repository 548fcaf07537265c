// Launch of the flash2 forward kernel for one (element type, head dim): picks the compiled
// tile configuration that matches `tile`, and the causal or non-causal kernel.
#pragma once
#include <stdexcept>
#include <utility>

#include "bench/cuda/cuda_check.h"
#include "kernels/flash2/flash2_fwd_kernel.cuh"

namespace flashio::kernels {

template <typename T, int kHeadDim, int kIndex, bool kSparse>
void launch_flash2_fwd_config(const FwdParams& p, cudaStream_t stream) {
  constexpr TileShape s = Flash2FwdConfigs<kHeadDim>::list[kIndex];
  using Tr = Flash2FwdTraits<T, kHeadDim, s.block_r, s.block_c, s.warps, s.stages>;
  const dim3 grid((p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM, p.heads, p.batch);
  auto kernel = p.causal ? (p.dropout ? flash2_fwd_kernel<Tr, true, true, kSparse> : flash2_fwd_kernel<Tr, true, false, kSparse>)
                         : (p.dropout ? flash2_fwd_kernel<Tr, false, true, kSparse> : flash2_fwd_kernel<Tr, false, false, kSparse>);
  if (p.cu_seqlens) {  // packed varlen: the grid of the longest sequence (seqlen_q), early exits
    if constexpr (kIndex == 0 && !kSparse) {
      if (p.dropout) throw std::invalid_argument("flash2: the varlen kernels have no dropout variant");
      kernel = p.causal ? flash2_fwd_kernel<Tr, true, false, false, true> : flash2_fwd_kernel<Tr, false, false, false, true>;
    } else {
      throw std::invalid_argument("flash2: the varlen kernels are compiled for the first tile of the list only");
    }
  }
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  kernel<<<grid, Tr::kNThreads, Tr::kSmemBytes, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
}

template <typename T, int kHeadDim, bool kSparse, size_t... I>
void run_flash2_fwd_impl(const FwdParams& p, const KernelTile& tile, cudaStream_t stream,
                         std::index_sequence<I...>) {
  bool launched = false;
  auto try_one = [&](auto index) {
    constexpr TileShape s = Flash2FwdConfigs<kHeadDim>::list[decltype(index)::value];
    if (!launched && s.block_r == tile.block_r && s.block_c == tile.block_c && s.warps == tile.warps &&
        s.stages == tile.stages) {
      launch_flash2_fwd_config<T, kHeadDim, decltype(index)::value, kSparse>(p, stream);
      launched = true;
    }
  };
  (try_one(std::integral_constant<size_t, I>{}), ...);
  if (!launched) throw std::invalid_argument("flash2: tile configuration not compiled");
}

// kSparse: the block-sparse kernels (blocksparse_flash) are compiled for the first (fastest)
// tile of the list only, to bound compile time; run_flash2_fwd<.., true> throws for another.
template <typename T, int kHeadDim, bool kSparse = false>
void run_flash2_fwd(const FwdParams& p, const KernelTile& tile, cudaStream_t stream) {
  constexpr size_t n = kSparse ? 1 : sizeof(Flash2FwdConfigs<kHeadDim>::list) / sizeof(TileShape);
  run_flash2_fwd_impl<T, kHeadDim, kSparse>(p, tile, stream, std::make_index_sequence<n>{});
}

}  // namespace flashio::kernels
