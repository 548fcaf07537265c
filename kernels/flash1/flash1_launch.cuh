// Launches of the flash1 forward (tile chosen among the compiled ones) and backward for one
// (element type, head dim).
#pragma once
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "bench/cuda/cuda_check.h"
#include "kernels/flash1/flash1_kernels.cuh"
#include "kernels/flash2/flash2_bwd_launch.cuh"

namespace flashio::kernels {

// Resident blocks per SM of `kernel` with `smem` bytes of dynamic shared memory.
template <typename Kernel>
int flash1_blocks_per_sm(Kernel kernel, int threads, int smem) {
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int blocks = 0;
  FLASHIO_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem));
  return blocks;
}

// occupancy_only: return the kernel's resident blocks per SM instead of launching it.
template <typename T, int kHeadDim, int kIndex>
int launch_flash1_fwd_config(const Flash1FwdParams& p, cudaStream_t stream, bool occupancy_only) {
  constexpr TileShape s = Flash1FwdConfigs<kHeadDim>::list[kIndex];
  using Tr = Flash2FwdTraits<T, kHeadDim, s.block_r, s.block_c, s.warps, s.stages>;
  constexpr int kSmem = flash1_fwd_smem_bytes(kHeadDim, s);
  static_assert(kSmem == (2 * Tr::kSmemKV + 2 * Tr::kSmemQ) * 2, "smem formula shared with the host");
  const bool causal = p.base.causal, dropout = p.base.dropout;
  auto kernel = causal ? (dropout ? flash1_fwd_kernel<Tr, true, true> : flash1_fwd_kernel<Tr, true, false>)
                       : (dropout ? flash1_fwd_kernel<Tr, false, true> : flash1_fwd_kernel<Tr, false, false>);
  if (occupancy_only) return flash1_blocks_per_sm(kernel, Tr::kNThreads, kSmem);
  if (p.splits < 1) throw std::invalid_argument("flash1: splits must be at least 1");
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  kernel<<<dim3(p.base.heads, p.base.batch, p.splits), Tr::kNThreads, kSmem, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
  return 0;
}

template <typename T, int kHeadDim, size_t... I>
int run_flash1_fwd_impl(const Flash1FwdParams& p, const KernelTile& tile, cudaStream_t stream, bool occupancy_only,
                        std::index_sequence<I...>) {
  bool found = false;
  int result = 0;
  auto try_one = [&](auto index) {
    constexpr TileShape s = Flash1FwdConfigs<kHeadDim>::list[decltype(index)::value];
    if (!found && s.block_r == tile.block_r && s.block_c == tile.block_c && s.warps == tile.warps) {
      result = launch_flash1_fwd_config<T, kHeadDim, decltype(index)::value>(p, stream, occupancy_only);
      found = true;
    }
  };
  (try_one(std::integral_constant<size_t, I>{}), ...);
  if (!found) throw std::invalid_argument("flash1: tile configuration not compiled");
  return result;
}

template <typename T, int kHeadDim>
int run_flash1_fwd(const Flash1FwdParams& p, const KernelTile& tile, cudaStream_t stream, bool occupancy_only) {
  constexpr size_t n = sizeof(Flash1FwdConfigs<kHeadDim>::list) / sizeof(TileShape);
  return run_flash1_fwd_impl<T, kHeadDim>(p, tile, stream, occupancy_only, std::make_index_sequence<n>{});
}

// The backward's shared memory: flash2's plus the O tile stages (D is computed in the loop);
// flash1_bwd_smem_bytes (flash1_configs.h) is the same from the tile sizes.
template <typename Tr>
constexpr int flash1_bwd_smem() {
  return Tr::kSmemBytes + 2 * Tr::kSmemQ * 2;
}

template <typename T, int kHeadDim>
int run_flash1_bwd(const Flash1BwdParams& p, cudaStream_t stream, bool occupancy_only) {
  using C = MmaBwdConfig<kHeadDim>;
  using Tr = Flash2BwdTraits<T, kHeadDim, C::kBlockN, C::kBlockM, C::kWarps>;
  static_assert(Tr::kSplit == 1, "flash1's backward keeps a warp's dK and dV whole (d up to 128)");
  constexpr int kSmem = flash1_bwd_smem<Tr>();
  const BwdParams& b = p.base;
  auto pick = [&](auto atomic) {
    constexpr bool kAtomic = decltype(atomic)::value;
    return b.causal ? (b.dropout ? flash1_bwd_kernel<Tr, true, true, kAtomic> : flash1_bwd_kernel<Tr, true, false, kAtomic>)
                    : (b.dropout ? flash1_bwd_kernel<Tr, false, true, kAtomic> : flash1_bwd_kernel<Tr, false, false, kAtomic>);
  };
  auto kernel = p.splits > 1 ? pick(std::true_type{}) : pick(std::false_type{});
  if (occupancy_only) return flash1_blocks_per_sm(kernel, Tr::kNThreads, kSmem);
  if (p.splits < 1) throw std::invalid_argument("flash1: splits must be at least 1");
  const int64_t rows = int64_t(b.batch) * b.heads * b.seqlen_q;
  FLASHIO_CUDA_CHECK(cudaMemsetAsync(b.dq_accum, 0, size_t(rows) * kHeadDim * sizeof(float), stream));  // line 4
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  kernel<<<dim3(b.heads, b.batch, p.splits), Tr::kNThreads, kSmem, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
  constexpr int kThreads = 256;
  const int64_t elements = rows * kHeadDim;
  flash2_bwd_convert_dq_kernel<T><<<unsigned((elements / 8 + kThreads - 1) / kThreads), kThreads, 0, stream>>>(b, elements);
  FLASHIO_CHECK_LAUNCH();
  return 0;
}

}  // namespace flashio::kernels
