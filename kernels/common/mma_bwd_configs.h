// The tiles of the mma.sync backward (flash2_bwd_kernel.cuh's tile step, run by flash2, by
// block-sparse through kSparse and by flash1's backward), per head dim, and their shared memory.
// Plain C++: read by the kernels' instantiations and by host-side code (the methods' tile
// reports, `flashio predict`'s tiles in analysis/models/) alike.
#pragma once
#include "bench/core/tile_shape.h"

namespace flashio::kernels {

// The tiles compiled for the mma.sync backward, per head dim, preferred first: host code takes
// the first that fits the GPU's shared memory. Bc key rows per thread block, Br query rows per
// inner iteration, warps. Each warp computes 16 key rows of Sᵀ and dPᵀ, so Bc = 16 · warps / split,
// where `split` warps share those rows (mma_bwd_split):
//   d ≤ 128: Bc = Br = 64, four warps, split 1 — a warp's dK and dV (16 × d fp32 each) stay in
//            its registers (128 per thread at d = 128);
//   d = 256: 16 × 256 × 2 fp32 would be 256 registers per thread, so eight warps share the
//            work: two per 16-key slice of Sᵀ and dPᵀ, then 32 × 64 warp tiles of dK, dV and
//            dQ (Pᵀ goes through shared memory, see flash2_bwd_kernel.cuh): Bc = 64 with Br = 64
//            (222,208 bytes: H100, H200) or Br = 32 (145,920 bytes: an A100's 164 KiB). On an
//            H100, Br = 64 is 1.13–1.22× faster (kernels/flash2/NOTES.md).
// Two stages of Q_i and dO_i.
template <int kHeadDim>
struct MmaBwdConfigs {
  static constexpr TileShape list[1] = {{64, 64, 4, 2}};
};
template <>
struct MmaBwdConfigs<256> {
  static constexpr TileShape list[2] = {{64, 64, 8, 2}, {32, 64, 8, 2}};
};
template <int kHeadDim>
constexpr int mma_bwd_config_count() {
  return int(sizeof(MmaBwdConfigs<kHeadDim>::list) / sizeof(TileShape));
}

// The first (preferred) tile: the only one of flash1's backward and the block-sparse one.
template <int kHeadDim>
struct MmaBwdConfig {
  static constexpr TileShape kSpec = MmaBwdConfigs<kHeadDim>::list[0];
  static constexpr int kBlockN = kSpec.block_c, kBlockM = kSpec.block_r, kWarps = kSpec.warps;
};

// Warps sharing one 16-row slice of keys: 1, or 2 at d = 256.
constexpr int mma_bwd_split(int block_c, int warps) { return warps / (block_c / 16); }

// Shared memory of one thread block: K_j and V_j, two stages of Q_i and dO_i (rows padded by 8
// elements), dSᵀ (and Pᵀ when split), and two stages of L and D.
constexpr int mma_bwd_smem_bytes(int head_dim, TileShape t) {
  const int transposed = mma_bwd_split(t.block_c, t.warps) > 1 ? 2 : 1;  // dSᵀ, and Pᵀ when split
  return (2 * t.block_c * (head_dim + 8) + 4 * t.block_r * (head_dim + 8) + transposed * t.block_c * (t.block_r + 8)) * 2 +
         4 * t.block_r * 4;
}

// The tile a GPU with `optin` bytes of shared memory per block runs: the first of the list that
// fits, else the last (the smallest, which the caller then refuses with its bytes). The one rule
// of the flash2 method (flash2_bwd_tile_for) and of `flashio predict` (analysis/models/flash2.cpp).
template <int kHeadDim>
constexpr TileShape mma_bwd_pick(long long optin) {
  constexpr int n = mma_bwd_config_count<kHeadDim>();
  for (int i = 0; i < n - 1; ++i) {
    const TileShape s = MmaBwdConfigs<kHeadDim>::list[i];
    if (mma_bwd_smem_bytes(kHeadDim, s) <= optin) return s;
  }
  return MmaBwdConfigs<kHeadDim>::list[n - 1];
}

}  // namespace flashio::kernels
