// Warp tile products of the mma.sync kernels (m16n8k16 from ldmatrix fragments, kernels/common/
// mma.cuh), written once for the flash2 and flash1 forwards: S = Q·Kᵀ with both operands from
// padded shared-memory tiles (rows of kStride elements), and O += P·V with P from registers and
// V read transposed. A warp owns kMTiles m16 tiles of rows; each B fragment loaded from shared
// memory feeds all of them. Accumulators are C fragments (layout in online_softmax.h).
//
// The operand fragments between ldmatrix and mma (kMTiles A fragments, one B fragment) are
// arrays the kernel declares and passes in, as its loops declared them before these helpers:
// arrays local to an inlined helper are promoted to registers before it is inlined, which
// changes the order in which nvcc numbers the kernel's loop-carried registers, and ptxas, fed
// the same instructions under other numbers, allocated up to 4 more registers (d = 64,
// Br×Bc = 128×64: 218 → 222). Two separate arrays, not a struct of both (same effect).
#pragma once
#include <cstdint>

#include "kernels/common/mma.cuh"
#include "kernels/common/online_softmax.h"

namespace flashio::kernels {

// A lane's ldmatrix row and column offsets within a 16 × 16 block (fragment layouts in mma.cuh),
// computed once before a kernel's main loop.
struct LdmatrixLane {
  int a_row, a_col;  // A, row-major (Q)
  int b_row, b_col;  // B with rows along n (K)
  int v_row, v_col;  // B read transposed (V)
  // lane unsigned: its remainders and quotients are masks and shifts whatever the caller knows of
  // it (an int lane left signed remainders in the inlined helper and moved registers).
  __device__ __forceinline__ explicit LdmatrixLane(unsigned lane)
      : a_row(lane % 16),
        a_col((lane / 16) * 8),
        b_row((lane % 8) + (lane / 16) * 8),
        b_col(((lane / 8) % 2) * 8),
        v_row((lane % 8) + ((lane / 8) % 2) * 8),
        v_col((lane / 16) * 8) {}
};

// acc = A·Bᵀ, zeroed first: A rows [a_row0, a_row0 + 16·kMTiles) of sA, B rows [0, 8·kNTiles) of
// sB, kKSteps k16 steps of columns. acc: (16·kMTiles, 8·kNTiles); a, b: the operand fragments.
template <class T, int kKSteps, int kStride, int kMTiles, int kNTiles>
__device__ __forceinline__ void warp_mma_abt(float (&acc)[kMTiles][kNTiles][4], const T* sA, int a_row0, const T* sB,
                                             const LdmatrixLane& ld, uint32_t (&a)[kMTiles][4], uint32_t (&bk)[4]) {
  static_assert(kNTiles % 2 == 0, "ldmatrix.x4 feeds two n8 tiles at a time");
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.f;
#pragma unroll
  for (int kk = 0; kk < kKSteps; ++kk) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
      ldmatrix_x4(a[mt], smem_addr(sA + (a_row0 + mt * 16 + ld.a_row) * kStride + kk * 16 + ld.a_col));
#pragma unroll
    for (int np = 0; np < kNTiles / 2; ++np) {
      ldmatrix_x4(bk, smem_addr(sB + (np * 16 + ld.b_row) * kStride + kk * 16 + ld.b_col));
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        mma_16816<T>(acc[mt][2 * np], a[mt], bk[0], bk[1]);
        mma_16816<T>(acc[mt][2 * np + 1], a[mt], bk[2], bk[3]);
      }
    }
  }
}

// acc = 0 (an accumulator before its first product): the C fragments of one m16 tile …
template <int kNTiles>
__device__ __forceinline__ void clear_fragments(float (&acc)[kNTiles][4]) {
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] = 0.f;
}
// … or of kMTiles.
template <int kMTiles, int kNTiles>
__device__ __forceinline__ void clear_fragments(float (&acc)[kMTiles][kNTiles][4]) {
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) clear_fragments(acc[mt]);
}

// acc += A·B over kKSteps k16 steps: a_frag(kk, mt, a) gives the A fragment of m16 tile mt and
// step kk (from registers), B rows [16·kk, 16·kk + 16) of sB read transposed (ldmatrix.trans);
// a, bv: the operand fragments.
// acc: (16·kMTiles, 8·kNTiles).
template <class T, int kKSteps, int kStride, int kMTiles, int kNTiles, class AFragment>
__device__ __forceinline__ void warp_mma_ab_trans(float (&acc)[kMTiles][kNTiles][4], AFragment a_frag, const T* sB,
                                                  const LdmatrixLane& ld, uint32_t (&a)[kMTiles][4],
                                                  uint32_t (&bv)[4]) {
  static_assert(kNTiles % 2 == 0, "ldmatrix.x4.trans feeds two n8 tiles at a time");
#pragma unroll
  for (int kk = 0; kk < kKSteps; ++kk) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) a_frag(kk, mt, a[mt]);
#pragma unroll
    for (int dp = 0; dp < kNTiles / 2; ++dp) {
      ldmatrix_x4_trans(bv, smem_addr(sB + (kk * 16 + ld.v_row) * kStride + dp * 16 + ld.v_col));
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        mma_16816<T>(acc[mt][2 * dp], a[mt], bv[0], bv[1]);
        mma_16816<T>(acc[mt][2 * dp + 1], a[mt], bv[2], bv[3]);
      }
    }
  }
}

// The A fragment of k16 step kk of P (16 rows, 16 columns), packed to 16 bits from the C
// fragments of its n8 tiles 2kk, 2kk + 1 (mma.sync's C layout is its A layout, and each warp's
// part of a wgmma accumulator is the A operand of the next wgmma).
template <class T, class S>
__device__ __forceinline__ void pack_a_fragment(const S& s, int kk, uint32_t (&a)[4]) {
  a[0] = pack2<T>(frag(s, 2 * kk, 0), frag(s, 2 * kk, 1));
  a[1] = pack2<T>(frag(s, 2 * kk, 2), frag(s, 2 * kk, 3));
  a[2] = pack2<T>(frag(s, 2 * kk + 1, 0), frag(s, 2 * kk + 1, 1));
  a[3] = pack2<T>(frag(s, 2 * kk + 1, 2), frag(s, 2 * kk + 1, 3));
}

}  // namespace flashio::kernels
