// Dropout keep decisions for tensor-core accumulator fragments, each Philox call drawn once.
//
// The mask is the suite's (bench/core/philox.h): element (b, h, query i, key j) keeps iff
// the 16-bit value (j % 8) of Philox(i, j / 8) is at least the threshold — word (j % 8) / 2,
// low half for even j, high half for odd j — bit for bit the CPU reference's.
//
// Layout these helpers serve: the C fragments of mma.sync m16n8 (and of wgmma, whose per-warp
// accumulator has the same layout): lane (g = lane / 4, t = lane % 4) holds, in each n8 tile,
// rows g and g + 8 and columns 2t, 2t + 1; element e = 0 … 3 of a tile (acc[nt][e]) is
//   e = 0: (row g, column 2t)   e = 1: (row g, column 2t + 1)
//   e = 2: (row g + 8, column 2t)   e = 3: (row g + 8, column 2t + 1).
// A helper call covers two n8 tiles (k = 0, 1): eight elements per lane, 256 per warp, which
// need exactly 32 Philox calls: each lane draws one, compares its eight 16-bit values, and
// eight warp ballots (one per value position s = 0 … 7) hand every lane the bits it needs.
// A lane then picks one ballot (forward: two) by its lane index and reads its eight bits at
// fixed positions, so the consumer's element tests are compile-time bit tests:
//
//   dropout_keep_fwd   rows = queries (Philox rows), columns = keys (Philox columns), as S in
//                      a forward kernel. The four lanes of a quad need the four words of the
//                      same calls: quad lane t draws call (row g or g + 8, tile k) = (t & 1,
//                      t >> 1) and receives the halves 2t, 2t + 1 of its quad's four calls.
//   dropout_keep_bwd   transposed: rows = keys, columns = queries, as Sᵀ in the backward
//                      kernels. The eight lanes g = 0 … 7 with the same t hold the eight keys
//                      of one 8-column Philox group: lane g draws call (tile g >> 2, element
//                      g & 3) and receives value g of its column's eight calls.
//
// Cost per lane and eight elements: one Philox4x32-10, eight compares, eight ballots, a
// select among the ballots and a shift (the previous 32-bit mask drew one call per four
// elements and exchanged words by shuffles). Every lane of the warp must call a helper
// together (ballots), with warp-uniform control flow.
#pragma once
#include <cstdint>

#include "bench/core/philox.h"

namespace flashio::kernels {

constexpr unsigned kDropoutFullWarp = 0xffffffffu;

// Keep bits of the eight elements (tile k = 0, 1; element e = 0 … 3) a lane holds in two n8
// tiles. With constant k and e (unrolled loops), keep(k, e) is one bit test.
template <bool kTransposed>
struct FragmentKeep;

// Forward: bits[e & 1] holds element (k, e) in the top bit of byte 2k + (e >> 1), so that
// pair_mask can replicate it over a 16-bit half with one byte permute.
template <>
struct FragmentKeep<false> {
  uint32_t bits[2];
  __device__ __forceinline__ bool operator()(int k, int e) const {
    return (bits[e & 1] >> (8 * (2 * k + (e >> 1)) + 7)) & 1u;
  }
  // The AND mask of tile k's row-r pair (elements 2r, 2r + 1) packed in one 32-bit register as
  // two 16-bit values, element 2r in the low half: 0xFFFF halves kept, 0 halves dropped.
  __device__ __forceinline__ uint32_t pair_mask(int k, int r) const {
    const uint32_t byte = uint32_t(2 * k + r);
    constexpr uint32_t kSign = 8;  // prmt selector nibble: replicate the selected byte's top bit
    const uint32_t lo = byte | kSign, hi = (4 + byte) | kSign;  // bytes of bits[0], bits[1]
    uint32_t mask;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(mask) : "r"(bits[0]), "r"(bits[1]), "r"(lo | lo << 4 | hi << 8 | hi << 12));
    return mask;
  }
};

// Backward: bits[0] holds element (k, e) at bit 4·(4k + e).
template <>
struct FragmentKeep<true> {
  uint32_t bits[1];
  __device__ __forceinline__ bool operator()(int k, int e) const { return (bits[0] >> (4 * (4 * k + e))) & 1u; }
};

// The eight ballots of a draw: bit `lane` of ballot s = lane's value s (column s of its group)
// is kept. `words` is this lane's draw.
__device__ __forceinline__ void dropout_ballots(const Philox4x32& words, uint32_t threshold, uint32_t (&ballot)[8]) {
  const uint32_t threshold_high = dropout_threshold_high(threshold);
#pragma unroll
  for (int s = 0; s < int(kDropoutColumnsPerDraw); ++s) {
    const uint32_t word = words.w[s / kDropoutColumnsPerWord];
    const bool keep = s % 2 == 0 ? dropout_keeps_low(word, threshold_high) : dropout_keeps_high(word, threshold_high);
    ballot[s] = __ballot_sync(kDropoutFullWarp, keep);
  }
}

// x[i] for a run-time i in 0 … 3 (0 … 7) by selects, so that x stays in registers.
__device__ __forceinline__ uint32_t select4(uint32_t i, uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3) {
  return i & 2 ? (i & 1 ? x3 : x2) : (i & 1 ? x1 : x0);
}
__device__ __forceinline__ uint32_t select8(uint32_t i, const uint32_t (&x)[8]) {
  return i & 4 ? select4(i & 3, x[4], x[5], x[6], x[7]) : select4(i & 3, x[0], x[1], x[2], x[3]);
}

// Forward fragments (rows = queries, columns = keys). row_a / row_b: the query rows of this
// lane's fragment rows g and g + 8 (the same in the four lanes of a quad); group0 / group1: the
// Philox column groups of tiles 0 and 1 (their first key column / 8: tiles start at multiples
// of 8 columns; the same in every lane). threshold = dropout_threshold(p).
__device__ __forceinline__ FragmentKeep<false> dropout_keep_fwd(uint64_t seed, uint32_t b, uint32_t h, uint32_t row_a,
                                                                uint32_t row_b, uint32_t group0, uint32_t group1,
                                                                uint32_t threshold, int lane) {
  const uint32_t g = uint32_t(lane) / 4, t = uint32_t(lane) % 4;
  // Quad lane t draws call c = t: row (t & 1 ? g + 8 : g) of tile t >> 1.
  const Philox4x32 words = dropout_words(seed, 0, b, h, t & 1 ? row_b : row_a, t & 2 ? group1 : group0);
  uint32_t ballot[8];
  dropout_ballots(words, threshold, ballot);
  // This lane's columns 2t, 2t + 1 are values 2t, 2t + 1 of every call; the quad's four calls
  // sit at bits 4g + c of those two ballots.
  // Each call's flag moves from bit c to the top bit of byte c: four one-bit terms, one multiply.
  constexpr uint32_t kCallBits = 0xfu, kSpread = 0x10204080u;  // bit c → bit 8c + 7, c = 0 … 3
  FragmentKeep<false> keep;
  keep.bits[0] = ((select4(t, ballot[0], ballot[2], ballot[4], ballot[6]) >> (4 * g)) & kCallBits) * kSpread;
  keep.bits[1] = ((select4(t, ballot[1], ballot[3], ballot[5], ballot[7]) >> (4 * g)) & kCallBits) * kSpread;
  return keep;
}

// Backward fragments (Sᵀ: rows = keys, columns = queries). key_group_a / key_group_b: the
// Philox column groups of this lane's fragment rows g and g + 8 (the tile's key rows start at a
// multiple of 8, so row g is column 8·key_group_a + g; the same in every lane); query0 /
// query1: the queries of this lane's first column (2t) in tiles 0 and 1 (column 2t + 1 is the
// next query; the same in the eight lanes with this t). threshold = dropout_threshold(p).
__device__ __forceinline__ FragmentKeep<true> dropout_keep_bwd(uint64_t seed, uint32_t b, uint32_t h,
                                                               uint32_t key_group_a, uint32_t key_group_b,
                                                               uint32_t query0, uint32_t query1, uint32_t threshold,
                                                               int lane) {
  const uint32_t g = uint32_t(lane) / 4, t = uint32_t(lane) % 4;
  // Lane g draws call c = g: element e = g & 3 of tile g >> 2 (query column e & 1, key row e >> 1).
  const uint32_t query = (g & 4 ? query1 : query0) + (g & 1);
  const Philox4x32 words = dropout_words(seed, 0, b, h, query, g & 2 ? key_group_b : key_group_a);
  uint32_t ballot[8];
  dropout_ballots(words, threshold, ballot);
  // This lane's key is value g of its calls; the eight calls of its column t sit at bits 4c + t.
  FragmentKeep<true> keep;
  keep.bits[0] = select8(g, ballot) >> t;
  return keep;
}

}  // namespace flashio::kernels
