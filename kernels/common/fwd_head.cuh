// Prologue of the fused forwards (flash2 mma.sync, dense and block-sparse; flash2 wgmma;
// flash1): what one (batch b, query head h) reads and writes — its key length and the slices of
// Q, K, V, O and L.
//
// Tensors are row-major: Q, O [B, H, Nq, d]; K, V [B, Hkv, Nk, d] (GQA/MQA: query head h reads
// K/V head h / (H / Hkv)); L [B, H, Nq] fp32; key_lengths (key padding) [B] or null.
// Packed variable lengths (kVarlen, a template flag defaulting to false, so the dense kernels'
// code is unchanged): Q, O [H, T, d], K, V [Hkv, T, d], L [H, T]; sequence b is rows
// cu_seqlens[b] .. cu_seqlens[b+1] of every head, its length both its query and key count.
//
// Written so that each kernel compiles to the PTX it had with the arithmetic inline, byte for
// byte (kernels/NOTES.md, "The prologue on the helpers"): every expression is the kernel's, in
// its order and types. Index is the type the offsets are formed in: int64_t in flash2 (mma.sync
// and wgmma), size_t in flash1 (flash1 with int64_t offsets took up to 30 more registers: ptxas
// reassociated them with the loop's addresses). Users:
//   fwd_head_slices (the whole prologue, one call)    flash2_fwd_kernel (dense and block-sparse)
//   fwd_key_length, fwd_kv_head, fwd_head_row,         flash2_fwd_wgmma_kernel (fwd_head_slices
//   fwd_kv_offset                                       moved one sign extension of its O store)
//   fwd_key_length, fwd_head_row,                      flash1_fwd_kernel (its O accumulator, m and
//   fwd_kv_offset_of_query_head                         ℓ rows also start at fwd_head_row)
// The epilogue (O·(1/ℓ) staged through shared memory, 16-byte stores, L) stays in each kernel: a
// staging or store helper changed the mma.sync kernel's store loop (its runtime unrolling) and
// the wgmma kernel's.
#pragma once
#include <cstddef>
#include <cstdint>

namespace flashio::kernels {

// K/V head of query head h (GQA/MQA; H = Hkv: h).
template <class Params>
__device__ __forceinline__ int fwd_kv_head(const Params& p, int h) {
  return h / (p.heads / p.kv_heads);
}

// Keys that exist for batch b: its key length (key padding, at most Nk) or Nk; varlen: its length.
template <bool kVarlen = false, class Params>
__device__ __forceinline__ int fwd_key_length(const Params& p, int b) {
  if constexpr (kVarlen) return p.cu_seqlens[b + 1] - p.cu_seqlens[b];
  return p.key_lengths ? min(p.key_lengths[b], p.seqlen_k) : p.seqlen_k;
}

// First row of head (b, h) in the (B·H·Nq) rows of Q, O and L; varlen: h·T + cu[b] of the H·T rows.
template <class Index, bool kVarlen = false, class Params>
__device__ __forceinline__ Index fwd_head_row(const Params& p, int b, int h) {
  if constexpr (kVarlen) return Index(h) * p.total_tokens + p.cu_seqlens[b];
  return (Index(b) * p.heads + h) * p.seqlen_q;
}

// Element offset of K/V head (b, hk): the start of its (Nk, d) slice; varlen: of its (length, d) rows.
template <class Index, int kHeadDim, bool kVarlen = false, class Params>
__device__ __forceinline__ Index fwd_kv_offset(const Params& p, int b, int hk) {
  if constexpr (kVarlen) return (Index(hk) * p.total_tokens + p.cu_seqlens[b]) * kHeadDim;
  return (Index(b) * p.kv_heads + hk) * p.seqlen_k * kHeadDim;
}

// The same offset from the query head h (hk = fwd_kv_head(p, h) formed inside: the product
// b·Hkv comes before the division, as flash1 has it; an hk passed in moves the division first).
template <class Index, int kHeadDim, class Params>
__device__ __forceinline__ Index fwd_kv_offset_of_query_head(const Params& p, int b, int h) {
  return (Index(b) * p.kv_heads + fwd_kv_head(p, h)) * p.seqlen_k * kHeadDim;
}

// Row `row` of a row-major (·, kHeadDim) matrix. The product stays in this helper: written inline
// in fwd_head_slices, nvcc folds it into Q's address before the tile loads can share it.
template <class T, int kHeadDim, class Index>
__device__ __forceinline__ T* fwd_rows(T* base, Index row) {
  return base + row * kHeadDim;
}

// The prologue of query head h of batch b (K/V head hk = fwd_kv_head(p, h)) for the query rows
// from row0 on, into the kernel's own locals (a returned struct changes the PTX):
//   nk      keys of this batch (fwd_key_length)
//   q, o    (Nq − row0, d) slices of Q and O, from row row0
//   k, v    (Nk, d) slices of K and V (K/V head hk)
//   lse     (Nq − row0) slice of L, from row row0
//   q_rows  Nq − row0: the valid query rows from row0 on (may exceed a tile's rows); varlen:
//           the sequence's length − row0 (<= 0: the Q tile is past the sequence's end)
// Params: FwdParams (attention_params.h) or anything with its fields.
template <class T, int kHeadDim, class Index, bool kVarlen = false, class Params>
__device__ __forceinline__ void fwd_head_slices(const Params& p, int b, int h, int hk, int row0, int& nk, const T*& q,
                                                const T*& k, const T*& v, T*& o, float*& lse, int& q_rows) {
  nk = fwd_key_length<kVarlen>(p, b);
  q = fwd_rows<const T, kHeadDim>(static_cast<const T*>(p.q), fwd_head_row<Index, kVarlen>(p, b, h) + row0);
  k = static_cast<const T*>(p.k) + fwd_kv_offset<Index, kHeadDim, kVarlen>(p, b, hk);
  v = static_cast<const T*>(p.v) + fwd_kv_offset<Index, kHeadDim, kVarlen>(p, b, hk);
  o = fwd_rows<T, kHeadDim>(static_cast<T*>(p.o), fwd_head_row<Index, kVarlen>(p, b, h) + row0);
  lse = p.lse + fwd_head_row<Index, kVarlen>(p, b, h) + row0;
  q_rows = (kVarlen ? nk : p.seqlen_q) - row0;
}

}  // namespace flashio::kernels
