// Mask policies of the fused kernels: which K/V tiles a Q tile visits (the trip count) and
// which scores of a visited tile are hidden (apply: −inf before the row max). Plain types,
// host- and device-callable (tests/test_online_softmax.cpp checks them on the CPU); a kernel
// picks one at compile time (SequenceMask<kCausal>, TileListMask<…> for block-sparse lists).
//
//   KeyPaddingMask  key j exists iff j < nk, nk = the batch's key length (key padding) or Nk.
//                   "No mask" is this policy with nk = Nk: only the last tile's tail is hidden
//                   (a run-time value, not a type: a type of its own would double the
//                   instantiations for a mask that touches one tile per row).
//   CausalMask      key padding and, top-left aligned, key j visible to query i iff j ≤ i:
//                   Q tile rows [row0, row_end) visit the K/V tiles below min(nk, row_end).
//   TileListMask<M> M's visibility, but only the K/V tiles of a list (block-sparse, FlashAttention
//                   Algorithm 5): Q tile i visits sparse_idx[sparse_ptr[i] .. sparse_ptr[i+1])
//                   (increasing), cut at M's trip count; zero tiles are neither loaded nor computed.
//
// Visiting order: last-to-first (KvTileRange / KvTileList), so that the only tiles needing
// apply (the diagonal and the sequence tail) come first. apply runs only where `partial` says a
// block has a hidden score; elsewhere the scores are left alone.
//
// Fragment geometry (online_softmax.h): element (j, e) of a fragment lies at row
// row + kRowStep·[e ≥ 2] and column col0 + kColStep·j + col_lane + (e & 1). The GPU's C
// fragments: kRowStep = kColStep = 8, row = the m16 tile's first row + g, col0 = the tile's
// first key, col_lane = 2t.
#pragma once
#include <type_traits>

#include "kernels/common/host_device.h"
#include "kernels/common/online_softmax.h"

namespace flashio::kernels {

// min(a, b): the GPU's integer min instruction on the device (as the kernels' own min(); a
// ternary can stay a compare and a select there), a plain comparison on the host.
FLASHIO_HOST_DEVICE int min_int(int a, int b) {
#if defined(__CUDA_ARCH__)
  return min(a, b);
#else
  return a < b ? a : b;
#endif
}

// Tiles of `block` keys covering keys [0, key_end): ⌈key_end / block⌉, 0 for no key.
FLASHIO_HOST_DEVICE int kv_tile_count(int key_end, int block) {
  return key_end > 0 ? (key_end + block - 1) / block : 0;
}

// Dense visiting order: tiles count−1, …, 1, 0.
struct KvTileRange {
  int count;  // the trip count
  FLASHIO_HOST_DEVICE int operator()(int it) const { return count - 1 - it; }
};

// Listed visiting order: tiles[count−1], …, tiles[0] (tiles increasing).
struct KvTileList {
  const int* tiles;
  int count;  // the trip count
  FLASHIO_HOST_DEVICE int operator()(int it) const { return tiles[count - 1 - it]; }
};

// Sets the hidden scores of fragment s to −inf (geometry in the header comment).
template <int kRowStep, int kColStep, class Mask, class S>
FLASHIO_HOST_DEVICE void hide_scores(const Mask& mask, S& s, int row, int col0, int col_lane) {
  FLASHIO_UNROLL
  for (int j = 0; j < FragmentTiles<S>::value; ++j) FLASHIO_UNROLL
  for (int e = 0; e < 4; ++e)
    if (mask.hidden(row + (e >= 2 ? kRowStep : 0), col0 + j * kColStep + col_lane + (e & 1))) frag(s, j, e) = -INFINITY;
}

// The "mask" step of the mma.sync kernels' loops for one visited K/V tile (KeyPaddingMask::tile,
// CausalMask::tile): nothing unless the block of rows from row_first × keys [col0, col0 + cols)
// hides a score (`partial`); then the hidden scores of the lane's fragments s become −inf. s holds
// the C fragments of kMTiles m16 tiles, float[kMTiles][kTiles][4]: element (mt, j, e) lies at row
// row_first + 16·mt + g + 8·[e ≥ 2] and key col0 + 8j + 2t + (e & 1) (g = lane / 4, t = lane % 4).
// Written out with the tests in the branch conditions and the lane's offsets g, 2t added inside
// the branch, as the kernels had it: the same tests through partial()/hidden() calls (bool
// results), or the offsets added before the branch, reached ptxas as the same operations in
// another order or polarity, and it allocated the loops' registers differently (kernels/NOTES.md).
template <bool kCausal, int kMTiles, int kTiles>
FLASHIO_HOST_DEVICE void sequence_mask_tile(int nk, float (&s)[kMTiles][kTiles][4], int row_first, int col0, int cols,
                                            int g, int t) {
  if (col0 + cols > nk || (kCausal && col0 + cols - 1 > row_first)) {
    FLASHIO_UNROLL
    for (int mt = 0; mt < kMTiles; ++mt) FLASHIO_UNROLL
    for (int j = 0; j < kTiles; ++j) FLASHIO_UNROLL
    for (int e = 0; e < 4; ++e) {
      const int row = row_first + mt * 16 + g + (e >= 2 ? 8 : 0);
      const int col = col0 + j * 8 + 2 * t + (e & 1);
      if (col >= nk || (kCausal && col > row)) s[mt][j][e] = -INFINITY;
    }
  }
}

// The same for one m16 tile in a wgmma accumulator's layout, float[4·kTiles] (element (j, e) at
// 4j + e).
template <bool kCausal, int kN>
FLASHIO_HOST_DEVICE void sequence_mask_tile(int nk, float (&s)[kN], int row_first, int col0, int cols, int g, int t) {
  if (col0 + cols > nk || (kCausal && col0 + cols - 1 > row_first)) {
    FLASHIO_UNROLL
    for (int j = 0; j < kN / 4; ++j) FLASHIO_UNROLL
    for (int e = 0; e < 4; ++e) {
      const int row = row_first + g + (e >= 2 ? 8 : 0);
      const int col = col0 + j * 8 + 2 * t + (e & 1);
      if (col >= nk || (kCausal && col > row)) s[4 * j + e] = -INFINITY;
    }
  }
}

struct KeyPaddingMask {
  int nk;  // keys [0, nk) exist

  FLASHIO_HOST_DEVICE bool hidden(int /*row*/, int col) const { return col >= nk; }
  // Does the block of rows from row_first × keys [col0, col0 + cols) hide a score?
  FLASHIO_HOST_DEVICE bool partial(int /*row_first*/, int col0, int cols) const { return col0 + cols > nk; }
  template <class S>
  FLASHIO_HOST_DEVICE void tile(S& s, int row_first, int col0, int cols, int g, int t) const {
    sequence_mask_tile<false>(nk, s, row_first, col0, cols, g, t);
  }
  template <int kRowStep = 8, int kColStep = 8, class S>
  FLASHIO_HOST_DEVICE void apply(S& s, int row, int col0, int col_lane) const {
    hide_scores<kRowStep, kColStep>(*this, s, row, col0, col_lane);
  }
  // Trip count and order of Q tile m_block, rows [.., row_end), over tiles of block_n keys.
  FLASHIO_HOST_DEVICE KvTileRange kv_tiles(int /*m_block*/, int /*row_end*/, int block_n) const {
    return {kv_tile_count(nk, block_n)};
  }
  // Loops the other way round (flash1: K/V tiles outside, Q tiles inside): the first Q tile of
  // block_m rows that key col0 is visible to, and the last of n_blocks K/V tiles visible to a Q
  // tile ending at row_end.
  FLASHIO_HOST_DEVICE int first_q_tile(int /*col0*/, int /*block_m*/, int /*m_blocks*/) const { return 0; }
  FLASHIO_HOST_DEVICE int last_kv_tile(int /*row_end*/, int /*block_n*/, int n_blocks) const { return n_blocks - 1; }
};

struct CausalMask {
  int nk;  // keys [0, nk) exist

  FLASHIO_HOST_DEVICE bool hidden(int row, int col) const { return col >= nk || col > row; }
  FLASHIO_HOST_DEVICE bool partial(int row_first, int col0, int cols) const {
    return col0 + cols > nk || col0 + cols - 1 > row_first;
  }
  template <class S>
  FLASHIO_HOST_DEVICE void tile(S& s, int row_first, int col0, int cols, int g, int t) const {
    sequence_mask_tile<true>(nk, s, row_first, col0, cols, g, t);
  }
  template <int kRowStep = 8, int kColStep = 8, class S>
  FLASHIO_HOST_DEVICE void apply(S& s, int row, int col0, int col_lane) const {
    hide_scores<kRowStep, kColStep>(*this, s, row, col0, col_lane);
  }
  FLASHIO_HOST_DEVICE KvTileRange kv_tiles(int /*m_block*/, int row_end, int block_n) const {
    return {kv_tile_count(min_int(nk, row_end), block_n)};  // keys up to the tile's last row
  }
  FLASHIO_HOST_DEVICE int first_q_tile(int col0, int block_m, int m_blocks) const {
    return min_int(col0 / block_m, m_blocks);  // tiles before it end above the diagonal
  }
  FLASHIO_HOST_DEVICE int last_kv_tile(int row_end, int block_n, int n_blocks) const {
    return min_int(n_blocks - 1, (row_end - 1) / block_n);
  }
};

template <bool kCausal>
using SequenceMask = std::conditional_t<kCausal, CausalMask, KeyPaddingMask>;

template <class Mask>
struct TileListMask : Mask {
  const int* sparse_ptr;  // [⌈Nq/Br⌉ + 1]
  const int* sparse_idx;  // [non-zero tiles], increasing per Q tile

  FLASHIO_HOST_DEVICE KvTileList kv_tiles(int m_block, int row_end, int block_n) const {
    const int n_blocks = Mask::kv_tiles(m_block, row_end, block_n).count;
    const int begin = sparse_ptr[m_block];
    int end = sparse_ptr[m_block + 1];
    while (end > begin && sparse_idx[end - 1] >= n_blocks) --end;  // past the causal / padding end
    return {sparse_idx + begin, end - begin};
  }
};

}  // namespace flashio::kernels
