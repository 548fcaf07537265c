// flash1's tiles as host code lists them, from the one table (flash1_configs.h; the backward
// runs the mma.sync backward's first tile, kernels/common/mma_bwd_configs.h). Plain C++.
#include "kernels/flash1/flash1_configs.h"
#include "kernels/flash1/flash1_params.h"
#include "kernels/common/mma_bwd_configs.h"

namespace flashio::kernels {

template <int D>
static int list_tiles(KernelTile* out, int max) {
  int n = 0;
  for (const auto& s : Flash1FwdConfigs<D>::list)
    if (n < max) out[n++] = kernel_tile(s, flash1_fwd_smem_bytes(D, s));
  return n;
}

int flash1_fwd_tiles(int head_dim, KernelTile* out, int max) {
  switch (head_dim) {
#define FLASH1_TILES_CASE(D) \
  case D:                    \
    return list_tiles<D>(out, max);
    FLASH1_HEAD_DIMS(FLASH1_TILES_CASE)
    default:
      return 0;
  }
}

bool flash1_bwd_tile(int head_dim, KernelTile* out) {
  switch (head_dim) {
#define FLASH1_BWD_TILE_CASE(D)                                                                      \
  case D:                                                                                            \
    *out = kernel_tile(MmaBwdConfig<D>::kSpec, flash1_bwd_smem_bytes(D, MmaBwdConfig<D>::kSpec)); \
    return true;
    FLASH1_HEAD_DIMS(FLASH1_BWD_TILE_CASE)
    default:
      return false;
  }
}

bool flash1_fwd_tile_for(int head_dim, long long optin, int element_bytes, KernelTile* out) {
  switch (head_dim) {
#define FLASH1_PICK_CASE(D)                                                              \
  case D:                                                                                \
    if (const auto s = flash1_fwd_pick<D>(optin, element_bytes)) {                      \
      *out = kernel_tile(*s, flash1_fwd_smem_bytes(D, *s));                              \
      return true;                                                                       \
    }                                                                                    \
    return false;
    FLASH1_HEAD_DIMS(FLASH1_PICK_CASE)
    default: return false;
  }
}

}  // namespace flashio::kernels
