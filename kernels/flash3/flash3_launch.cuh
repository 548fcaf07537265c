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

template <typename Tr, bool kCausal, bool kPingPong, bool kOverlap, bool kSpecialised = true>
void launch_flash3_fwd_kernel(const Flash3FwdArgs& args, int sm_count, cudaStream_t stream) {
  auto kernel = flash3_fwd_kernel<Tr, kCausal, kPingPong, kOverlap, kSpecialised>;
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  const int grid = std::max(1, std::min(args.num_items, sm_count));  // persistent: one block per SM
  kernel<<<grid, kFlash3FwdThreads<Tr, kSpecialised>, Tr::kSmemBytes, stream>>>(args);
  FLASHIO_CHECK_LAUNCH();
}

// The warp-specialised schedules: FlashAttention-3's, and its ablations without ping-pong or
// without the intra-warpgroup overlap.
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

// kSpecialised: `schedule` among the warp-specialised ones; otherwise the ablation without
// warp specialisation (FlashAttention-3's schedule with the loads issued by a consumer thread).
template <typename T, int kHeadDim, bool kSpecialised, size_t... I>
void run_flash3_fwd_impl(const Flash3FwdArgs& args, const KernelTile& tile, Flash3Schedule schedule, int sm_count,
                         cudaStream_t stream, std::index_sequence<I...>) {
  bool launched = false;
  auto try_one = [&](auto index) {
    constexpr TileShape s = Flash3FwdConfigs<kHeadDim>::list[decltype(index)::value];
    using Tr = Flash3FwdTraits<T, kHeadDim, s.block_r, s.block_c, s.stages>;
    if (launched || s.block_r != tile.block_r || s.block_c != tile.block_c || s.stages != tile.stages) return;
    if constexpr (kSpecialised) {
      if (args.p.causal) {
        launch_flash3_fwd_schedule<Tr, true>(args, schedule, sm_count, stream);
      } else {
        launch_flash3_fwd_schedule<Tr, false>(args, schedule, sm_count, stream);
      }
    } else if (args.p.causal) {
      launch_flash3_fwd_kernel<Tr, true, true, true, false>(args, sm_count, stream);
    } else {
      launch_flash3_fwd_kernel<Tr, false, true, true, false>(args, sm_count, stream);
    }
    launched = true;
  };
  (try_one(std::integral_constant<size_t, I>{}), ...);
  if (!launched) throw std::invalid_argument("flash3: tile configuration not compiled");
}

template <typename T, int kHeadDim, bool kSpecialised>
void run_flash3_fwd_tiles(const Flash3FwdArgs& args, const KernelTile& tile, Flash3Schedule schedule, int sm_count,
                          cudaStream_t stream) {
  constexpr size_t n = sizeof(Flash3FwdConfigs<kHeadDim>::list) / sizeof(TileShape);
  run_flash3_fwd_impl<T, kHeadDim, kSpecialised>(args, tile, schedule, sm_count, stream, std::make_index_sequence<n>{});
}

// The ablation without warp specialisation, defined in a translation unit of its own
// (flash3_unspecialised_instantiate.cu.in, head dims with ablations only): compiled beside the
// other kernels, its inline PTX would renumber their labels, and ptxas then emits different SASS
// for the same PTX — the committed flash3 results describe those kernels byte for byte.
template <typename T, int kHeadDim>
void run_flash3_fwd_unspecialised(const Flash3FwdArgs& args, const KernelTile& tile, int sm_count, cudaStream_t stream);

template <typename T, int kHeadDim>
void run_flash3_fwd(const Flash3FwdArgs& args, const KernelTile& tile, Flash3Schedule schedule, int sm_count,
                    cudaStream_t stream) {
  if constexpr (flash3_has_ablations(kHeadDim)) {
    if (schedule == Flash3Schedule::NoWarpSpecialisation)
      return run_flash3_fwd_unspecialised<T, kHeadDim>(args, tile, sm_count, stream);
  }
  run_flash3_fwd_tiles<T, kHeadDim, true>(args, tile, schedule, sm_count, stream);
}

}  // namespace flashio::kernels
