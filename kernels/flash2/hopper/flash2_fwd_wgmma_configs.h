// The tile configurations compiled for the Hopper (wgmma) flash2 kernels, per head dim, fastest
// first (H100 measurements: kernels/flash2/NOTES.md). Br is 64 rows per warpgroup (four warps),
// two stages of K/V. Plain C++: read by the instantiations and by the host-side tile list alike.
#pragma once
#include "bench/core/tile_shape.h"

// The head dims with wgmma kernels (forward and backward): the one list the tile lists and the
// dispatch expand.
#define FLASH2_WGMMA_HEAD_DIMS(X) X(64) X(128)

namespace flashio::kernels {

template <int kHeadDim> struct Flash2FwdWgmmaConfigs {
  static constexpr bool kAvailable = false;
  static constexpr TileShape list[] = {{0, 0, 0, 0}};
};
template <> struct Flash2FwdWgmmaConfigs<64> {
  static constexpr bool kAvailable = true;
  static constexpr TileShape list[] = {{192, 128, 12, 2}, {128, 128, 8, 2}};
};
template <> struct Flash2FwdWgmmaConfigs<128> {
  static constexpr bool kAvailable = true;
  static constexpr TileShape list[] = {{128, 128, 8, 2}, {128, 64, 8, 2}};
};

// Whether a tile has a dropout variant compiled: not with three warpgroups (Br = 192), which cap
// registers at 168 per thread, where the dropout variant spills (ptxas sm_90a).
constexpr bool flash2_wgmma_has_dropout(TileShape t) { return t.block_r <= 128; }

// The wgmma backward's one tile: Br = 64 queries, Bc = 128 keys, two warpgroups.
constexpr TileShape kFlash2BwdWgmmaTile = {64, 128, 8, 2};

}  // namespace flashio::kernels
