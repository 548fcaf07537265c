// flash2 forward on Hopper: FlashAttention-2, Algorithm 1 (Dao, 2023), with the products on
// Hopper's warpgroup tensor-core instruction (wgmma, sm_90a) instead of mma.sync.
//
// Loop order and IO are those of kernels/flash2/flash2_fwd_kernel.cuh: one thread block per
// (Q tile i, head, batch) — the outer loop of Algorithm 1 in parallel across thread blocks —
// streaming the K/V tiles j through shared memory (cp.async, double-buffered), last-to-first
// so that (causal) the tiles needing a mask come first; tiles entirely above the causal
// diagonal are never loaded. Online softmax as there: running max m and unnormalised ℓ in
// registers, O rescaled by exp(m_old − m_new), 1/ℓ deferred to the end, L = m + log ℓ saved.
//
// What differs is how the tiles are multiplied. Each warpgroup (4 warps, 128 threads) owns 64
// rows of the Q tile (Br = 64 · warpgroups) and issues, per K/V tile:
//   S = Q·K_jᵀ   wgmma m64n{Bc}k16, A = Q and B = K_j both from shared memory (K-major),
//                 d/16 steps, fp32 accumulators in registers: (64, Bc) per warpgroup;
//   O += P·V_j   wgmma m64n{d}k16, A = P from registers (the S accumulators rescaled,
//                 masked and packed to 16 bits: each warp's accumulator layout is mma.sync's C
//                 fragment, which is wgmma's A fragment), B = V_j from shared memory read
//                 transposed (MN-major), Bc/16 steps.
// Shared tiles use the 128-byte swizzle (kernels/common/wgmma.cuh): no padding, so each global
// sector crosses the crossbar once (the padded mma.sync tiles cost 1.5×, analysis/README.md).
//
// IO per (batch, head), e = element bytes, Tr = ⌈Nq/Br⌉: Q read once, O written once, L written
// once, K and V read Tr times (≈ half with causal): Nq·d·e·2 + 2·Tr·Nk·d·e + 4·Nq, as flash2.
//
// Dropout (kDropout): P is normalised with the undropped ℓ, then each element is kept or dropped
// by the suite's Philox mask (kernels/common/dropout_fragments.cuh: each warp's accumulator has
// the mma.sync C-fragment layout those helpers serve) before P·V; 1/(1−p) joins the final 1/ℓ.
//
// Steps written once (kernels/common): the prologue's key length and offsets (fwd_head.cuh), the
// trip count and the mask step (masks.h), the online softmax (online_softmax.h: softmax_update),
// dropout (dropout_scores.cuh), P packed to A fragments (mma_tiles.cuh: pack_a_fragment); the
// wgmma products are this file's.
//
// Supported here: fp16/bf16, d ∈ {64, 128}, causal and key-padding masks, dropout, GQA/MQA,
// Nq ≠ Nk, any N. Block-sparse lists run on the mma.sync kernel (flash2_method.cpp chooses).
//
// Run: build/flashio run --method flash2 --seqlen 4096 --head-dim 128   (an H100/H200)
#pragma once
#include <cmath>

#include "kernels/common/dropout_scores.cuh"
#include "kernels/common/fwd_head.cuh"
#include "kernels/common/masks.h"
#include "kernels/common/mma_tiles.cuh"
#include "kernels/common/online_softmax.h"
#include "kernels/common/wgmma.cuh"
#include "kernels/flash2/flash2_params.h"

namespace flashio::kernels {

template <typename Element_, int kHeadDim_, int kBlockM_, int kBlockN_>
struct Flash2FwdWgmmaTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;  // Br: query rows per thread block, 64 per warpgroup
  static constexpr int kBlockN = kBlockN_;  // Bc: key rows per K/V tile
  static constexpr int kWarpGroups = kBlockM / 64;
  static constexpr int kNThreads = 128 * kWarpGroups;
  static constexpr int kStages = 2;
  static constexpr int kAccS = kBlockN / 2;                    // fp32 registers per thread of S: (64, Bc) per warpgroup
  static constexpr int kAccO = kHeadDim / 2;                   // fp32 registers per thread of O: (64, d) per warpgroup
  static constexpr int kTileQBytes = kBlockM * kHeadDim * 2;   // (kBlockM, d) swizzle128
  static constexpr int kTileKVBytes = kBlockN * kHeadDim * 2;  // (kBlockN, d) swizzle128, per stage
  static constexpr int kSmemBytes = flash2_fwd_wgmma_smem_bytes(kHeadDim, kBlockM, kBlockN);

  static_assert(kBlockM % 64 == 0, "whole warpgroups of 64 rows");
  static_assert(kBlockN % 16 == 0 && kHeadDim % kPanelColumns == 0, "k16 steps and 64-column panels");
  static_assert((kBlockM * kHeadDim * 2) % kSwizzleAtomBytes == 0 && (kBlockN * kHeadDim * 2) % kSwizzleAtomBytes == 0,
                "every tile starts on a 1024-byte swizzle atom");
  static_assert(kSmemBytes == kTileQBytes + 2 * kStages * kTileKVBytes + kSwizzleAtomBytes, "host formula");
};

// The dynamic shared memory rounded up to the swizzle atom (the launch adds the slack).
__device__ __forceinline__ unsigned char* align_to_swizzle_atom(unsigned char* p) {
  const uint32_t a = smem_addr(p);
  return p + ((kSwizzleAtomBytes - (a % kSwizzleAtomBytes)) % kSwizzleAtomBytes);
}

template <typename Tr, bool kCausal, bool kDropout, bool kVarlen = false>
__global__ void __launch_bounds__(Tr::kNThreads, 1) flash2_fwd_wgmma_kernel(const FwdParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = typename Tr::Element;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* sQ = align_to_swizzle_atom(smem_raw);      // (kBlockM, d)
  unsigned char* sK = sQ + Tr::kTileQBytes;                 // (kStages, kBlockN, d)
  unsigned char* sV = sK + Tr::kStages * Tr::kTileKVBytes;  // (kStages, kBlockN, d)

  // Heavy (late) causal Q tiles are scheduled first.
  const int m_block = kCausal ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = fwd_kv_head(p, h);
  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;                            // accumulator row group and column pair
  const int warp_row = wg * 64 + ((threadIdx.x % 128) / 32) * 16;  // this warp's first row in the tile
  const int row0 = m_block * Tr::kBlockM;
  const int nk = fwd_key_length<kVarlen>(p, b);

  // This head's slices (fwd_head.cuh): Q, O, L from row row0; K, V of K/V head hk. Packed varlen
  // (kVarlen): the sequence's rows of each head, its length both query and key count.
  const T* q = static_cast<const T*>(p.q) + (fwd_head_row<int64_t, kVarlen>(p, b, h) + row0) * Tr::kHeadDim;
  const T* k = static_cast<const T*>(p.k) + fwd_kv_offset<int64_t, Tr::kHeadDim, kVarlen>(p, b, hk);
  const T* v = static_cast<const T*>(p.v) + fwd_kv_offset<int64_t, Tr::kHeadDim, kVarlen>(p, b, hk);
  T* o = static_cast<T*>(p.o) + (fwd_head_row<int64_t, kVarlen>(p, b, h) + row0) * Tr::kHeadDim;
  float* lse = p.lse + fwd_head_row<int64_t, kVarlen>(p, b, h) + row0;
  const int q_rows = (kVarlen ? nk : p.seqlen_q) - row0;  // valid rows of this Q tile (may exceed kBlockM)
  if constexpr (kVarlen) {
    if (q_rows <= 0) return;  // past this sequence's end (the whole block: before any barrier)
  }

  // The K/V tiles this Q tile visits, last-to-first (masks.h): every tile with a key it can see.
  const SequenceMask<kCausal> mask{nk};
  const int n_blocks = mask.kv_tiles(m_block, row0 + Tr::kBlockM, Tr::kBlockN).count;

  load_tile_sw128<Tr::kBlockM, Tr::kHeadDim, Tr::kNThreads>(sQ, q, 0, q_rows);
  cp_async_commit();
  if (n_blocks > 0) {
    load_tile_sw128<Tr::kBlockN, Tr::kHeadDim, Tr::kNThreads>(sK, k, (n_blocks - 1) * Tr::kBlockN, nk);
    load_tile_sw128<Tr::kBlockN, Tr::kHeadDim, Tr::kNThreads>(sV, v, (n_blocks - 1) * Tr::kBlockN, nk);
  }
  cp_async_commit();

  float acc_o[Tr::kAccO];                     // (64 rows of this warpgroup, d): rows g, g+8 of each warp's 16
  float row_max[2] = {-INFINITY, -INFINITY};  // running max m of rows g and g+8, raw scores
  float row_sum[2] = {0.f, 0.f};              // this thread's share of ℓ (quad-reduced at the end)
#pragma unroll
  for (int i = 0; i < Tr::kAccO; ++i) acc_o[i] = 0.f;

  const uint32_t q_tile = smem_addr(sQ) + wg * 64 * kSwizzleRowBytes;  // this warpgroup's 64 rows

  // One barrier per K/V tile: it publishes tile `it` (every thread's copies, made visible to the
  // async proxy first) and proves that every thread is done with tile it − 1, whose stage the
  // prefetch of tile it + 1 then overwrites while tile `it` is computed.
  for (int it = 0; it < n_blocks; ++it) {
    const int n = n_blocks - 1 - it;  // last-to-first: masked tiles come first
    const int stage = it % 2;
    cp_async_wait<0>();
    fence_proxy_async_shared();  // the copies are read by wgmma (async proxy)
    __syncthreads();
    if (it + 1 < n_blocks) {  // prefetch the next tile into the other stage
      load_tile_sw128<Tr::kBlockN, Tr::kHeadDim, Tr::kNThreads>(sK + (stage ^ 1) * Tr::kTileKVBytes, k,
                                                                (n - 1) * Tr::kBlockN, nk);
      load_tile_sw128<Tr::kBlockN, Tr::kHeadDim, Tr::kNThreads>(sV + (stage ^ 1) * Tr::kTileKVBytes, v,
                                                                (n - 1) * Tr::kBlockN, nk);
      cp_async_commit();
    }
    const uint32_t k_tile = smem_addr(sK + stage * Tr::kTileKVBytes);
    const uint32_t v_tile = smem_addr(sV + stage * Tr::kTileKVBytes);

    // S = Q·K_jᵀ (Algorithm 1, line 8): (64, kBlockN) per warpgroup, fp32.
    float acc_s[Tr::kAccS];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kHeadDim / 16; ++kk)
      Wgmma<T, Tr::kBlockN>::template ss<0, 0>(acc_s, desc_kmajor(q_tile, Tr::kBlockM, kk),
                                               desc_kmajor(k_tile, Tr::kBlockN, kk), kk > 0);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operands(acc_s);

    // Mask, only where needed: the sequence tail, and (causal) tiles crossing the diagonal.
    const int col0 = n * Tr::kBlockN;
    mask.tile(acc_s, row0 + warp_row, col0, Tr::kBlockN, g, t);

    // Online softmax (lines 9-10): new max m, ℓ and O rescaled by exp(m_old − m), P = exp(S − m).
    softmax_update<QuadRowReduce>(row_max, row_sum, acc_s, acc_o, p.scale_log2);

    if constexpr (kDropout) {  // after ℓ took P
      FragmentKeep<false> keep;
      dropout_p_fragment(acc_s, p, uint32_t(b), uint32_t(h), uint32_t(row0 + warp_row + g), col0, lane, keep);
    }

    // O += P·V_j (line 10): P packed from the S accumulators into A fragments, V read transposed.
    uint32_t a_p[Tr::kBlockN / 16][4];  // (64, kBlockN) in 16-bit A fragments
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockN / 16; ++kk) pack_a_fragment<T>(acc_s, kk, a_p[kk]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockN / 16; ++kk)
      Wgmma<T, Tr::kHeadDim>::template rs<1>(acc_o, a_p[kk], desc_mnmajor(v_tile, Tr::kBlockN, kk), 1);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operands(acc_o);
  }

  // Epilogue (lines 12-13): O = O / ℓ, L = m + log ℓ; O staged through sQ (swizzled, conflict-free)
  // for 16-byte stores of whole rows.
  cp_async_wait<0>();  // no copy in flight (a Q tile that sees no key loaded Q and nothing else)
  __syncthreads();     // every warpgroup's last Q·Kᵀ has read sQ
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const float l = quad_sum(row_sum[hr]);
    const float inv = OnlineSoftmax::output_scale<kDropout>(l, p.dropout_scale);  // a row that sees no key: O = 0
    const int r = warp_row + g + hr * 8;
#pragma unroll
    for (int j = 0; j < Tr::kHeadDim / 8; ++j)
      *reinterpret_cast<uint32_t*>(sQ + swizzle128_chunk_offset(Tr::kBlockM, r, j) + 4 * t) =
          pack2<T>(acc_o[4 * j + 2 * hr] * inv, acc_o[4 * j + 2 * hr + 1] * inv);
    if (t == 0 && r < q_rows) lse[r] = log_sum_exp(row_max[hr], l, p.scale_log2);
  }
  __syncthreads();
  constexpr int kChunksPerRow = Tr::kHeadDim / 8;
#pragma unroll
  for (int c = threadIdx.x; c < Tr::kBlockM * kChunksPerRow; c += Tr::kNThreads) {
    const int r = c / kChunksPerRow, chunk = c % kChunksPerRow;
    if (r < q_rows)
      *reinterpret_cast<uint4*>(o + int64_t(r) * Tr::kHeadDim + chunk * 8) =
          *reinterpret_cast<const uint4*>(sQ + swizzle128_chunk_offset(Tr::kBlockM, r, chunk));
  }
#else
  __trap();  // compiled for sm_90a only (flash2_wgmma_compiled() says whether it is)
#endif
}

}  // namespace flashio::kernels
