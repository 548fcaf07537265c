// Dropout of P in the fused forwards (FlashAttention Algorithm 2 line 14 / FlashAttention-2
// Algorithm 1 with dropout): after ℓ took the undropped P, each element is kept or zeroed by the
// suite's Philox mask (bench/core/philox.h), drawn through dropout_keep_fwd (two n8 tiles per
// call, one Philox call per lane: kernels/common/dropout_fragments.cuh). 1/(1−p) joins 1/ℓ in
// the epilogue. Every lane of the warp calls it together (warp ballots).
#pragma once
#include <cstdint>

#include "kernels/common/dropout_fragments.cuh"
#include "kernels/common/online_softmax.h"

namespace flashio::kernels {

// P (a C fragment of an m16 tile whose rows g, g + 8 are queries `row`, row + 8, and whose n8
// tile j starts at key col0 + 8j) with the dropped elements set to 0. Params: an argument block
// with seed and dropout_threshold (FwdParams), read where the kernels read them. keep: the
// kernel's, declared by it (for the reason kernels/common/mma_tiles.cuh gives for the operand
// fragments: a helper's own local changed the kernels' register numbering and allocation).
template <class S, class Params>
__device__ __forceinline__ void dropout_p_fragment(S& s, const Params& params, uint32_t b, uint32_t h, uint32_t row,
                                                   int col0, int lane, FragmentKeep<false>& keep) {
  static_assert(FragmentTiles<S>::value % 2 == 0, "dropout_keep_fwd covers n8 tiles in pairs");
#pragma unroll
  for (int np = 0; np < FragmentTiles<S>::value / 2; ++np) {
    const uint32_t group = uint32_t(col0 + np * 16) / kDropoutColumnsPerDraw;
    keep = dropout_keep_fwd(params.seed, b, h, row, row + 8, group, group + 1, params.dropout_threshold, lane);
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (!keep(k, e)) frag(s, 2 * np + k, e) = 0.f;
  }
}
// The same with the row given as row_first + g and formed inside the loop over n8 tile pairs,
// where the mma.sync forward formed it (computed before the loop, its registers moved).
template <class S, class Params>
__device__ __forceinline__ void dropout_p_fragment(S& s, const Params& params, uint32_t b, uint32_t h, int row_first,
                                                   int g, int col0, int lane, FragmentKeep<false>& keep) {
  static_assert(FragmentTiles<S>::value % 2 == 0, "dropout_keep_fwd covers n8 tiles in pairs");
#pragma unroll
  for (int np = 0; np < FragmentTiles<S>::value / 2; ++np) {
    const uint32_t row = uint32_t(row_first + g);
    const uint32_t group = uint32_t(col0 + np * 16) / kDropoutColumnsPerDraw;
    keep = dropout_keep_fwd(params.seed, b, h, row, row + 8, group, group + 1, params.dropout_threshold, lane);
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (!keep(k, e)) frag(s, 2 * np + k, e) = 0.f;
  }
}

// The same for P already packed to 16 bits (flash1: pair (j, r) = tile j's elements 2r, 2r + 1, as
// tile_softmax stores them), each pair ANDed with its keep mask (a dropped half becomes +0).
// Params: an argument block with seed and dropout_threshold (FwdParams).
template <int kTiles, class Params>
__device__ __forceinline__ void dropout_p_packed(uint32_t (&p)[kTiles][2], const Params& params, uint32_t b, uint32_t h,
                                                 uint32_t row, int col0, int lane) {
  static_assert(kTiles % 2 == 0, "dropout_keep_fwd covers n8 tiles in pairs");
#pragma unroll
  for (int np = 0; np < kTiles / 2; ++np) {
    const uint32_t group = uint32_t(col0 + np * 16) / kDropoutColumnsPerDraw;
    const FragmentKeep<false> keep =
        dropout_keep_fwd(params.seed, b, h, row, row + 8, group, group + 1, params.dropout_threshold, lane);
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
      for (int r = 0; r < 2; ++r) p[2 * np + k][r] &= keep.pair_mask(k, r);
  }
}

}  // namespace flashio::kernels
