// The flash2 mma.sync kernels' tiles as host code lists them: read from the one table of each
// head dim (flash2_fwd_configs.h, kernels/common/mma_bwd_configs.h). Plain C++, so the method describes
// itself and `flashio predict` works in a build without CUDA.
#include "kernels/common/mma_bwd_configs.h"
#include "kernels/flash2/flash2_fwd_configs.h"
#include "kernels/flash2/flash2_params.h"

namespace flashio::kernels {

template <int D>
static int list_tiles(KernelTile* out, int max) {
  int n = 0;
  for (const auto& s : Flash2FwdConfigs<D>::list)
    if (n < max) out[n++] = kernel_tile(s, flash2_fwd_smem_bytes(D, s));
  return n;
}

int flash2_fwd_tiles(int head_dim, KernelTile* out, int max) {
  switch (head_dim) {
#define FLASH2_TILES_CASE(D) \
  case D:                    \
    return list_tiles<D>(out, max);
    FLASH2_HEAD_DIMS(FLASH2_TILES_CASE)
    default:
      return 0;
  }
}

template <int D>
static KernelTile bwd_tile_of(TileShape s) {
  return kernel_tile(s, mma_bwd_smem_bytes(D, s));
}

bool flash2_bwd_tile_for(int head_dim, long long smem_optin, KernelTile* out) {
  switch (head_dim) {
#define FLASH2_BWD_TILE_FOR_CASE(D)                        \
  case D:                                                  \
    *out = bwd_tile_of<D>(mma_bwd_pick<D>(smem_optin)); \
    return true;
    FLASH2_HEAD_DIMS(FLASH2_BWD_TILE_FOR_CASE)
    default:
      return false;
  }
}

bool flash2_bwd_tile(int head_dim, KernelTile* out) {
  switch (head_dim) {
#define FLASH2_BWD_TILE_CASE(D)                          \
  case D:                                                \
    *out = bwd_tile_of<D>(MmaBwdConfigs<D>::list[0]); \
    return true;
    FLASH2_HEAD_DIMS(FLASH2_BWD_TILE_CASE)
    default:
      return false;
  }
}

bool flash2_fwd_tile_for(int head_dim, long long optin, KernelTile* out) {
  switch (head_dim) {
#define FLASH2_PICK_CASE(D)                                                        \
  case D:                                                                          \
    if (const auto s = flash2_fwd_pick<D>(optin)) {                                \
      *out = kernel_tile(*s, flash2_fwd_smem_bytes(D, *s));                          \
      return true;                                                                 \
    }                                                                              \
    return false;
    FLASH2_HEAD_DIMS(FLASH2_PICK_CASE)
    default: return false;
  }
}

}  // namespace flashio::kernels
