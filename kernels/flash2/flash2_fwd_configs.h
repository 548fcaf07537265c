// The tile configurations compiled for the flash2 forward kernel, per head dim, fastest
// first (measured on an H100; see kernels/flash2/NOTES.md). Host code picks the first
// that fits the GPU's shared memory, or the one forced with --block-r/--block-c.
// Plain C++: read by the kernel's instantiations and by the host-side selection alike.
#pragma once
#include <optional>

#include "bench/core/tile_shape.h"

// The head dims flash2 is compiled for: the one list that CMake's instantiations
// (kernels/flash2/CMakeLists.txt reads this line), the dispatch, the method's info() and the
// analysis all expand.
#define FLASH2_HEAD_DIMS(X) X(32) X(64) X(96) X(128) X(256)

namespace flashio::kernels {

// Shared memory of one thread block: Q tile plus `stages` K and V tiles, rows padded by
// 8 elements (16 bytes) so that ldmatrix's eight row addresses hit distinct banks.
constexpr int flash2_fwd_smem_bytes(int head_dim, TileShape t) {
  return (t.block_r + 2 * t.stages * t.block_c) * (head_dim + 8) * 2;
}

template <int kHeadDim> struct Flash2FwdConfigs;
template <> struct Flash2FwdConfigs<32> {
  static constexpr TileShape list[] = {{128, 64, 4, 2}};
};
template <> struct Flash2FwdConfigs<64> {
  static constexpr TileShape list[] = {{128, 64, 4, 2}, {64, 64, 4, 2}};
};
template <> struct Flash2FwdConfigs<96> {
  static constexpr TileShape list[] = {{128, 64, 4, 2}};
};
template <> struct Flash2FwdConfigs<128> {
  static constexpr TileShape list[] = {{128, 64, 4, 2}, {128, 32, 4, 2}, {64, 64, 4, 2}};
};
template <> struct Flash2FwdConfigs<256> {
  static constexpr TileShape list[] = {{64, 32, 4, 2}};
};

template <int kHeadDim>
constexpr int flash2_fwd_config_count() {
  return int(sizeof(Flash2FwdConfigs<kHeadDim>::list) / sizeof(TileShape));
}

// The mma.sync tile a GPU with `optin` bytes of shared memory per block runs when none is
// forced: the first of the list (fastest first) that fits; none if none does. The rule the
// flash2 method's choose_tile applies to its mma.sync tiles (it walks them in this order, after
// the wgmma ones on Hopper), and `flashio predict`'s (analysis/models/flash2.cpp).
template <int kHeadDim>
constexpr std::optional<TileShape> flash2_fwd_pick(long long optin) {
  for (int i = 0; i < flash2_fwd_config_count<kHeadDim>(); ++i) {
    const TileShape s = Flash2FwdConfigs<kHeadDim>::list[i];
    if (flash2_fwd_smem_bytes(kHeadDim, s) <= optin) return s;
  }
  return std::nullopt;
}

}  // namespace flashio::kernels
