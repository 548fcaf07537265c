// Host entry points of the flash3 kernels: whether this build has them, their tiles, the
// launch. Plain C++ so host code calls them without CUDA headers.
#pragma once
#include <cstdint>

#include "kernels/common/attention_params.h"
#include "kernels/common/kernel_tile.h"
#include "kernels/flash3/flash3_configs.h"

typedef struct CUstream_st* cudaStream_t;

namespace flashio::kernels {

// Whether this build has the flash3 kernels (CMAKE_CUDA_ARCHITECTURES names 90: they are built
// for sm_90a); they run on compute capability 9.0 only.
bool flash3_compiled();

// The forward's tiles for `head_dim`, in order of preference; the count written (0: no such head dim).
int flash3_fwd_tiles(int head_dim, KernelTile* out, int max);
// Whether the index-th of those suits a problem with `keys` keys (flash3_configs.h: its `from`).
bool flash3_fwd_tile_suits(int head_dim, int index, long long keys, bool causal);

// The schedule a launch runs: FlashAttention-3's, or one of its ablations (FA-3 Table 2).
enum class Flash3Schedule { Full, NoPingPong, NoOverlap, NoWarpSpecialisation };
// Whether `head_dim` has the ablation variants compiled (FLASH3_ABLATION_HEAD_DIMS).
constexpr bool flash3_has_ablations(int head_dim) {
#define FLASH3_ABLATION_IS(D) \
  if (head_dim == D) return true;
  FLASH3_ABLATION_HEAD_DIMS(FLASH3_ABLATION_IS)
#undef FLASH3_ABLATION_IS
  return false;
}

// The tensor maps (CUDA's CUtensorMap, 128 bytes each) of the last buffers a plan launched on:
// made again only when a buffer moves.
struct Flash3MapCache {
  const void* tensors[4] = {nullptr, nullptr, nullptr, nullptr};  // q, k, v, o
  alignas(128) unsigned char maps[4][128];
};

// The tile scheduler's state: two ints of device memory, zeroed once by flash3_schedule_init
// (synchronously, on `stream`); every launch leaves them zero again.
constexpr int kFlash3ScheduleInts = 2;
void flash3_schedule_init(int* schedule, cudaStream_t stream);

// Launches the persistent forward kernel with `tile` (one of flash3_fwd_tiles) on `sm_count`
// thread blocks at most, its scheduler state in `schedule`. Throws CudaError on a launch failure.
void flash3_fwd(const FwdParams& params, const KernelTile& tile, Flash3Schedule schedule, bool bf16, int sm_count,
                int* scheduler, Flash3MapCache& maps, cudaStream_t stream);

// ---- Backward (kernels/flash3/flash3_bwd_kernel.cuh) ----------------------------------------

// The backward's tile for `head_dim` (kFlash3BwdTile with its shared memory); false where there
// is no backward (FLASH3_BWD_HEAD_DIMS: d 64, 128).
bool flash3_bwd_tile(int head_dim, KernelTile* out);

// The tensor maps of the backward's buffers (q, dO, k, v, dk, dv), made again only when one moves.
struct Flash3BwdMapCache {
  static constexpr int kMaps = 6;
  const void* tensors[kMaps] = {};
  alignas(128) unsigned char maps[kMaps][128];
};

// The backward: flash2's preprocess (D = rowsum(dO∘O)) and the fp32 dQ accumulator's tiles
// zeroed, the warp-specialised main kernel (causal: its blocks in flash3_bwd_block's order for
// `sm_count` SMs), flash3's dQ conversion. `params` as flash2's backward takes it (d_sum and
// dq_accum: the plan's workspace, the accumulator flash3_dq_accum_floats long); not the
// deterministic mode. Throws CudaError on a launch failure.
void flash3_bwd(const BwdParams& params, const KernelTile& tile, bool bf16, int sm_count, Flash3BwdMapCache& maps,
                cudaStream_t stream);

}  // namespace flashio::kernels
