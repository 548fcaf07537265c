// flash2 backward on Hopper: FlashAttention-2, Algorithm 2 (Dao, 2023), with the five products
// on Hopper's warpgroup tensor-core instruction (wgmma, sm_90a).
//
// Launches and loop order are those of kernels/flash2/flash2_bwd_kernel.cuh: preprocess
// (D = rowsum(dO∘O), the fp32 dQ accumulator zeroed), main, convert (dQ = scale·accumulator).
// The main kernel runs one thread block per (K/V tile j of Bc = 128 keys, K/V head, batch) —
// parallel over the key blocks (FA-2 §3.2) — keeps K_j, V_j in shared memory and dK_j, dV_j in
// registers, and streams every Q tile i (Br = 64 rows: Q_i, dO_i, L_i, D_i, double-buffered by
// cp.async) of every query head of its GQA group. Causal: Q tiles entirely above the diagonal
// of key tile j are skipped; the mask is applied only on tiles crossing it or the key tail.
//
// Two warpgroups; warpgroup w owns keys [64w, 64w + 64) of the tile. Per Q tile:
//   Sᵀ  = K_w·Q_iᵀ     wgmma m64n64k16, A = K_w, B = Q_i, both shared, K-major (d/16 steps)
//   dPᵀ = V_w·dO_iᵀ    likewise with V_w and dO_i
//   Pᵀ = exp(Sᵀ·scale − L), dSᵀ = Pᵀ∘(dPᵀ − D)   in registers (rows = keys, columns = queries)
//   dV_w += Pᵀ·dO_i    wgmma m64n{d}k16, A = Pᵀ from registers, B = dO_i read MN-major
//   dK_w += dSᵀ·Q_i    likewise with dSᵀ and Q_i
//   dQ_i += dS·K_j     A = dS read M-major from dSᵀ staged in shared memory, B = K_j read
//                      MN-major; split between the warpgroups by columns (each takes d/2
//                      columns over all 128 keys: one panel for d = 128, half a panel — a
//                      descriptor starting 64 bytes into the swizzled rows — for d = 64), then
//                      added to the fp32 accumulator with red.global.add.v2.f32 (two adjacent
//                      columns per instruction). kDqByKeys (each warpgroup its own 64 keys
//                      over all d columns: twice the reductions) is the alternative, kept for
//                      measurement (kernels/flash2/NOTES.md).
// Shared tiles use the 128-byte swizzle (kernels/common/wgmma.cuh): no padding.
//
// IO per (batch, K/V head), G query heads per K/V head, Tc = ⌈Nk/Bc⌉: K, V read once, dK, dV
// written once; Q, dO read Tc·G times, L and D read Tc·G times; dQ accumulated Tc·G·P times,
// P = 1 (column split) or 2 (key split: each warpgroup adds a partial over its 64 keys).
//
// Dropout (kDropout) regenerates the forward's Philox mask Z (dropout_keep_bwd: the accumulator
// fragments are mma.sync's, transposed): Pᵀ∘Z for dV, dSᵀ = Pᵀ∘(dPᵀ∘Z − D).
//
// Supported here: fp16/bf16, d ∈ {64, 128}, causal and key-padding masks, dropout, GQA/MQA,
// Nq ≠ Nk, any N. The deterministic mode and block-sparse lists run on the mma.sync kernel.
//
// Run: build/flashio run --method flash2 --pass bwd --seqlen 4096 --head-dim 128   (an H100/H200)
#pragma once
#include <cmath>

#include "kernels/common/wgmma.cuh"
#include "kernels/flash2/flash2_bwd_kernel.cuh"
#include "kernels/flash2/flash2_params.h"
#include "kernels/flash2/hopper/flash2_fwd_wgmma.cuh"

namespace flashio::kernels {

template <typename Element_, int kHeadDim_>
struct Flash2BwdWgmmaTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockN = kFlash2BwdWgmmaTile.block_c;  // Bc: keys per thread block, 64 per warpgroup
  static constexpr int kBlockM = kFlash2BwdWgmmaTile.block_r;  // Br: queries per streamed Q tile
  static constexpr int kWarpGroups = kBlockN / 64;
  static constexpr int kNThreads = 128 * kWarpGroups;
  // dQ split between the warpgroups: by columns (d/2 each), or by keys (kDqByKeys).
  static constexpr bool kDqByKeys = false;
  static constexpr int kDqColumns = kDqByKeys ? kHeadDim : kHeadDim / kWarpGroups;  // N of each warpgroup's dQ
  static constexpr int kDqKeys = kDqByKeys ? 64 : kBlockN;                  // K of each warpgroup's dQ
  static constexpr int kAccSt = kBlockM / 2;    // fp32 registers per thread of Sᵀ (and dPᵀ): (64, Br)
  static constexpr int kAccKV = kHeadDim / 2;   // of dK (and dV): (64, d)
  static constexpr int kAccDq = kDqColumns / 2; // of dQ: (Br, kDqColumns)
  static constexpr int kTileKVBytes = kBlockN * kHeadDim * 2;  // K_j or V_j: (kBlockN, d) swizzle128
  static constexpr int kTileQBytes = kBlockM * kHeadDim * 2;   // Q_i or dO_i per stage: (kBlockM, d)
  static constexpr int kTileDsBytes = kBlockN * kBlockM * 2;   // dSᵀ: (kBlockN, kBlockM) swizzle128
  static constexpr int kSmemBytes = flash2_bwd_wgmma_smem_bytes(kHeadDim);

  static_assert(kBlockM == kPanelColumns, "dSᵀ is one 64-column panel: dS is read M-major in one block");
  static_assert(kHeadDim % kPanelColumns == 0, "whole 64-column panels");
  static_assert(kDqByKeys || (kPanelColumns % kDqColumns == 0 || kDqColumns % kPanelColumns == 0),
                "a warpgroup's dQ columns are whole panels or an aligned part of one");
  static_assert(kSmemBytes == 2 * kTileKVBytes + 4 * kTileQBytes + kTileDsBytes + 4 * kBlockM * 4 + kSwizzleAtomBytes,
                "host formula");
};

// Named barrier over one warpgroup's 128 threads (ids 1, 2, …; 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_barrier(int wg) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(wg + 1) : "memory");
}

template <typename Tr, bool kCausal, bool kDropout>
__global__ void __launch_bounds__(Tr::kNThreads, 1) flash2_bwd_wgmma_kernel(const BwdParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = typename Tr::Element;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* sK = align_to_swizzle_atom(smem_raw);  // (kBlockN, d)
  unsigned char* sV = sK + Tr::kTileKVBytes;             // (kBlockN, d)
  unsigned char* sQ = sV + Tr::kTileKVBytes;             // (2, kBlockM, d)
  unsigned char* sdO = sQ + 2 * Tr::kTileQBytes;         // (2, kBlockM, d)
  unsigned char* sdS = sdO + 2 * Tr::kTileQBytes;        // (kBlockN, kBlockM): dSᵀ of this iteration
  float* sLse = reinterpret_cast<float*>(sdS + Tr::kTileDsBytes);  // (2, kBlockM) L·log2(e); +inf: no key
  float* sD = sLse + 2 * Tr::kBlockM;                               // (2, kBlockM)

  const int n_block = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const int group = p.heads / p.kv_heads;
  const int nk = p.key_lengths ? min(p.key_lengths[b], p.seqlen_k) : p.seqlen_k;
  const int n0 = n_block * Tr::kBlockN;  // first key of this block
  const int m_blocks = (p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM;
  // Causal: Q tiles whose last row is before the first key see none of it.
  const int m_first = kCausal ? min(n0 / Tr::kBlockM, m_blocks) : 0;
  const int per_head = n0 < nk ? m_blocks - m_first : 0;  // a block past the valid keys: dK = dV = 0
  const int iterations = group * per_head;

  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int key_row = wg * 64 + ((threadIdx.x % 128) / 32) * 16;  // this warp's first key in the tile

  const size_t kv_off = (size_t(b) * p.kv_heads + hk) * p.seqlen_k * Tr::kHeadDim;
  load_tile_sw128<Tr::kBlockN, Tr::kHeadDim, Tr::kNThreads>(sK, static_cast<const T*>(p.k) + kv_off, n0, p.seqlen_k);
  load_tile_sw128<Tr::kBlockN, Tr::kHeadDim, Tr::kNThreads>(sV, static_cast<const T*>(p.v) + kv_off, n0, p.seqlen_k);
  cp_async_commit();

  // Issues the loads of iteration `it` into `stage`: Q_i, dO_i (cp.async), L_i, D_i.
  auto load_iteration = [&](int it, int stage) {
    const int h = hk * group + it / per_head;
    const int m0 = (m_first + it % per_head) * Tr::kBlockM;
    const size_t q_off = ((size_t(b) * p.heads + h) * p.seqlen_q) * Tr::kHeadDim;
    load_tile_sw128<Tr::kBlockM, Tr::kHeadDim, Tr::kNThreads>(sQ + stage * Tr::kTileQBytes,
                                                               static_cast<const T*>(p.q) + q_off, m0, p.seqlen_q);
    load_tile_sw128<Tr::kBlockM, Tr::kHeadDim, Tr::kNThreads>(sdO + stage * Tr::kTileQBytes,
                                                               static_cast<const T*>(p.d_o) + q_off, m0, p.seqlen_q);
    const size_t row_off = (size_t(b) * p.heads + h) * p.seqlen_q;
    for (int r = threadIdx.x; r < Tr::kBlockM; r += Tr::kNThreads) {
      const int i = m0 + r;
      const float l = i < p.seqlen_q ? p.lse[row_off + i] : -INFINITY;
      sLse[stage * Tr::kBlockM + r] = l == -INFINITY ? INFINITY : l * kLog2e;  // no key seen: P = 0
      sD[stage * Tr::kBlockM + r] = i < p.seqlen_q ? p.d_sum[row_off + i] : 0.f;
    }
  };

  float acc_dk[Tr::kAccKV];  // (this warpgroup's 64 keys, d), without the softmax scale
  float acc_dv[Tr::kAccKV];
#pragma unroll
  for (int i = 0; i < Tr::kAccKV; ++i) acc_dk[i] = acc_dv[i] = 0.f;

  if (iterations > 0) load_iteration(0, 0);
  cp_async_commit();

  const uint32_t k_rows = smem_addr(sK) + wg * 64 * kSwizzleRowBytes;  // this warpgroup's keys
  const uint32_t v_rows = smem_addr(sV) + wg * 64 * kSwizzleRowBytes;
  // Two barriers per Q tile. The first publishes tile `it` (copies made visible to the async
  // proxy first) and proves that every thread is done with tile it − 1 — its stage, its L/D
  // and dSᵀ — so the prefetch of tile it + 1 goes out right after it; the second publishes dSᵀ.
  for (int it = 0; it < iterations; ++it) {
    const int stage = it % 2;
    cp_async_wait<0>();
    fence_proxy_async_shared();
    __syncthreads();
    if (it + 1 < iterations) {
      load_iteration(it + 1, stage ^ 1);
      cp_async_commit();
    }
    const int h = hk * group + it / per_head;
    const int m0 = (m_first + it % per_head) * Tr::kBlockM;
    const uint32_t q_tile = smem_addr(sQ + stage * Tr::kTileQBytes);
    const uint32_t do_tile = smem_addr(sdO + stage * Tr::kTileQBytes);
    const float* sLses = sLse + stage * Tr::kBlockM;
    const float* sDs = sD + stage * Tr::kBlockM;

    // Sᵀ = K_j·Q_iᵀ and dPᵀ = V_j·dO_iᵀ (Algorithm 2, lines 9 and 13, transposed): (64 keys, Br).
    float acc_s[Tr::kAccSt], acc_dp[Tr::kAccSt];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kHeadDim / 16; ++kk) {
      Wgmma<T, Tr::kBlockM>::template ss<0, 0>(acc_s, desc_kmajor(k_rows, Tr::kBlockN, kk),
                                                desc_kmajor(q_tile, Tr::kBlockM, kk), kk > 0);
      Wgmma<T, Tr::kBlockM>::template ss<0, 0>(acc_dp, desc_kmajor(v_rows, Tr::kBlockN, kk),
                                                desc_kmajor(do_tile, Tr::kBlockM, kk), kk > 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operands(acc_s);
    wgmma_fence_operands(acc_dp);

    // Pᵀ = exp(Sᵀ·scale − L) (line 11), masked; Pᵀ∘Z kept in acc_s for dV, dSᵀ = Pᵀ∘(dPᵀ∘Z − D)
    // (line 15) in acc_dp for dK and dQ. Element 4j + e: key row g (+8 for e ≥ 2) of this warp,
    // query column 8j + 2t + (e & 1).
    const bool tail = n0 + Tr::kBlockN > nk;
    const bool diagonal = kCausal && n0 + key_row + 15 > m0;
    FragmentKeep<true> keep{};  // dropout: n8 tiles in pairs, one Philox draw per lane
#pragma unroll
    for (int j = 0; j < Tr::kBlockM / 8; ++j) {
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
        float pe = exp2f(fmaf(acc_s[4 * j + e], p.scale_log2, -sLses[c]));
        if ((tail || diagonal) && (key >= nk || (kCausal && key > m0 + c))) pe = 0.f;
        const float z = kDropout ? (keep(j % 2, e) ? p.dropout_scale : 0.f) : 1.f;
        acc_dp[4 * j + e] = pe * (acc_dp[4 * j + e] * z - sDs[c]);
        acc_s[4 * j + e] = pe * z;
      }
    }

    // dSᵀ to shared memory for dQ (rows = keys, columns = queries: one swizzled 64-column panel).
#pragma unroll
    for (int j = 0; j < Tr::kBlockM / 8; ++j)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr)
        *reinterpret_cast<uint32_t*>(sdS + swizzle128_chunk_offset(Tr::kBlockN, key_row + g + 8 * hr, j) + 4 * t) =
            pack2<T>(acc_dp[4 * j + 2 * hr], acc_dp[4 * j + 2 * hr + 1]);

    // dV_w += Pᵀ·dO_i (line 12), dK_w += dSᵀ·Q_i (line 17): A from registers, B read MN-major.
    uint32_t a_p[Tr::kBlockM / 16][4], a_ds[Tr::kBlockM / 16][4];
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockM / 16; ++kk) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        a_p[kk][r] = pack2<T>(acc_s[8 * kk + 2 * r], acc_s[8 * kk + 2 * r + 1]);
        a_ds[kk][r] = pack2<T>(acc_dp[8 * kk + 2 * r], acc_dp[8 * kk + 2 * r + 1]);
      }
    }
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockM / 16; ++kk) {
      Wgmma<T, Tr::kHeadDim>::template rs<1>(acc_dv, a_p[kk], desc_mnmajor(do_tile, Tr::kBlockM, kk), 1);
      Wgmma<T, Tr::kHeadDim>::template rs<1>(acc_dk, a_ds[kk], desc_mnmajor(q_tile, Tr::kBlockM, kk), 1);
    }
    wgmma_commit();

    // dQ_i += dS·K_j (line 16), once the dSᵀ rows it reads are in shared memory.
    fence_proxy_async_shared();
    if constexpr (Tr::kDqByKeys) {
      warpgroup_barrier(wg);
    } else {
      __syncthreads();
    }
    float acc_dq[Tr::kAccDq];  // (Br queries, kDqColumns)
    {
      const uint32_t ds_keys = smem_addr(sdS) + (Tr::kDqByKeys ? wg * 64 * kSwizzleRowBytes : 0);
      // Column c of the K tile starts (c / 64) panels and (c % 64)·2 bytes into a row.
      const int col0 = wg * Tr::kDqColumns;
      const uint32_t k_cols = smem_addr(sK) + (Tr::kDqByKeys ? wg * 64 * kSwizzleRowBytes
                                                              : (col0 / kPanelColumns) * Tr::kBlockN * kSwizzleRowBytes +
                                                                    (col0 % kPanelColumns) * 2);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < Tr::kDqKeys / 16; ++kk)
        Wgmma<T, Tr::kDqColumns>::template ss<1, 1>(acc_dq, desc_mnmajor(ds_keys, Tr::kBlockN, kk),
                                                     desc_mnmajor(k_cols, Tr::kBlockN, kk), kk > 0);
      wgmma_commit();
      wgmma_wait<0>();  // dV, dK and dQ
      wgmma_fence_operands(acc_dq);
      wgmma_fence_operands(acc_dv);
      wgmma_fence_operands(acc_dk);
    }
    float* dq = p.dq_accum + ((size_t(b) * p.heads + h) * p.seqlen_q) * Tr::kHeadDim +
                (Tr::kDqByKeys ? 0 : wg * Tr::kDqColumns);
    const int q_row = ((threadIdx.x % 128) / 32) * 16;  // this warp's 16 queries of the tile
#pragma unroll
    for (int j = 0; j < Tr::kDqColumns / 8; ++j)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int i = m0 + q_row + g + 8 * hr;
        if (i < p.seqlen_q)
          atomic_add2(dq + size_t(i) * Tr::kHeadDim + j * 8 + 2 * t, acc_dq[4 * j + 2 * hr], acc_dq[4 * j + 2 * hr + 1]);
      }
  }

  // Epilogue (line 21): dK_j = scale·acc_dk, dV_j = acc_dv, staged through sK / sV (free by
  // then, swizzled) for 16-byte stores of whole rows.
  cp_async_wait<0>();  // no copy in flight (a block past the valid keys loaded K, V and nothing else)
  __syncthreads();     // every warpgroup's last products have read sK, sV
  const int r_base = key_row + g;
#pragma unroll
  for (int j = 0; j < Tr::kHeadDim / 8; ++j)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int off = swizzle128_chunk_offset(Tr::kBlockN, r_base + 8 * hr, j) + 4 * t;
      *reinterpret_cast<uint32_t*>(sK + off) = pack2<T>(acc_dk[4 * j + 2 * hr] * p.scale, acc_dk[4 * j + 2 * hr + 1] * p.scale);
      *reinterpret_cast<uint32_t*>(sV + off) = pack2<T>(acc_dv[4 * j + 2 * hr], acc_dv[4 * j + 2 * hr + 1]);
    }
  __syncthreads();
  T* dk = static_cast<T*>(p.dk) + kv_off;
  T* dv = static_cast<T*>(p.dv) + kv_off;
  constexpr int kChunksPerRow = Tr::kHeadDim / 8;
  for (int c = threadIdx.x; c < Tr::kBlockN * kChunksPerRow; c += Tr::kNThreads) {
    const int r = c / kChunksPerRow, chunk = c % kChunksPerRow;
    if (n0 + r < p.seqlen_k) {
      const int off = swizzle128_chunk_offset(Tr::kBlockN, r, chunk);
      *reinterpret_cast<uint4*>(dk + size_t(n0 + r) * Tr::kHeadDim + chunk * 8) = *reinterpret_cast<const uint4*>(sK + off);
      *reinterpret_cast<uint4*>(dv + size_t(n0 + r) * Tr::kHeadDim + chunk * 8) = *reinterpret_cast<const uint4*>(sV + off);
    }
  }
#else
  __trap();  // compiled for sm_90a only
#endif
}

}  // namespace flashio::kernels
