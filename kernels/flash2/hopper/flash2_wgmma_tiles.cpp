// The flash2 wgmma kernels' tiles as host code lists them, from their one table
// (flash2_fwd_wgmma_configs.h). Plain C++ and built in every configuration: whether this
// build has the kernels at all is flash2_wgmma_compiled()'s answer.
#include "kernels/flash2/flash2_params.h"
#include "kernels/flash2/hopper/flash2_fwd_wgmma_configs.h"

namespace flashio::kernels {

template <int D>
static int list_wgmma_tiles(bool dropout, KernelTile* out, int max) {
  int n = 0;
  for (const auto& s : Flash2FwdWgmmaConfigs<D>::list)
    if (n < max && (flash2_wgmma_has_dropout(s) || !dropout))
      out[n++] = kernel_tile(s, flash2_fwd_wgmma_smem_bytes(D, s.block_r, s.block_c), true);
  return n;
}

int flash2_fwd_wgmma_tiles(int head_dim, bool dropout, KernelTile* out, int max) {
  switch (head_dim) {
#define FLASH2_WGMMA_TILES_CASE(D) \
  case D:                          \
    return list_wgmma_tiles<D>(dropout, out, max);
    FLASH2_WGMMA_HEAD_DIMS(FLASH2_WGMMA_TILES_CASE)
    default:
      return 0;
  }
}

bool flash2_bwd_wgmma_tile(int head_dim, KernelTile* out) {
  switch (head_dim) {
#define FLASH2_WGMMA_BWD_TILE_CASE(D)                                                     \
  case D:                                                                                 \
    *out = kernel_tile(kFlash2BwdWgmmaTile, flash2_bwd_wgmma_smem_bytes(D), true); \
    return true;
    FLASH2_WGMMA_HEAD_DIMS(FLASH2_WGMMA_BWD_TILE_CASE)
    default:
      return false;
  }
}

}  // namespace flashio::kernels
