// Launch of the Hopper (wgmma) flash2 forward for one (element type, head dim): the compiled
// tile configuration matching `tile`, and the causal or non-causal kernel.
#pragma once
#include <stdexcept>
#include <utility>

#include "bench/cuda/cuda_check.h"
#include "kernels/flash2/flash2_bwd_launch.cuh"
#include "kernels/flash2/hopper/flash2_bwd_wgmma.cuh"
#include "kernels/flash2/hopper/flash2_fwd_wgmma.cuh"
#include "kernels/flash2/hopper/flash2_fwd_wgmma_configs.h"

namespace flashio::kernels {

template <typename T, int kHeadDim, int kIndex>
void launch_flash2_fwd_wgmma_config(const FwdParams& p, cudaStream_t stream) {
  constexpr TileShape s = Flash2FwdWgmmaConfigs<kHeadDim>::list[kIndex];
  using Tr = Flash2FwdWgmmaTraits<T, kHeadDim, s.block_r, s.block_c>;
  const dim3 grid((p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM, p.heads, p.batch);
  auto kernel = p.causal ? flash2_fwd_wgmma_kernel<Tr, true, false> : flash2_fwd_wgmma_kernel<Tr, false, false>;
  if (p.dropout) {
    if constexpr (flash2_wgmma_has_dropout(s)) {
      kernel = p.causal ? flash2_fwd_wgmma_kernel<Tr, true, true> : flash2_fwd_wgmma_kernel<Tr, false, true>;
    } else {
      throw std::invalid_argument("flash2: this wgmma tile has no dropout variant");
    }
  }
  if (p.cu_seqlens) {  // packed varlen: the grid of the longest sequence (seqlen_q), early exits
    if constexpr (kIndex == 0) {
      if (p.dropout) throw std::invalid_argument("flash2: the varlen kernels have no dropout variant");
      kernel = p.causal ? flash2_fwd_wgmma_kernel<Tr, true, false, true> : flash2_fwd_wgmma_kernel<Tr, false, false, true>;
    } else {
      throw std::invalid_argument("flash2: the varlen kernels are compiled for the first tile of the list only");
    }
  }
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  kernel<<<grid, Tr::kNThreads, Tr::kSmemBytes, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
}

template <typename T, int kHeadDim, size_t... I>
void run_flash2_fwd_wgmma_impl(const FwdParams& p, const KernelTile& tile, cudaStream_t stream,
                               std::index_sequence<I...>) {
  bool launched = false;
  auto try_one = [&](auto index) {
    constexpr TileShape s = Flash2FwdWgmmaConfigs<kHeadDim>::list[decltype(index)::value];
    if (!launched && s.block_r == tile.block_r && s.block_c == tile.block_c) {
      launch_flash2_fwd_wgmma_config<T, kHeadDim, decltype(index)::value>(p, stream);
      launched = true;
    }
  };
  (try_one(std::integral_constant<size_t, I>{}), ...);
  if (!launched) throw std::invalid_argument("flash2: wgmma tile configuration not compiled");
}

template <typename T, int kHeadDim>
void run_flash2_fwd_wgmma(const FwdParams& p, const KernelTile& tile, cudaStream_t stream) {
  constexpr size_t n = sizeof(Flash2FwdWgmmaConfigs<kHeadDim>::list) / sizeof(TileShape);
  run_flash2_fwd_wgmma_impl<T, kHeadDim>(p, tile, stream, std::make_index_sequence<n>{});
}

// The backward: flash2's prologue and epilogue launches (flash2_bwd_launch.cuh) around the
// wgmma main kernel.
template <typename T, int kHeadDim>
void run_flash2_bwd_wgmma(const BwdParams& p, cudaStream_t stream) {
  using Tr = Flash2BwdWgmmaTraits<T, kHeadDim>;
  launch_flash2_bwd_prologue<T, kHeadDim>(p, stream);

  const dim3 grid((p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN, p.kv_heads, p.batch);
  auto kernel = p.causal ? (p.dropout ? flash2_bwd_wgmma_kernel<Tr, true, true> : flash2_bwd_wgmma_kernel<Tr, true, false>)
                         : (p.dropout ? flash2_bwd_wgmma_kernel<Tr, false, true> : flash2_bwd_wgmma_kernel<Tr, false, false>);
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  kernel<<<grid, Tr::kNThreads, Tr::kSmemBytes, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
  launch_flash2_bwd_epilogue<T, kHeadDim>(p, stream);
}

}  // namespace flashio::kernels
