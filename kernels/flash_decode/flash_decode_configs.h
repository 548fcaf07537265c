// flash_decode's shapes, written once: the head dims it is compiled for, its tile (16 query rows
// × 64 keys, four warps of 16 keys each), the K/V pipeline depth per head dim, its shared memory,
// and the split-KV choice. Plain C++: read by the kernels' instantiations, the method's
// description, its plan and the IO model (analysis/models/flash_decode.cpp) alike.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "bench/core/host_device.h"
#include "bench/core/problem.h"
#include "bench/core/smem.h"

// The head dims flash_decode is compiled for: the one list CMake's instantiations
// (kernels/flash_decode/CMakeLists.txt reads this line), the dispatch and info() expand.
#define FLASH_DECODE_HEAD_DIMS(X) X(64) X(128) X(256)

namespace flashio::kernels {

// The tile, the same for every head dim (a page must hold whole K/V tiles, and the page sizes
// flashio accepts are fixed before a method is chosen: bench/core/problem.h kKvPageMultiple).
inline constexpr int kDecodeBlockM = 16;  // query rows per thread block: one m16 tile of (query head, query) rows
inline constexpr int kDecodeBlockN = 64;  // keys per K/V tile
inline constexpr int kDecodeWarps = 4;    // each warp streams its own 16 keys of every tile
inline constexpr int kDecodeWarpKeys = kDecodeBlockN / kDecodeWarps;
inline constexpr int kDecodeMaxQueries = 16;   // Nq per sequence: decoding, and speculative decoding's few tokens
inline constexpr int kDecodeMinTilesPerSplit = 4;  // a split streams at least 256 keys (where there are that many)
inline constexpr int kDecodeMaxSplits = 128;
static_assert(kKvPageMultiple % kDecodeBlockN == 0, "a page holds whole K/V tiles: no tile straddles two pages");
static_assert(kDecodeWarpKeys == 16, "a warp's keys are one k16 step of P·V and two n8 tiles of S");

// K/V stages in flight per warp (cp.async multi-buffering), per head dim. d = 128: four stages,
// one thread block per SM (143 KiB): on the H100 faster than three stages with two blocks per SM
// (batch 32 / 32k: 1389 against 1437 µs) and as fast as five, which is slower paged
// (kernels/flash_decode/NOTES.md); d = 64: four stages, three blocks per SM; d = 256: two stages,
// one block.
constexpr int flash_decode_stages(int head_dim) { return head_dim <= 128 ? 4 : 2; }

// Shared memory of one thread block: the Q tile and `stages` K and V tiles of 64 keys, rows padded
// by 8 elements (16 bytes) so that ldmatrix's eight row addresses hit distinct banks.
constexpr int flash_decode_smem_bytes(int head_dim) {
  return (kDecodeBlockM + 2 * flash_decode_stages(head_dim) * kDecodeBlockN) * (head_dim + 8) * 2;
}

// How a problem's K/V range is split across thread blocks (a packed varlen decode: tiles and
// splits are the longest sequence's, the grid's; each sequence runs decode_sequence_splits).
struct DecodeSplit {
  int row_tiles = 1;        // ⌈(H/Hkv)·Nq / 16⌉ thread blocks per (batch, K/V head) and split
  int tiles = 0;            // K/V tiles of 64 keys the rows see (⌈Nk/64⌉; causal: ⌈min(Nk, Nq)/64⌉)
  int splits = 1;           // thread blocks along the keys, each writing a partial O and L
  int tiles_per_split = 0;  // the last split may have fewer
  int blocks_per_sm = 1;    // resident thread blocks per SM (shared memory bound)
  int64_t blocks() const { return int64_t(splits) * row_tiles; }  // per (batch, K/V head)
};

// K/V tiles of 64 keys that the rows of a sequence with `keys` keys see (causal: top-left, the
// first Nq keys at most).
FLASHIO_HOST_DEVICE constexpr int decode_tiles(int64_t keys, int64_t seqlen_q, bool causal) {
  return int(((causal && seqlen_q < keys ? seqlen_q : keys) + kDecodeBlockN - 1) / kDecodeBlockN);
}

// Varlen decode (Problem::key_varlen): the splits of a sequence whose rows see `tiles` tiles, at
// `tiles_per_split` each: ⌈tiles / tiles_per_split⌉, and 1 for a sequence with no key (its one
// split writes O = 0 and L = −inf). The grid's splits past it do nothing.
FLASHIO_HOST_DEVICE constexpr int decode_sequence_splits(int tiles, int tiles_per_split) {
  return tiles <= tiles_per_split ? 1 : (tiles + tiles_per_split - 1) / tiles_per_split;
}

// The split count: the smallest whose grid fills the GPU's resident-block slots (SMs × blocks per
// SM) in waves at least 95 % as evenly as the best count does, each split streaming at least
// kDecodeMinTilesPerSplit tiles (so a short cache is not split into tiles' worth of partials).
// Then the tiles are dealt evenly and the split count is recomputed so that no split is empty.
// `forced` > 0 asks for that many splits (clamped to [1, tiles]).
// Packed varlen decode (Problem::key_varlen): the same rule over the longest sequence's tiles, with the
// grid's real blocks counted — Σ_b decode_sequence_splits(tiles_b, ⌈tiles / n⌉) per (K/V head,
// row tile) for n splits of the longest, not B·n — since the blocks past a sequence's splits end
// at once: the short sequences are not split, the long ones as far as the slots want.
inline DecodeSplit flash_decode_split(const Problem& p, int sm_count, int64_t smem_per_sm, int forced = 0) {
  DecodeSplit s;
  const int64_t group_rows = p.heads / p.kvh() * p.seqlen_q;
  s.row_tiles = int((group_rows + kDecodeBlockM - 1) / kDecodeBlockM);
  s.tiles = decode_tiles(p.nk(), p.seqlen_q, p.causal);
  const int64_t per_block = flash_decode_smem_bytes(int(p.head_dim)) + kSmemReservedPerBlock;
  s.blocks_per_sm = int(std::clamp<int64_t>(smem_per_sm / per_block, 1, 16));
  const int64_t base = p.kvh() * s.row_tiles;
  const int64_t slots = int64_t(std::max(sm_count, 1)) * s.blocks_per_sm;
  auto blocks = [&](int n) {  // the grid's blocks that run, with n splits of the longest sequence
    if (!(p.packed() && p.key_varlen())) return p.batch * base * n;  // the padded twin runs every split
    const int per_split = (s.tiles + n - 1) / n;
    int64_t sum = 0;
    for (int32_t len : p.seq_lengths) sum += decode_sequence_splits(decode_tiles(len, p.seqlen_q, p.causal), per_split);
    return sum * base;
  };
  int want = 1;
  if (forced > 0) {
    want = std::min(forced, std::max(s.tiles, 1));
  } else {
    const int max_splits =
        std::max(1, std::min(kDecodeMaxSplits, s.tiles / kDecodeMinTilesPerSplit));
    auto efficiency = [&](int n) {
      const double waves = double(blocks(n)) / double(slots);
      return waves / std::ceil(waves);
    };
    double best = 0;
    for (int n = 1; n <= max_splits; ++n) best = std::max(best, efficiency(n));
    for (want = 1; want < max_splits && efficiency(want) < 0.95 * best; ++want) {
    }
  }
  s.tiles_per_split = s.tiles > 0 ? (s.tiles + want - 1) / want : 0;
  s.splits = s.tiles_per_split > 0 ? (s.tiles + s.tiles_per_split - 1) / s.tiles_per_split : 1;
  return s;
}

}  // namespace flashio::kernels
