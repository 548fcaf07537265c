// Prologue and epilogue of the fused forwards (flash2 mma.sync and wgmma, flash1): the
// (batch, head) slices of the tensors a thread block works on, and O = O/ℓ with L = m + log ℓ
// written out (FlashAttention-2 Algorithm 1, lines 12-13) through shared memory, so that global
// stores are 16-byte rows whatever the register layout.
//
// Tensors are [B, H, N, d] row-major (K, V: [B, Hkv, Nk, d]; GQA/MQA maps query head h to K/V
// head h / (H / Hkv)); L is [B, H, Nq] fp32.
#pragma once
#include <cstdint>

#include "kernels/common/mma.cuh"
#include "kernels/common/online_softmax.h"

namespace flashio::kernels {

// The slices of one (batch b, query head h), from query row row0 on.
template <class T>
struct FwdHeadTensors {
  const T* q;  // (Nq − row0, d)
  const T* k;  // (Nk, d) of K/V head h / (H / Hkv)
  const T* v;  // (Nk, d)
  T* o;        // (Nq − row0, d)
  float* lse;  // (Nq − row0)
  int nk;      // keys that exist for this batch: its key length (key padding) or Nk
  int q_rows;  // query rows from row0 on (may exceed a tile's rows)
};

// Params: any of the forwards' argument blocks (FwdParams: q, k, v, o, lse, key_lengths,
// heads, kv_heads, seqlen_q, seqlen_k).
template <class T, int kHeadDim, class Params>
__device__ __forceinline__ FwdHeadTensors<T> fwd_head_tensors(const Params& p, int b, int h, int row0) {
  const int hk = h / (p.heads / p.kv_heads);
  FwdHeadTensors<T> t;
  t.nk = p.key_lengths ? min(p.key_lengths[b], p.seqlen_k) : p.seqlen_k;
  t.q = static_cast<const T*>(p.q) + ((int64_t(b) * p.heads + h) * p.seqlen_q + row0) * kHeadDim;
  t.k = static_cast<const T*>(p.k) + (int64_t(b) * p.kv_heads + hk) * p.seqlen_k * kHeadDim;
  t.v = static_cast<const T*>(p.v) + (int64_t(b) * p.kv_heads + hk) * p.seqlen_k * kHeadDim;
  t.o = static_cast<T*>(p.o) + ((int64_t(b) * p.heads + h) * p.seqlen_q + row0) * kHeadDim;
  t.lse = p.lse + (int64_t(b) * p.heads + h) * p.seqlen_q + row0;
  t.q_rows = p.seqlen_q - row0;
  return t;
}

// Epilogue, step 1: row hr of an O fragment (C layout, online_softmax.h) times `inv`, packed to
// 16 bits; at(j) is where the pair of n8 tile j goes in the shared staging tile.
template <class T, class O, class At>
__device__ __forceinline__ void stage_o_row(const O& o, int hr, float inv, At at) {
#pragma unroll
  for (int j = 0; j < FragmentTiles<O>::value; ++j)
    *reinterpret_cast<uint32_t*>(at(j)) = pack2<T>(frag(o, j, 2 * hr) * inv, frag(o, j, 2 * hr + 1) * inv);
}

// Epilogue, step 2 (after a barrier): the staged (kRows, kHeadDim) tile to global memory in
// 16-byte chunks, rows below q_rows only; staged(r, col) is where the chunk of row r starting at
// column col (a multiple of 8) was staged.
template <class T, int kRows, int kHeadDim, int kNThreads, class Staged>
__device__ __forceinline__ void store_o_tile(T* o, int q_rows, Staged staged) {
  constexpr int kChunksPerRow = kHeadDim / 8;
#pragma unroll
  for (int c = threadIdx.x; c < kRows * kChunksPerRow; c += kNThreads) {
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * 8;
    if (r < q_rows)
      *reinterpret_cast<uint4*>(o + int64_t(r) * kHeadDim + col) = *reinterpret_cast<const uint4*>(staged(r, col));
  }
}

}  // namespace flashio::kernels
