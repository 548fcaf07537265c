// Launch of the flash3 forward for one (element type, head dim): the compiled tile matching
// `tile`, the causal or non-causal kernel, the schedule. The tensor maps come made
// (flash3_dispatch.cu).
#pragma once
#include <algorithm>
#include <stdexcept>
#include <utility>

#include "bench/cuda/cuda_check.h"
#include "kernels/flash3/flash3_fwd_kernel.cuh"
#include "kernels/flash3/flash3_params.h"

namespace flashio::kernels {

template <typename Tr, bool kCausal, bool kPingPong, bool kOverlap>
void launch_flash3_fwd_kernel(const Flash3FwdArgs& args, int sm_count, cudaStream_t stream) {
  auto kernel = flash3_fwd_kernel<Tr, kCausal, kPingPong, kOverlap>;
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  const int grid = std::max(1, std::min(args.num_items, sm_count));  // persistent: one block per SM
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(args);
  FLASHIO_CHECK_LAUNCH();
}

template <typename Tr, bool kCausal>
void launch_flash3_fwd_schedule(const Flash3FwdArgs& args, Flash3Schedule schedule, int sm_count,
                                cudaStream_t stream) {
  if constexpr (flash3_has_ablations(Tr::kHeadDim)) {
    if (schedule == Flash3Schedule::NoPingPong)
      return launch_flash3_fwd_kernel<Tr, kCausal, false, true>(args, sm_count, stream);
    if (schedule == Flash3Schedule::NoOverlap)
      return launch_flash3_fwd_kernel<Tr, kCausal, true, false>(args, sm_count, stream);
  }
  if (schedule != Flash3Schedule::Full) throw std::invalid_argument("flash3: no ablation variants for this head dim");
  launch_flash3_fwd_kernel<Tr, kCausal, true, true>(args, sm_count, stream);
}

template <typename T, int kHeadDim, size_t... I>
void run_flash3_fwd_impl(const Flash3FwdArgs& args, const KernelTile& tile, Flash3Schedule schedule, int sm_count,
                         cudaStream_t stream, std::index_sequence<I...>) {
  bool launched = false;
  auto try_one = [&](auto index) {
    constexpr TileShape s = Flash3FwdConfigs<kHeadDim>::list[decltype(index)::value];
    using Tr = Flash3FwdTraits<T, kHeadDim, s.block_r, s.block_c, s.stages>;
    if (launched || s.block_r != tile.block_r || s.block_c != tile.block_c || s.stages != tile.stages) return;
    if (args.p.causal) {
      launch_flash3_fwd_schedule<Tr, true>(args, schedule, sm_count, stream);
    } else {
      launch_flash3_fwd_schedule<Tr, false>(args, schedule, sm_count, stream);
    }
    launched = true;
  };
  (try_one(std::integral_constant<size_t, I>{}), ...);
  if (!launched) throw std::invalid_argument("flash3: tile configuration not compiled");
}

template <typename T, int kHeadDim>
void run_flash3_fwd(const Flash3FwdArgs& args, const KernelTile& tile, Flash3Schedule schedule, int sm_count,
                    cudaStream_t stream) {
  constexpr size_t n = sizeof(Flash3FwdConfigs<kHeadDim>::list) / sizeof(TileShape);
  run_flash3_fwd_impl<T, kHeadDim>(args, tile, schedule, sm_count, stream, std::make_index_sequence<n>{});
}

}  // namespace flashio::kernels
