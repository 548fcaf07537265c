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
// Run: build/flashio run --method flash1 --seqlen 4096 --head-dim 64 [--block-c 128]
#pragma once
#include <cmath>

#include "kernels/common/mma.cuh"
#include "kernels/common/dropout_fragments.cuh"
#include "bench/core/philox.h"
#include "kernels/flash1/flash1_configs.h"
#include "kernels/flash1/flash1_params.h"
#include "kernels/flash2/flash2_bwd_kernel.cuh"
#include "kernels/flash2/flash2_fwd_kernel.cuh"

namespace flashio::kernels {

template <typename Tr, bool kCausal, bool kDropout>
__global__ void __launch_bounds__(Tr::kNThreads) flash1_fwd_kernel(const Flash1FwdParams fp) {
  using T = typename Tr::Element;
  const FwdParams& p = fp.base;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);  // (kBlockN, kStride)
  T* sV = sK + Tr::kSmemKV;                 // (kBlockN, kStride)
  T* sQ = sV + Tr::kSmemKV;                 // (2, kBlockM, kStride)

  const int h = blockIdx.x, b = blockIdx.y, z = blockIdx.z, splits = fp.splits;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int nk = p.key_lengths ? min(p.key_lengths[b], p.seqlen_k) : p.seqlen_k;
  const int n_blocks = (nk + Tr::kBlockN - 1) / Tr::kBlockN;
  const int m_blocks = (p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM;
  const size_t row_base = (size_t(b) * p.heads + h) * p.seqlen_q;  // first query row of this head
  const T* q = static_cast<const T*>(p.q) + row_base * Tr::kHeadDim;
  const size_t kv_off = (size_t(b) * p.kv_heads + h / (p.heads / p.kv_heads)) * p.seqlen_k * Tr::kHeadDim;
  const T* k = static_cast<const T*>(p.k) + kv_off;
  const T* v = static_cast<const T*>(p.v) + kv_off;
  T* o = static_cast<T*>(p.o) + row_base * Tr::kHeadDim;
  float* o_acc = fp.o_accum + row_base * Tr::kHeadDim;
  float* m_hbm = fp.row_max + row_base;
  float* l_hbm = fp.row_sum + row_base;
  float* lse = p.lse + row_base;
  const int warp_row = warp * Tr::kRowsPerWarp;
  const int a_row = lane % 16, a_col = (lane / 16) * 8;
  const int b_row = (lane % 8) + (lane / 16) * 8, b_col = ((lane / 8) % 2) * 8;
  const int v_row = (lane % 8) + ((lane / 8) % 2) * 8, v_col = (lane / 16) * 8;

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
    const int i_first = kCausal ? min(n0 / Tr::kBlockM, m_blocks) : 0;
    const int i_mine = i_first + ((z - i_first) % splits + splits) % splits;  // this block's first Q tile ≥ i_first
    if (i_mine >= m_blocks) continue;  // no Q tile of this block sees K_j: K_j, V_j not loaded
    __syncthreads();  // the previous K/V tile and Q stages are no longer read
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
      const T* sQs = sQ + stage * Tr::kSmemQ;
      const int m0 = i * Tr::kBlockM;
      const int last_j = kCausal ? min(n_blocks - 1, (m0 + Tr::kBlockM - 1) / Tr::kBlockN) : n_blocks - 1;

      // S_ij = τ·Q_i K_jᵀ (line 9): (16 rows of this warp, kBlockN), raw scores.
      float acc_s[Tr::kNTilesS][4];
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[nt][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < Tr::kKStepsQK; ++kk) {
        uint32_t a[4];
        ldmatrix_x4(a, smem_addr(sQs + (warp_row + a_row) * Tr::kStride + kk * 16 + a_col));
#pragma unroll
        for (int np = 0; np < Tr::kNTilesS / 2; ++np) {
          uint32_t bk[4];
          ldmatrix_x4(bk, smem_addr(sK + (np * 16 + b_row) * Tr::kStride + kk * 16 + b_col));
          mma_16816<T>(acc_s[2 * np], a, bk[0], bk[1]);
          mma_16816<T>(acc_s[2 * np + 1], a, bk[2], bk[3]);
        }
      }
      const bool tail = n0 + Tr::kBlockN > nk;
      const bool diagonal = kCausal && n0 + Tr::kBlockN - 1 > m0 + warp_row;
      if (tail || diagonal) {  // line 10 (masking)
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = m0 + warp_row + g + (e >= 2 ? 8 : 0);
            const int col = n0 + nt * 8 + 2 * t + (e & 1);
            if (col >= nk || (kCausal && col > row)) acc_s[nt][e] = -INFINITY;
          }
      }

      // m̃_ij = rowmax, P̃_ij = exp(S − m̃), ℓ̃_ij = rowsum(P̃) (line 11), ℓ̃ summed in fp32. P̃ is
      // packed to the element type as it is computed — the P̃·V product's A operand — so that the
      // fp32 scores die here: 64 registers instead of 128 at Bc = 256 (the dropout variant spilled).
      float tile_max[2], tile_sum[2];
      uint32_t p_tile[Tr::kNTilesS][2];  // (kNTilesS, rows g / g+8): P̃ of columns 2t, 2t+1, packed
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesS; ++nt) mx = fmaxf(mx, fmaxf(acc_s[nt][2 * hr], acc_s[nt][2 * hr + 1]));
        mx = quad_max(mx);
        const float m_scaled = mx == -INFINITY ? 0.f : mx * p.scale_log2;
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesS; ++nt) {
          const float x0 = exp2f(fmaf(acc_s[nt][2 * hr], p.scale_log2, -m_scaled));
          const float x1 = exp2f(fmaf(acc_s[nt][2 * hr + 1], p.scale_log2, -m_scaled));
          sum += x0;
          sum += x1;
          p_tile[nt][hr] = pack2<T>(x0, x1);
        }
        tile_max[hr] = mx;
        tile_sum[hr] = quad_sum(sum);
      }
      if constexpr (kDropout) {  // line 12, after ℓ̃ took P̃: two n8 tiles per call, one Philox draw per lane
        static_assert(Tr::kNTilesS % 2 == 0, "dropout_keep_fwd covers n8 tiles in pairs");
        const uint32_t row = uint32_t(m0 + warp_row + g);
#pragma unroll
        for (int np = 0; np < Tr::kNTilesS / 2; ++np) {
          const uint32_t group = uint32_t(n0 + np * 16) / kDropoutColumnsPerDraw;
          const FragmentKeep<false> keep = dropout_keep_fwd(p.seed, uint32_t(b), uint32_t(h), row, row + 8, group,
                                                            group + 1, p.dropout_threshold, lane);
#pragma unroll
          for (int k = 0; k < 2; ++k)
#pragma unroll
            for (int r = 0; r < 2; ++r) p_tile[2 * np + k][r] &= keep.pair_mask(k, r);
        }
      }

      // P̃·V_j (line 15's new term), a fresh accumulator: (16 rows, kHeadDim).
      float acc_pv[Tr::kNTilesO][4];
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesO; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_pv[nt][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < Tr::kKStepsPV; ++kk) {
        uint32_t a[4];  // A fragment of P̃ (16 rows, k16 step kk)
        a[0] = p_tile[2 * kk][0];
        a[1] = p_tile[2 * kk][1];
        a[2] = p_tile[2 * kk + 1][0];
        a[3] = p_tile[2 * kk + 1][1];
#pragma unroll
        for (int dp = 0; dp < Tr::kNTilesO / 2; ++dp) {
          uint32_t bv[4];
          ldmatrix_x4_trans(bv, smem_addr(sV + (kk * 16 + v_row) * Tr::kStride + dp * 16 + v_col));
          mma_16816<T>(acc_pv[2 * dp], a, bv[0], bv[1]);
          mma_16816<T>(acc_pv[2 * dp + 1], a, bv[2], bv[3]);
        }
      }

      // Lines 13-16: read m_i, ℓ_i, O_i from HBM, combine, write them back (or, on the
      // last visit, O in the element type and L = m + log ℓ).
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int r = m0 + warp_row + g + hr * 8;
        if (r >= p.seqlen_q) continue;
        const float m_old = j > 0 ? m_hbm[r] : -INFINITY;
        const float l_old = j > 0 ? l_hbm[r] : 0.f;
        const float m_new = fmaxf(m_old, tile_max[hr]);
        float c_old = 0.f, c_new = 0.f;
        if (m_new != -INFINITY) {
          c_old = exp2f((m_old - m_new) * p.scale_log2);
          c_new = exp2f((tile_max[hr] - m_new) * p.scale_log2);
        }
        const float l_new = c_old * l_old + c_new * tile_sum[hr];
        const float inv = l_new > 0.f ? 1.f / l_new : 0.f;
        const float w_old = l_old * c_old * inv;
        const float w_new = c_new * inv * (kDropout ? p.dropout_scale : 1.f);
        const bool last = j == last_j;
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesO; ++nt) {
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
        if (t == 0) {
          if (last) {
            lse[r] = l_new > 0.f ? (m_new * p.scale_log2 + __log2f(l_new)) * kLn2 : -INFINITY;
          }
          m_hbm[r] = m_new;  // ℓ and m are kept for the backward (Algorithm 4 reads them)
          l_hbm[r] = l_new;
        }
      }
      __syncthreads();  // this Q stage is overwritten by the prefetch two iterations on
    }
  }
}

// D_i = rowsum(dO_i ∘ O_i) for the kBlockM rows of a stage (Algorithm 4, line 19).
template <typename Tr>
__device__ __forceinline__ void rowsum_do_o(const typename Tr::Element* sdO, const typename Tr::Element* sO,
                                            float* sD, int m0, int seqlen_q) {
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
  T* sK = reinterpret_cast<T*>(smem_raw);  // (kBlockN, kStride)
  T* sV = sK + Tr::kSmemKV;                 // (kBlockN, kStride)
  T* sQ = sV + Tr::kSmemKV;                 // (2, kBlockM, kStride)
  T* sdO = sQ + 2 * Tr::kSmemQ;             // (2, kBlockM, kStride)
  T* sO = sdO + 2 * Tr::kSmemQ;             // (2, kBlockM, kStride)
  T* sdS = sO + 2 * Tr::kSmemQ;             // (kBlockN, kStrideS)
  float* sLse = reinterpret_cast<float*>(sdS + Tr::kSmemDs);  // (2, kBlockM)
  float* sD = sLse + 2 * Tr::kBlockM;                          // (2, kBlockM)

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
    load_tile<Tr, Tr::kBlockM>(sdO + stage * Tr::kSmemQ, static_cast<const T*>(p.d_o) + row_base * Tr::kHeadDim, m0, p.seqlen_q);
    load_tile<Tr, Tr::kBlockM>(sO + stage * Tr::kSmemQ, static_cast<const T*>(p.o) + row_base * Tr::kHeadDim, m0, p.seqlen_q);
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
    __syncthreads();  // the previous tile's dK/dV staging in sK/sV is written out
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
