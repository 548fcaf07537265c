// The compiled flash1 forward tiles per head dim. Br = 16 rows per warp × warps; Bc spans
// what Figure 2 (middle) of the FlashAttention paper sweeps. The default is chosen at run
// time from Algorithm 1's rule (Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), M = shared memory per
// block in elements), rounded down to a compiled tile that fits (kernels/flash1/flash1_method.cpp).
#pragma once
#include "kernels/flash2/flash2_fwd_configs.h"

namespace flashio::kernels {

// K_j and V_j resident (one stage each), Q_i double-buffered; rows padded by 8 elements.
constexpr int flash1_fwd_smem_bytes(int head_dim, Flash2TileSpec t) {
  return (2 * t.block_n + 2 * t.block_m) * (head_dim + 8) * 2;
}

template <int kHeadDim> struct Flash1FwdConfigs;
template <> struct Flash1FwdConfigs<32> {
  static constexpr Flash2TileSpec list[] = {{32, 256, 2, 2}, {32, 128, 2, 2}, {32, 64, 2, 2}, {32, 32, 2, 2}};
};
template <> struct Flash1FwdConfigs<64> {
  static constexpr Flash2TileSpec list[] = {{64, 256, 4, 2}, {64, 128, 4, 2}, {64, 64, 4, 2}, {64, 32, 4, 2}};
};
template <> struct Flash1FwdConfigs<96> {
  static constexpr Flash2TileSpec list[] = {{64, 128, 4, 2}, {64, 64, 4, 2}, {64, 32, 4, 2}};
};
template <> struct Flash1FwdConfigs<128> {
  static constexpr Flash2TileSpec list[] = {{128, 128, 8, 2}, {64, 128, 4, 2}, {64, 64, 4, 2}, {64, 32, 4, 2}};
};

}  // namespace flashio::kernels
