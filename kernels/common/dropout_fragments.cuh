// Dropout draws shared by the lanes of an mma fragment that need the same Philox call.
//
// The mask is the suite's (kernels/common/philox.h): element (b, h, query i, key j) keeps iff
// word j % 4 of Philox(i, j / 4) ≥ threshold, bit for bit the CPU reference's. In the mma
// fragments several lanes need the same call, each for different words of it; drawing it in
// every lane wastes most of the ALU time a dropout step costs. Here each lane draws one call
// for one of the fragment elements the lanes share and the words are exchanged by shuffles:
//
//   dropout_keep_pair   forward fragments (rows = queries, columns = keys): lanes t and t^1 of
//                       a quad need halves 2(t&1), 2(t&1)+1 of the same word: one call per
//                       four elements instead of per two.
//   dropout_keep_quad   backward fragments (Sᵀ: rows = keys, columns = queries): lanes g%4 =
//                       0..3 need word g%4 of the same call: one call per four elements instead
//                       of per element.
#pragma once
#include <cstdint>

#include "kernels/common/philox.h"

namespace flashio::kernels {

// Forward: elements A (query row_a) and B (query row_b) of key columns 4·group + 2(t&1) and
// the next, needed by both lanes of the pair (t, t^1). keep_a/keep_b: this lane's two columns.
__device__ __forceinline__ void dropout_keep_pair(uint64_t seed, uint32_t b, uint32_t h, uint32_t row_a,
                                                  uint32_t row_b, uint32_t group, uint32_t threshold, int lane,
                                                  bool (&keep_a)[2], bool (&keep_b)[2]) {
  const bool odd = lane & 1;  // draws B (and wants words 2, 3); even: draws A (wants words 0, 1)
  const Philox4x32 w = dropout_words(seed, 0, b, h, odd ? row_b : row_a, group);
  const uint32_t own0 = odd ? w.w[2] : w.w[0], own1 = odd ? w.w[3] : w.w[1];
  const uint32_t got0 = __shfl_xor_sync(0xffffffffu, odd ? w.w[0] : w.w[2], 1);  // the partner's draw,
  const uint32_t got1 = __shfl_xor_sync(0xffffffffu, odd ? w.w[1] : w.w[3], 1);  // this lane's columns
  keep_a[0] = dropout_keeps_word(odd ? got0 : own0, threshold);
  keep_a[1] = dropout_keeps_word(odd ? got1 : own1, threshold);
  keep_b[0] = dropout_keeps_word(odd ? own0 : got0, threshold);
  keep_b[1] = dropout_keeps_word(odd ? own1 : got1, threshold);
}

// Backward: four elements e = 0..3 (query rows[e], key group groups[e], the same in the four
// lanes g%4 = 0..3 of a column of the fragment), each lane wanting word g%4 of every call.
// Lane k draws element k's call; in round r it sends word k^r of it to lane k^r (lane ^ 4r),
// so every lane receives its own word of element k^r's call.
__device__ __forceinline__ void dropout_keep_quad(uint64_t seed, uint32_t b, uint32_t h, const uint32_t (&rows)[4],
                                                  const uint32_t (&groups)[4], uint32_t threshold, int lane,
                                                  bool (&keep)[4]) {
  const uint32_t k = (lane >> 2) & 3;
  auto pick = [k](const uint32_t (&a)[4]) { return k == 0 ? a[0] : k == 1 ? a[1] : k == 2 ? a[2] : a[3]; };
  const Philox4x32 w = dropout_words(seed, 0, b, h, pick(rows), pick(groups));
  const uint32_t v0 = philox_lane(w, k);                                       // element k
  const uint32_t v1 = __shfl_xor_sync(0xffffffffu, philox_lane(w, k ^ 1), 4);   // element k^1
  const uint32_t v2 = __shfl_xor_sync(0xffffffffu, philox_lane(w, k ^ 2), 8);   // element k^2
  const uint32_t v3 = __shfl_xor_sync(0xffffffffu, philox_lane(w, k ^ 3), 12);  // element k^3
#pragma unroll
  for (uint32_t e = 0; e < 4; ++e) {
    const uint32_t r = e ^ k;
    keep[e] = dropout_keeps_word(r == 0 ? v0 : r == 1 ? v1 : r == 2 ? v2 : v3, threshold);
  }
}

}  // namespace flashio::kernels
