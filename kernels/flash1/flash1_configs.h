// The compiled flash1 forward tiles per head dim. Br = 16 rows per warp × warps; Bc spans
// what Figure 2 (middle) of the FlashAttention paper sweeps. The default is chosen at run
// time from Algorithm 1's rule (Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), M = shared memory per
// block in elements), rounded down to a compiled tile that fits (kernels/flash1/flash1_method.cpp).
#pragma once
#include "kernels/flash2/flash2_bwd_config.h"
#include "kernels/flash2/flash2_fwd_configs.h"

// The head dims flash1 is compiled for: the one list that CMake's instantiations
// (kernels/flash1/CMakeLists.txt reads this line), the dispatch and the method's info() expand.
#define FLASH1_HEAD_DIMS(X) X(32) X(64) X(96) X(128)

namespace flashio::kernels {

// K_j and V_j resident (one stage each), Q_i double-buffered; rows padded by 8 elements.
constexpr int flash1_fwd_smem_bytes(int head_dim, Flash2TileSpec t) {
  return (2 * t.block_n + 2 * t.block_m) * (head_dim + 8) * 2;
}

// The backward runs flash2's first backward tile (flash2_bwd_config.h) plus two stages of O.
constexpr int flash1_bwd_smem_bytes(int head_dim, int block_n, int block_m, int warps) {
  return flash2_bwd_smem_bytes(head_dim, block_n, block_m, warps) + 2 * block_m * (head_dim + 8) * 2;
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
