// flash3's tiles as host code lists them, from its one table (flash3_configs.h). Plain C++,
// built in every configuration.
#include "kernels/flash3/flash3_params.h"

namespace flashio::kernels {

template <int D>
static int list_tiles(KernelTile* out, int max) {
  int n = 0;
  for (const auto& s : Flash3FwdConfigs<D>::list)
    if (n < max) out[n++] = kernel_tile(s, flash3_fwd_smem_bytes(D, s), true);
  return n;
}

bool flash3_fwd_tile_suits(int head_dim, int index, long long keys, bool causal) {
  switch (head_dim) {
#define FLASH3_SUITS_CASE(D) \
  case D:                    \
    return flash3_tile_suits<D>(index, keys, causal);
    FLASH3_HEAD_DIMS(FLASH3_SUITS_CASE)
#undef FLASH3_SUITS_CASE
    default:
      return false;
  }
}

int flash3_fwd_tiles(int head_dim, KernelTile* out, int max) {
  switch (head_dim) {
#define FLASH3_TILES_CASE(D) \
  case D:                    \
    return list_tiles<D>(out, max);
    FLASH3_HEAD_DIMS(FLASH3_TILES_CASE)
#undef FLASH3_TILES_CASE
    default:
      return 0;
  }
}

bool flash3_bwd_tile(int head_dim, KernelTile* out) {
  switch (head_dim) {
#define FLASH3_BWD_TILE_CASE(D)                                                         \
  case D:                                                                               \
    *out = kernel_tile(kFlash3BwdTile, flash3_bwd_smem_bytes(D, kFlash3BwdTile), true); \
    return true;
    FLASH3_BWD_HEAD_DIMS(FLASH3_BWD_TILE_CASE)
#undef FLASH3_BWD_TILE_CASE
    default:
      return false;
  }
}

}  // namespace flashio::kernels
