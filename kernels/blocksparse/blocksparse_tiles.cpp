// blocksparse_flash's tiles as host code lists them (blocksparse_configs.h). Plain C++.
#include "kernels/blocksparse/blocksparse_configs.h"
#include "kernels/blocksparse/blocksparse_params.h"

namespace flashio::kernels {

bool blocksparse_head_dim_compiled(int head_dim) {
  switch (head_dim) {
#define BLOCKSPARSE_COMPILED_CASE(D) \
  case D:                            \
    return true;
    BLOCKSPARSE_HEAD_DIMS(BLOCKSPARSE_COMPILED_CASE)
    default:
      return false;
  }
}

template <int D>
static bool first_tile(KernelTile* out) {
  const TileShape s = Flash2FwdConfigs<D>::list[0];  // run_flash2_fwd<.., true> compiles only this one
  *out = {s.block_r, s.block_c, s.warps, s.stages, flash2_fwd_smem_bytes(D, s)};
  return true;
}

bool blocksparse_fwd_tile(int head_dim, KernelTile* out) {
  switch (head_dim) {
#define BLOCKSPARSE_TILE_CASE(D) \
  case D:                        \
    return first_tile<D>(out);
    BLOCKSPARSE_HEAD_DIMS(BLOCKSPARSE_TILE_CASE)
    default:
      return false;
  }
}

}  // namespace flashio::kernels
