// flash1: FlashAttention as published (Dao et al., 2022), Algorithm 2 (forward with masking
// and dropout; Algorithm 1 without) and Algorithm 4 (backward).
//
// Loop order, as the paper's kernel: the OUTER loop runs over K/V tiles j (K_j, V_j resident
// in shared memory), the INNER loop over Q tiles i. Parallel over (head, batch) and, as the
// paper's released kernel does (its `num_splits`), over `splits` thread blocks per head when
// batch × heads alone cannot fill the GPU: forward block z takes the Q tiles i ≡ z (mod splits)
// and streams every K/V tile past them (K, V read once per block); backward block z takes the
// K/V tiles j ≡ z (mod splits) and adds into dQ with fp32 atomics (read-modify-write when the
// head has one block). The loop order inside a block, and so Theorem 2's IO, is unchanged. The
// running O_i, ℓ_i, m_i live in HBM and are re-read and re-written on every inner iteration
// (O in fp32, as FlashAttention's own kernel accumulates it; the last visit writes O in the
// element type and L = m + log ℓ instead). The initial O = 0, ℓ = 0, m = −∞ (Algorithm 1
// line 2) start in registers at j = 0 instead of being read. Causal: tiles entirely above the
// diagonal are skipped whole (Q tiles before the key tile's first row).
// Backward (Algorithm 4): outer loop over K/V tiles j with dK_j, dV_j in registers; inner loop
// over Q tiles i reading Q_i, O_i, dO_i, ℓ_i, m_i and read-modify-writing dQ_i (fp32) in HBM;
// D_i = rowsum(dO_i ∘ O_i) is computed inside the loop (line 19). The per-tile arithmetic is
// flash2's (bwd_tile_step); only the schedule differs.
//
// IO per (batch, head), e = element bytes, Tc = ⌈Nk/Bc⌉ (no mask): K, V read once per block
// (splits times); Q read Tc times; O read Tc−1 and written Tc times (4 bytes, the last write e bytes); ℓ, m read Tc−1
// and written Tc times → Θ(N·d·Tc) = Θ(N²d²/M) with Bc = Θ(M/d) (Theorem 2).
//
// Forward steps written once (kernels/common): the prologue's key length and offsets
// (fwd_head.cuh), S = Q·Kᵀ and P̃·V (mma_tiles.cuh), the mask step and trip counts (masks.h), the
// per-tile softmax and the merge (online_softmax.h: tile_softmax, softmax_merge), dropout on
// packed P̃ (dropout_scores.cuh).
//
// Run: build/flashio run --method flash1 --seqlen 4096 --head-dim 64 [--block-c 128]
#pragma once
#include <cmath>

#include "bench/core/philox.h"
#include "kernels/common/dropout_scores.cuh"
#include "kernels/common/fwd_head.cuh"
#include "kernels/common/masks.h"
#include "kernels/common/mma.cuh"
#include "kernels/common/mma_tiles.cuh"
#include "kernels/common/online_softmax.h"
#include "kernels/flash1/flash1_configs.h"
#include "kernels/flash1/flash1_params.h"
#include "kernels/flash2/flash2_bwd_kernel.cuh"
#include "kernels/flash2/flash2_fwd_kernel.cuh"

namespace flashio::kernels {

// Algorithm 1 lines 13-16 for the two rows hr of a thread: m_i, ℓ_i, O_i read from HBM (j > 0;
// the initial O = 0, ℓ = 0, m = −∞ otherwise) and merged with the tile's m̃, ℓ̃ and P̃·V_j, written
// back — or, on the last visit, O in the element type and L = m + log ℓ.
template <typename Tr, bool kDropout, class Pv>
__device__ __forceinline__ void flash1_merge_rows(const FwdParams& p, const Pv& acc_pv, const float (&tile_max)[2],
                                                  const float (&tile_sum)[2], float* o_acc, float* m_hbm, float* l_hbm,
                                                  typename Tr::Element* o, float* lse, int row, int j, int last_j,
                                                  int t) {
  using T = typename Tr::Element;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int r = row + hr * 8;
    if (r >= p.seqlen_q) continue;
    const float m_old = j > 0 ? m_hbm[r] : -INFINITY;
    const float l_old = j > 0 ? l_hbm[r] : 0.f;
    const SoftmaxMerge s = softmax_merge(m_old, l_old, tile_max[hr], tile_sum[hr], p.scale_log2);  // line 13
    const float inv = OnlineSoftmax::output_scale<false>(s.sum, 0.f);
    const float w_old = l_old * s.old_factor * inv;
    const float w_new = s.tile_factor * inv * (kDropout ? p.dropout_scale : 1.f);
    const bool last = j == last_j;
#pragma unroll
    for (int nt = 0; nt < Tr::kNTilesO; ++nt) {  // line 15
      const int col = nt * 8 + 2 * t;
      float2 prev = make_float2(0.f, 0.f);
      if (j > 0) prev = *reinterpret_cast<const float2*>(o_acc + size_t(r) * Tr::kHeadDim + col);
      const float x0 = w_old * prev.x + w_new * acc_pv[nt][2 * hr];
      const float x1 = w_old * prev.y + w_new * acc_pv[nt][2 * hr + 1];
      if (last) {
        *reinterpret_cast<uint32_t*>(o + size_t(r) * Tr::kHeadDim + col) = pack2<T>(x0, x1);
      } else {
        *reinterpret_cast<float2*>(o_acc + size_t(r) * Tr::kHeadDim + col) = make_float2(x0, x1);
      }
    }
    if (t == 0) {  // line 16; ℓ and m are kept for the backward (Algorithm 4 reads them)
      if (last) lse[r] = log_sum_exp(s.max, s.sum, p.scale_log2);
      m_hbm[r] = s.max;
      l_hbm[r] = s.sum;
    }
  }
}

template <typename Tr, bool kCausal, bool kDropout>
__global__ void __launch_bounds__(Tr::kNThreads) flash1_fwd_kernel(const Flash1FwdParams fp) {
  using T = typename Tr::Element;
  const FwdParams& p = fp.base;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);  // (kBlockN, kStride)
  T* sV = sK + Tr::kSmemKV;                // (kBlockN, kStride)
  T* sQ = sV + Tr::kSmemKV;                // (2, kBlockM, kStride)

  const int h = blockIdx.x, b = blockIdx.y, z = blockIdx.z, splits = fp.splits;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int nk = fwd_key_length(p, b);
  const int n_blocks = (nk + Tr::kBlockN - 1) / Tr::kBlockN;
  const int m_blocks = (p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM;
  // This head's slices (fwd_head.cuh), offsets in size_t: flash1 with int64_t took up to 30 more registers.
  const size_t row_base = fwd_head_row<size_t>(p, b, h);  // first query row of this head
  const T* q = static_cast<const T*>(p.q) + row_base * Tr::kHeadDim;
  const size_t kv_off = fwd_kv_offset_of_query_head<size_t, Tr::kHeadDim>(p, b, h);
  const T* k = static_cast<const T*>(p.k) + kv_off;
  const T* v = static_cast<const T*>(p.v) + kv_off;
  T* o = static_cast<T*>(p.o) + row_base * Tr::kHeadDim;
  float* o_acc = fp.o_accum + row_base * Tr::kHeadDim;
  float* m_hbm = fp.row_max + row_base;
  float* l_hbm = fp.row_sum + row_base;
  float* lse = p.lse + row_base;
  const int warp_row = warp * Tr::kRowsPerWarp;
  const LdmatrixLane ld(lane);
  const SequenceMask<kCausal> mask{nk};

  if (n_blocks == 0) {  // no key visible to any row: O = 0, L = −∞ for this block's Q tiles
    for (int i = z; i < m_blocks; i += splits) {
      const int m0 = i * Tr::kBlockM, rows = min(Tr::kBlockM, p.seqlen_q - m0);
      for (int e = threadIdx.x; e < rows * Tr::kHeadDim; e += Tr::kNThreads) o[size_t(m0) * Tr::kHeadDim + e] = T(0.f);
      for (int r = threadIdx.x; r < rows; r += Tr::kNThreads) lse[m0 + r] = -INFINITY;
    }
    return;
  }

  for (int j = 0; j < n_blocks; ++j) {  // Algorithm 1, line 5: outer loop over K/V tiles
    const int n0 = j * Tr::kBlockN;
    const int i_first = mask.first_q_tile(n0, Tr::kBlockM, m_blocks);
    const int i_mine = i_first + ((z - i_first) % splits + splits) % splits;  // this block's first Q tile ≥ i_first
    if (i_mine >= m_blocks) continue;                   // no Q tile of this block sees K_j: K_j, V_j not loaded
    __syncthreads();                                    // the previous K/V tile and Q stages are no longer read
    load_tile<Tr, Tr::kBlockN>(sK, k, n0, p.seqlen_k);  // line 6
    load_tile<Tr, Tr::kBlockN>(sV, v, n0, p.seqlen_k);
    load_tile<Tr, Tr::kBlockM>(sQ, q, i_mine * Tr::kBlockM, p.seqlen_q);
    cp_async_commit();

    for (int i = i_mine; i < m_blocks; i += splits) {  // line 7: inner loop over (this block's) Q tiles
      const int stage = ((i - i_mine) / splits) % 2;
      if (i + splits < m_blocks) {
        load_tile<Tr, Tr::kBlockM>(sQ + (stage ^ 1) * Tr::kSmemQ, q, (i + splits) * Tr::kBlockM, p.seqlen_q);
        cp_async_commit();
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const T* sQs = sQ + stage * Tr::kSmemQ;  // (kBlockM, kStride): Q_i
      const int m0 = i * Tr::kBlockM;
      const int last_j = mask.last_kv_tile(m0 + Tr::kBlockM, Tr::kBlockN, n_blocks);  // O_i's last visit

      // S_ij = Q_i K_jᵀ (line 9), raw scores (τ joins exp2): (16 rows of this warp, kBlockN).
      float acc_s[1][Tr::kNTilesS][4];
      uint32_t q_frag[1][4], k_frag[4];  // operand fragments, declared here (mma_tiles.cuh)
      warp_mma_abt<T, Tr::kKStepsQK, Tr::kStride>(acc_s, sQs, warp_row, sK, ld, q_frag, k_frag);
      mask.tile(acc_s, m0 + warp_row, n0, Tr::kBlockN, g, t);  // line 10

      // m̃_ij, P̃_ij = exp(S − m̃), ℓ̃_ij (line 11), ℓ̃ in fp32. P̃ is packed to the element type as it is
      // computed — the P̃·V product's A operand — so that the fp32 scores die here: 64 registers
      // instead of 128 at Bc = 256 (the dropout variant spilled).
      float tile_max[2], tile_sum[2];
      uint32_t p_tile[Tr::kNTilesS][2];  // (kNTilesS, rows g / g+8): P̃ of columns 2t, 2t+1, packed
      tile_softmax<QuadRowReduce>(acc_s[0], p.scale_log2, tile_max, tile_sum,
                                  [&](int nt, int hr, float p0, float p1) { p_tile[nt][hr] = pack2<T>(p0, p1); });
      if constexpr (kDropout)  // line 12, after ℓ̃ took P̃
        dropout_p_packed(p_tile, p, uint32_t(b), uint32_t(h), uint32_t(m0 + warp_row + g), n0, lane);

      // P̃·V_j (line 15's new term), a fresh accumulator: (16 rows, kHeadDim).
      float acc_pv[1][Tr::kNTilesO][4];
      clear_fragments(acc_pv);
      uint32_t p_frag[1][4], v_frag[4];
      warp_mma_ab_trans<T, Tr::kKStepsPV, Tr::kStride>(
          acc_pv,
          [&](int kk, int, uint32_t(&a)[4]) {
            a[0] = p_tile[2 * kk][0];
            a[1] = p_tile[2 * kk][1];
            a[2] = p_tile[2 * kk + 1][0];
            a[3] = p_tile[2 * kk + 1][1];
          },
          sV, ld, p_frag, v_frag);

      // Lines 13-16: m_i, ℓ_i, O_i merged in HBM.
      flash1_merge_rows<Tr, kDropout>(p, acc_pv[0], tile_max, tile_sum, o_acc, m_hbm, l_hbm, o, lse, m0 + warp_row + g,
                                      j, last_j, t);
      __syncthreads();  // this Q stage is overwritten by the prefetch two iterations on
    }
  }
}

// D_i = rowsum(dO_i ∘ O_i) for the kBlockM rows of a stage (Algorithm 4, line 19).
template <typename Tr>
__device__ __forceinline__ void rowsum_do_o(const typename Tr::Element* sdO, const typename Tr::Element* sO, float* sD,
                                            int m0, int seqlen_q) {
  using T = typename Tr::Element;
  for (int r = threadIdx.x; r < Tr::kBlockM; r += Tr::kNThreads) {
    float acc = 0.f;
    for (int c = 0; c < Tr::kHeadDim; c += 8) {
      const uint4 a4 = *reinterpret_cast<const uint4*>(sdO + r * Tr::kStride + c);
      const uint4 b4 = *reinterpret_cast<const uint4*>(sO + r * Tr::kStride + c);
      const T* a = reinterpret_cast<const T*>(&a4);
      const T* o = reinterpret_cast<const T*>(&b4);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc += float(a[e]) * float(o[e]);
    }
    sD[r] = m0 + r < seqlen_q ? acc : 0.f;
  }
}

// kAtomicDq: the head is split over several blocks (splits > 1), dQ added by fp32 atomics; a
// template parameter, not a run-time branch: with a branch per add the unsplit backward of
// Figure 2 (left) took 11.5 ms on the H100, without it 6.4 ms.
template <typename Tr, bool kCausal, bool kDropout, bool kAtomicDq>
__global__ void __launch_bounds__(Tr::kNThreads) flash1_bwd_kernel(const Flash1BwdParams fp) {
  using T = typename Tr::Element;
  const BwdParams& p = fp.base;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);                     // (kBlockN, kStride)
  T* sV = sK + Tr::kSmemKV;                                   // (kBlockN, kStride)
  T* sQ = sV + Tr::kSmemKV;                                   // (2, kBlockM, kStride)
  T* sdO = sQ + 2 * Tr::kSmemQ;                               // (2, kBlockM, kStride)
  T* sO = sdO + 2 * Tr::kSmemQ;                               // (2, kBlockM, kStride)
  T* sdS = sO + 2 * Tr::kSmemQ;                               // (kBlockN, kStrideS)
  float* sLse = reinterpret_cast<float*>(sdS + Tr::kSmemDs);  // (2, kBlockM)
  float* sD = sLse + 2 * Tr::kBlockM;                         // (2, kBlockM)

  const int h = blockIdx.x, b = blockIdx.y, z = blockIdx.z, splits = fp.splits;
  const int nk = p.key_lengths ? min(p.key_lengths[b], p.seqlen_k) : p.seqlen_k;
  const int n_blocks = (p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN;  // every tile: dK, dV of padded keys are 0
  const int m_blocks = (p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM;
  const size_t row_base = (size_t(b) * p.heads + h) * p.seqlen_q;
  const size_t kv_off = (size_t(b) * p.kv_heads + h / (p.heads / p.kv_heads)) * p.seqlen_k * Tr::kHeadDim;
  const T* k = static_cast<const T*>(p.k) + kv_off;
  const T* v = static_cast<const T*>(p.v) + kv_off;

  auto load_q_tile = [&](int i, int stage) {  // Q_i, dO_i, O_i, ℓ_i, m_i (line 8)
    const int m0 = i * Tr::kBlockM;
    const T* base_q = static_cast<const T*>(p.q) + row_base * Tr::kHeadDim;
    load_tile<Tr, Tr::kBlockM>(sQ + stage * Tr::kSmemQ, base_q, m0, p.seqlen_q);
    load_tile<Tr, Tr::kBlockM>(sdO + stage * Tr::kSmemQ, static_cast<const T*>(p.d_o) + row_base * Tr::kHeadDim, m0,
                               p.seqlen_q);
    load_tile<Tr, Tr::kBlockM>(sO + stage * Tr::kSmemQ, static_cast<const T*>(p.o) + row_base * Tr::kHeadDim, m0,
                               p.seqlen_q);
    for (int r = threadIdx.x; r < Tr::kBlockM; r += Tr::kNThreads) {
      const int i_row = m0 + r;
      float lse_log2 = INFINITY;  // a padded row, or one that saw no key: P = 0
      if (i_row < p.seqlen_q) {
        const float l = fp.row_sum[row_base + i_row];
        if (l > 0.f) lse_log2 = fp.row_max[row_base + i_row] * p.scale_log2 + __log2f(l);
      }
      sLse[stage * Tr::kBlockM + r] = lse_log2;
    }
  };

  for (int j = z; j < n_blocks; j += splits) {  // line 6: outer loop over (this block's) K/V tiles
    const int n0 = j * Tr::kBlockN;
    const int i_first = kCausal ? min(n0 / Tr::kBlockM, m_blocks) : 0;
    __syncthreads();                                    // the previous tile's dK/dV staging in sK/sV is written out
    load_tile<Tr, Tr::kBlockN>(sK, k, n0, p.seqlen_k);  // line 7
    load_tile<Tr, Tr::kBlockN>(sV, v, n0, p.seqlen_k);
    const bool any = n0 < nk && i_first < m_blocks;
    if (any) load_q_tile(i_first, 0);
    cp_async_commit();
    float acc_dk[Tr::kAccTilesD][4], acc_dv[Tr::kAccTilesD][4];  // line 8: dK_j = dV_j = 0 on chip
#pragma unroll
    for (int nt = 0; nt < Tr::kAccTilesD; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_dk[nt][e] = acc_dv[nt][e] = 0.f;

    for (int i = any ? i_first : m_blocks; i < m_blocks; ++i) {  // line 9: inner loop over Q tiles
      const int stage = (i - i_first) % 2;
      if (i + 1 < m_blocks) {
        load_q_tile(i + 1, stage ^ 1);
        cp_async_commit();
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const int m0 = i * Tr::kBlockM;
      rowsum_do_o<Tr>(sdO + stage * Tr::kSmemQ, sO + stage * Tr::kSmemQ, sD + stage * Tr::kBlockM, m0, p.seqlen_q);
      __syncthreads();
      bwd_tile_step<Tr, kCausal, kDropout>(p, sK, sV, sQ + stage * Tr::kSmemQ, sdO + stage * Tr::kSmemQ, sdS,
                                           sLse + stage * Tr::kBlockM, sD + stage * Tr::kBlockM, b, h, n0, m0, nk,
                                           acc_dk, acc_dv, [](float* dst, float x0, float x1) {  // line 21
                                             if constexpr (kAtomicDq) {  // other blocks add into the same rows
                                               atomic_add2(dst, x0, x1);
                                             } else {  // one 8-byte load and store: one sector per row and 8 columns
                                               float2* d2 = reinterpret_cast<float2*>(dst);
                                               const float2 v = *d2;
                                               *d2 = make_float2(v.x + x0, v.y + x1);
                                             }
                                           });
      __syncthreads();
    }

    // Line 24: write dK_j (scaled) and dV_j.
    store_dkdv<Tr>(p, sK, sV, acc_dk, acc_dv, kv_off, n0);
  }
}

}  // namespace flashio::kernels
