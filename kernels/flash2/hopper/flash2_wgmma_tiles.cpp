// The flash2 wgmma kernels' tiles as host code lists them, from their one table
// (flash2_fwd_wgmma_configs.h). Plain C++ and built in every configuration: whether this
// build has the kernels at all is flash2_wgmma_compiled()'s answer.
#include "kernels/flash2/flash2_params.h"
#include "kernels/flash2/hopper/flash2_fwd_wgmma_configs.h"

namespace flashio::kernels {

template <int D>
static int list_wgmma_tiles(bool dropout, Flash2Tile* out, int max) {
  int n = 0;
  for (const auto& s : Flash2FwdWgmmaConfigs<D>::list)
    if (n < max && (s.dropout || !dropout))
      out[n++] = {s.block_m, s.block_n, s.block_m / 16, 2, flash2_fwd_wgmma_smem_bytes(D, s.block_m, s.block_n), true};
  return n;
}

int flash2_fwd_wgmma_tiles(int head_dim, bool dropout, Flash2Tile* out, int max) {
  switch (head_dim) {
    case 64:
      return list_wgmma_tiles<64>(dropout, out, max);
    case 128:
      return list_wgmma_tiles<128>(dropout, out, max);
    default:
      return 0;
  }
}

bool flash2_bwd_wgmma_tile(int head_dim, Flash2Tile* out) {
  if (head_dim != 64 && head_dim != 128) return false;
  *out = {64, 128, 8, 2, flash2_bwd_wgmma_smem_bytes(head_dim), true};  // Br × Bc, two warpgroups
  return true;
}

}  // namespace flashio::kernels
