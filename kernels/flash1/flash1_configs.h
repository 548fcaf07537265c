// The compiled flash1 forward tiles per head dim. Br = 16 rows per warp × warps; Bc spans
// what Figure 2 (middle) of the FlashAttention paper sweeps. The default is chosen at run
// time from Algorithm 1's rule (Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), M = shared memory per
// block in elements), rounded down to a compiled tile that fits (flash1_fwd_pick below).
#pragma once
#include <optional>

#include "kernels/common/mma_bwd_configs.h"
#include "kernels/flash2/flash2_fwd_configs.h"

// The head dims flash1 is compiled for: the one list that CMake's instantiations
// (kernels/flash1/CMakeLists.txt reads this line), the dispatch and the method's info() expand.
#define FLASH1_HEAD_DIMS(X) X(32) X(64) X(96) X(128)

namespace flashio::kernels {

// K_j and V_j resident (one stage each), Q_i double-buffered; rows padded by 8 elements.
constexpr int flash1_fwd_smem_bytes(int head_dim, TileShape t) {
  return (2 * t.block_c + 2 * t.block_r) * (head_dim + 8) * 2;
}

template <int kHeadDim> struct Flash1FwdConfigs;
template <> struct Flash1FwdConfigs<32> {
  static constexpr TileShape list[] = {{32, 256, 2, 2}, {32, 128, 2, 2}, {32, 64, 2, 2}, {32, 32, 2, 2}};
};
template <> struct Flash1FwdConfigs<64> {
  static constexpr TileShape list[] = {{64, 256, 4, 2}, {64, 128, 4, 2}, {64, 64, 4, 2}, {64, 32, 4, 2}};
};
template <> struct Flash1FwdConfigs<96> {
  static constexpr TileShape list[] = {{64, 128, 4, 2}, {64, 64, 4, 2}, {64, 32, 4, 2}};
};
template <> struct Flash1FwdConfigs<128> {
  static constexpr TileShape list[] = {{128, 128, 8, 2}, {64, 128, 4, 2}, {64, 64, 4, 2}, {64, 32, 4, 2}};
};

template <int kHeadDim>
constexpr int flash1_fwd_config_count() {
  return int(sizeof(Flash1FwdConfigs<kHeadDim>::list) / sizeof(TileShape));
}

// The tile a GPU with `optin` bytes of shared memory per block runs when none is forced:
// Algorithm 1, line 1 — Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), M = `optin` in elements of
// `element_bytes` — rounded down to a compiled tile that fits (the largest Br, then the largest
// Bc); none if none does. The rule of the flash1 method (flash1_method.cpp's choose_tile, which
// applies it to the same list) and of `flashio predict` (analysis/models/flash1.cpp).
template <int kHeadDim>
constexpr std::optional<TileShape> flash1_fwd_pick(long long optin, int element_bytes = 2) {
  const long long m_elements = optin / element_bytes;
  const long long bc_rule = (m_elements + 4 * kHeadDim - 1) / (4 * kHeadDim);
  const long long br_rule = bc_rule < kHeadDim ? bc_rule : kHeadDim;
  int best = -1;
  for (int i = 0; i < flash1_fwd_config_count<kHeadDim>(); ++i) {
    const TileShape t = Flash1FwdConfigs<kHeadDim>::list[i];
    if (flash1_fwd_smem_bytes(kHeadDim, t) > optin || t.block_r > br_rule || t.block_c > bc_rule) continue;
    const TileShape* b = best < 0 ? nullptr : &Flash1FwdConfigs<kHeadDim>::list[best];
    if (!b || t.block_r > b->block_r || (t.block_r == b->block_r && t.block_c > b->block_c)) best = i;
  }
  if (best < 0) return std::nullopt;
  return Flash1FwdConfigs<kHeadDim>::list[best];
}

// The backward: flash2's first mma.sync tile (kernels/common/mma_bwd_configs.h, d <= 128), its shared memory
// plus the O tile stages (D is computed in the loop).
constexpr int flash1_bwd_smem_bytes(int head_dim, TileShape t) {
  return mma_bwd_smem_bytes(head_dim, t) + 2 * t.block_r * (head_dim + 8) * 2;
}

}  // namespace flashio::kernels
