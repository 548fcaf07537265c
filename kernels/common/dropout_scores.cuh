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
// tile j starts at key col0 + 8j) with the dropped elements set to 0.
template <class S>
__device__ __forceinline__ void dropout_p_fragment(S& s, uint64_t seed, uint32_t b, uint32_t h, uint32_t row, int col0,
                                                   uint32_t threshold, int lane) {
  static_assert(FragmentTiles<S>::value % 2 == 0, "dropout_keep_fwd covers n8 tiles in pairs");
#pragma unroll
  for (int np = 0; np < FragmentTiles<S>::value / 2; ++np) {
    const uint32_t group = uint32_t(col0 + np * 16) / kDropoutColumnsPerDraw;
    const FragmentKeep<false> keep = dropout_keep_fwd(seed, b, h, row, row + 8, group, group + 1, threshold, lane);
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (!keep(k, e)) frag(s, 2 * np + k, e) = 0.f;
  }
}

}  // namespace flashio::kernels
