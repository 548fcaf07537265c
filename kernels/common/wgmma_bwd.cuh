// The per-Q-tile steps of the Hopper (wgmma) attention backward, for one warpgroup that owns 64
// keys of a K/V tile of kBlockN keys and streams Q tiles of kBlockM queries (FlashAttention-2
// Algorithm 2, transposed: rows = keys, columns = queries). Shared by flash2's wgmma backward
// (kernels/flash2/hopper/flash2_bwd_wgmma.cuh: cp.async loads, __syncthreads) and flash3's
// (kernels/flash3/flash3_bwd_kernel.cuh: TMA producer, mbarriers), which differ in how the tiles
// arrive and when the warpgroups meet, not in the math:
//
//   scores        Sᵀ = K_w·Q_iᵀ, dPᵀ = V_w·dO_iᵀ   wgmma m64n{Br}k16, both operands shared, K-major
//   probabilities Pᵀ = exp2(Sᵀ·scale·log2 e − L) masked (∘Z with dropout) and
//                 dSᵀ = Pᵀ∘(dPᵀ∘Z − D), in the accumulators (lines 11, 15)
//   store_ds_t    dSᵀ into a swizzled (kBlockN, kBlockM) panel, for dQ
//   issue_dkdv    dV_w += Pᵀ·dO_i, dK_w += dSᵀ·Q_i  A from registers, B MN-major (lines 12, 17)
//   issue_dq      dQ_i += dS·K_j                   A = dS read M-major from dSᵀ, B = K_j MN-major (line 16)
//   stage_dkdv    dK·scale and dV into the warpgroup's rows of swizzled (kBlockN, d) tiles (line 21)
//
// Accumulator layout (wgmma m64nN, per warp 16 rows): element 4j + e of a thread lies at row
// 16·warp + g (+8 for e ≥ 2), column 8j + 2t + (e & 1); g = lane / 4, t = lane % 4.
#pragma once
#include <cmath>

#include "kernels/common/attention_params.h"
#include "kernels/common/dropout_fragments.cuh"
#include "kernels/common/wgmma.cuh"

namespace flashio::kernels {

template <typename T, int kHeadDim, int kBlockM, int kBlockN>
struct WgmmaBwdSteps {
  static constexpr int kAccSt = kBlockM / 2;   // fp32 registers per thread of Sᵀ (and dPᵀ): (64, Br)
  static constexpr int kAccKV = kHeadDim / 2;  // of dK (and dV): (64, d)
  static_assert(kBlockM == kPanelColumns, "dSᵀ is one 64-column panel: dS is read M-major in one block");
  static_assert(kHeadDim % kPanelColumns == 0, "whole 64-column panels");

  // Sᵀ = K_w·Q_iᵀ and dPᵀ = V_w·dO_iᵀ (lines 9 and 13, transposed): (64 keys, Br), complete on return.
  // k_rows, v_rows: the warpgroup's first key row of sK, sV; q_tile, do_tile: the Q_i, dO_i tiles.
  static __device__ __forceinline__ void scores(float (&acc_s)[kAccSt], float (&acc_dp)[kAccSt], uint32_t k_rows,
                                                uint32_t v_rows, uint32_t q_tile, uint32_t do_tile) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      Wgmma<T, kBlockM>::template ss<0, 0>(acc_s, desc_kmajor(k_rows, kBlockN, kk), desc_kmajor(q_tile, kBlockM, kk),
                                           kk > 0);
      Wgmma<T, kBlockM>::template ss<0, 0>(acc_dp, desc_kmajor(v_rows, kBlockN, kk), desc_kmajor(do_tile, kBlockM, kk),
                                           kk > 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operands(acc_s);
    wgmma_fence_operands(acc_dp);
  }

  // Pᵀ = exp2(Sᵀ·scale·log2 e − L) (line 11), masked, Pᵀ∘Z kept in acc_s for dV; dSᵀ = Pᵀ∘(dPᵀ∘Z − D)
  // (line 15) in acc_dp for dK and dQ. lse: the tile's L·log2 e per query (+inf: P = 0), d_sum:
  // its D; n0: the K/V tile's first key, nk: the batch's keys, key_row: this warp's first key in
  // the tile, m0: the Q tile's first query, (b, h): the batch and query head (dropout's draws).
  // probabilities' mask: none; every element; a select where the tile can mask; a pass setting the
  // masked scores to −inf before the loop, run only where the tile can mask (the loop itself one copy)
  enum class Mask { Off, On, Select, Pass };
  template <bool kCausal, bool kDropout, Mask kMask = Mask::Select>
  static __device__ __forceinline__ void probabilities(float (&acc_s)[kAccSt], float (&acc_dp)[kAccSt],
                                                       const BwdParams& p, const float* lse, const float* d_sum, int n0,
                                                       int nk, int key_row, int m0, int b, int h, int lane) {
    const int g = lane / 4, t = lane % 4;
    const bool tail = n0 + kBlockN > nk;
    const bool diagonal = kCausal && n0 + key_row + 15 > m0;
    const bool masked = kMask == Mask::On || (kMask != Mask::Off && (tail || diagonal));
    if (kMask == Mask::Pass && masked) {
#pragma unroll
      for (int i = 0; i < kAccSt; ++i) {
        const int c = (i / 4) * 8 + 2 * t + (i & 1);
        const int key = n0 + key_row + g + ((i % 4) >= 2 ? 8 : 0);
        if (key >= nk || (kCausal && key > m0 + c)) acc_s[i] = -INFINITY;  // exp2 below gives P = 0
      }
    }
    FragmentKeep<true> keep{};  // dropout: n8 tiles in pairs, one Philox draw per lane
#pragma unroll
    for (int j = 0; j < kBlockM / 8; ++j) {
      if constexpr (kDropout) {
        if (j % 2 == 0) {
          const uint32_t group = uint32_t(n0 + key_row) / kDropoutColumnsPerDraw;
          const uint32_t i0 = uint32_t(m0 + j * 8 + 2 * t);
          keep = dropout_keep_bwd(p.seed, uint32_t(b), uint32_t(h), group, group + 1, i0, i0 + 8, p.dropout_threshold,
                                  lane);
        }
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = j * 8 + 2 * t + (e & 1);  // query row in the tile
        const int key = n0 + key_row + g + (e >= 2 ? 8 : 0);
        float pe = exp2f(fmaf(acc_s[4 * j + e], p.scale_log2, -lse[c]));
        if (kMask != Mask::Pass && masked && (key >= nk || (kCausal && key > m0 + c))) pe = 0.f;
        const float z = kDropout ? (keep(j % 2, e) ? p.dropout_scale : 0.f) : 1.f;
        acc_dp[4 * j + e] = pe * (acc_dp[4 * j + e] * z - d_sum[c]);
        acc_s[4 * j + e] = pe * z;
      }
    }
  }

  // The same, with the mask's compares only where a key can be masked (the key tail, a warp's keys
  // crossing the causal diagonal): a branch on the warp-uniform flag instead of probabilities'
  // select per element in every tile (H100, flash3 d 64 causal: with the select, 0.82× the
  // non-causal kernel's instructions for 0.52× its tiles). Where the registers are short (flash3's
  // d 128 consumers) the loop's second copy makes ptxas serialise the wgmmas (C7512): there
  // Mask::Pass masks the scores before the loop's one copy instead.
  template <bool kCausal, bool kDropout>
  static __device__ __forceinline__ void probabilities_branched(float (&acc_s)[kAccSt], float (&acc_dp)[kAccSt],
                                                                const BwdParams& p, const float* lse,
                                                                const float* d_sum, int n0, int nk, int key_row,
                                                                int m0, int b, int h, int lane) {
    // probabilities' tail || diagonal, spelled out: the same test through one shared inline helper
    // moved this kernel's SASS (d 64 causal; cubin hashes, scripts/cubin_text_hashes.py).
    if (n0 + kBlockN > nk || (kCausal && n0 + key_row + 15 > m0))
      probabilities<kCausal, kDropout, Mask::On>(acc_s, acc_dp, p, lse, d_sum, n0, nk, key_row, m0, b, h, lane);
    else
      probabilities<kCausal, kDropout, Mask::Off>(acc_s, acc_dp, p, lse, d_sum, n0, nk, key_row, m0, b, h, lane);
  }

  // dSᵀ into sdS (rows = keys, columns = queries: one swizzled 64-column panel of kBlockN rows).
  static __device__ __forceinline__ void store_ds_t(unsigned char* sdS, const float (&acc_dp)[kAccSt], int key_row,
                                                    int g, int t) {
#pragma unroll
    for (int j = 0; j < kBlockM / 8; ++j)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr)
        *reinterpret_cast<uint32_t*>(sdS + swizzle128_chunk_offset(kBlockN, key_row + g + 8 * hr, j) + 4 * t) =
            pack2<T>(acc_dp[4 * j + 2 * hr], acc_dp[4 * j + 2 * hr + 1]);
  }

  // dV_w += Pᵀ·dO_i (line 12), dK_w += dSᵀ·Q_i (line 17): A from registers (Pᵀ, dSᵀ in 16 bits),
  // B read MN-major. Issued and committed, not waited for.
  static __device__ __forceinline__ void issue_dkdv(float (&acc_dv)[kAccKV], float (&acc_dk)[kAccKV],
                                                    const float (&acc_s)[kAccSt], const float (&acc_dp)[kAccSt],
                                                    uint32_t do_tile, uint32_t q_tile) {
    uint32_t a_p[kBlockM / 16][4], a_ds[kBlockM / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        a_p[kk][r] = pack2<T>(acc_s[8 * kk + 2 * r], acc_s[8 * kk + 2 * r + 1]);
        a_ds[kk][r] = pack2<T>(acc_dp[8 * kk + 2 * r], acc_dp[8 * kk + 2 * r + 1]);
      }
    }
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk) {
      Wgmma<T, kHeadDim>::template rs<1>(acc_dv, a_p[kk], desc_mnmajor(do_tile, kBlockM, kk), 1);
      Wgmma<T, kHeadDim>::template rs<1>(acc_dk, a_ds[kk], desc_mnmajor(q_tile, kBlockM, kk), 1);
    }
    wgmma_commit();
  }

  // dQ_i = dS·K_j over kKeys keys (line 16): (Br queries, kColumns). ds_keys: the first key row of
  // dSᵀ in shared memory; k_cols: the first of the kColumns columns of sK (a panel, or 64·c bytes
  // into one). Issued and committed, not waited for.
  template <int kColumns, int kKeys>
  static __device__ __forceinline__ void issue_dq(float (&acc_dq)[kColumns / 2], uint32_t ds_keys, uint32_t k_cols) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk)
      Wgmma<T, kColumns>::template ss<1, 1>(acc_dq, desc_mnmajor(ds_keys, kBlockN, kk),
                                            desc_mnmajor(k_cols, kBlockN, kk), kk > 0);
    wgmma_commit();
  }

  // dK_j = scale·acc_dk, dV_j = acc_dv (line 21) into rows r_base = key_row + g (and r_base + 8)
  // of the swizzled (kBlockN, d) tiles sK, sV, for whole-row stores.
  static __device__ __forceinline__ void stage_dkdv(unsigned char* sK, unsigned char* sV, const float (&acc_dk)[kAccKV],
                                                    const float (&acc_dv)[kAccKV], float scale, int r_base, int t) {
#pragma unroll
    for (int j = 0; j < kHeadDim / 8; ++j)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int off = swizzle128_chunk_offset(kBlockN, r_base + 8 * hr, j) + 4 * t;
        *reinterpret_cast<uint32_t*>(sK + off) =
            pack2<T>(acc_dk[4 * j + 2 * hr] * scale, acc_dk[4 * j + 2 * hr + 1] * scale);
        *reinterpret_cast<uint32_t*>(sV + off) = pack2<T>(acc_dv[4 * j + 2 * hr], acc_dv[4 * j + 2 * hr + 1]);
      }
  }
};

}  // namespace flashio::kernels
