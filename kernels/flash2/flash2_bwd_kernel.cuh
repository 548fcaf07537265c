// flash2 backward: FlashAttention-2, Algorithm 2 (Dao, 2023).
//
// Three launches:
//   1. preprocess: D_i = rowsum(dO_i ∘ O_i) (fp32), one warp-group of lanes per row;
//      the fp32 dQ accumulator is zeroed by the host (cudaMemsetAsync).
//   2. main: one thread block per (K/V tile j, K/V head, batch) — parallel over the key
//      blocks (FA-2 §3.2). K_j and V_j stay in shared memory; the block walks every query
//      head of its GQA group and every Q tile i (Q_i, dO_i, L_i, D_i double-buffered by
//      cp.async), recomputes S and P from the saved log-sum-exp, and keeps dK_j and dV_j in
//      registers (so GQA sums over the group without atomics). dQ_i += dS_ij·K_j goes to
//      the fp32 accumulator with atomic adds. Warps split the key rows of the tile (16 each):
//      S and dP are computed transposed, Sᵀ = K_j·Q_iᵀ and dPᵀ = V_j·dO_iᵀ, so that Pᵀ and
//      dSᵀ are already A operands of dV += Pᵀ·dO and dK += dSᵀ·Q. dSᵀ goes through shared
//      memory for dQ = dS·K, where warps split the query rows instead.
//      d = 256 (kSplit = 2, kernels/common/mma_bwd_configs.h): a warp's 16 × 256 dK and dV would take 256
//      fp32 registers per thread, so two warps share each 16-key slice of Sᵀ and dPᵀ, one half
//      of the queries each; Pᵀ∘Z and dSᵀ go through shared memory, and every warp then
//      accumulates a 32-key × 64-column tile of dK and dV (128 registers) and a 32-query ×
//      64-column tile of dQ. No product is computed twice; the cost is one more barrier and
//      Pᵀ's trip through shared memory per Q tile.
//   3. convert: dQ = scale · accumulator, in the element type.
// Deterministic mode (kDeterministic, FlashAttention-2's `deterministic=True` semaphore scheme): no
// atomics; the K/V tiles that contribute to Q tile i add to dQ_i one at a time, in the order
// n = 0, 1, …, with plain fp32 loads and stores, so the sum's rounding is the same every run.
// An int per (batch, query head, Q tile), zeroed by the launch, counts the tiles done: block n
// waits until it reads n, adds, then stores n + 1 (see dq_turn_wait / dq_turn_pass). The rank
// of a contributing block among those of Q tile i is n itself because the contributors are
// always the prefix 0 … k of n_block: a block contributes to i iff n0 < nk (key padding: n0
// grows with n) and i >= m_first(n) = min(⌊n0/Br⌋, m_blocks) (causal; ⌊n·Bc/Br⌋ never decreases
// with n), whatever Nq, Nk; every query head of a GQA group has the same tile set, and each head
// has its own semaphores. Block-sparse columns are not prefixes: blocksparse_flash refuses it.
// Causal (top-left): Q tiles entirely above the diagonal of key tile j are skipped; the mask is
// applied only on tiles crossing the diagonal or the key tail. Dropout regenerates the
// forward's Philox mask (bench/core/philox.h), one call per eight elements (dropout_keep_bwd).
//
// IO per (batch, K/V head) with G query heads per K/V head, Tc = ⌈Nk/Bc⌉: K, V read once and
// dK, dV written once; Q, dO read Tc·G times, L and D read Tc·G times; dQ accumulated
// (read-modify-write in L2 via atomics) Tc·G times: ≈ 2·Nk·d·e·2 + Tc·G·(2·Nq·d·e + 8·Nq + 4·Nq·d).
// Deterministic: the dQ atomics become a plain fp32 read and write of dQ_i per visit (through
// L2: ld.global.cg / st.global.cg) plus the semaphore's load(s) and store per visit.
//
// Block-sparse (kSparse, the blocksparse_flash method; the backward matching Algorithm 5): K/V
// tile j visits only the non-zero Q tiles of its column of the tile mask, p.sparse_idx[
// p.sparse_ptr[j] .. p.sparse_ptr[j+1]) (increasing, cut at the causal start), in the same
// first-to-last order; zero tiles are neither loaded nor computed, so the Tc·G terms above scale
// by the density s. A Q row whose blocks are all zero gets no dQ contribution (dQ = 0), and a
// K/V tile whose column is all zero stores dK = dV = 0.
//
// Run: build/flashio run --method flash2 --pass bwd --seqlen 4096 --head-dim 128
#pragma once
#include <cmath>

#include "kernels/common/mma.cuh"
#include "kernels/common/dropout_fragments.cuh"
#include "bench/core/philox.h"
#include "kernels/common/mma_bwd_configs.h"
#include "kernels/flash2/flash2_fwd_kernel.cuh"
#include "kernels/flash2/flash2_params.h"

namespace flashio::kernels {

template <typename Element_, int kHeadDim_, int kBlockN_, int kBlockM_, int kNWarps_>
struct Flash2BwdTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockN = kBlockN_;  // Bc: key rows per thread block (K_j, V_j)
  static constexpr int kBlockM = kBlockM_;  // Br: query rows per inner iteration (Q_i, dO_i)
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr int kKeysPerWarp = 16;                  // rows of Sᵀ, dPᵀ per warp
  static constexpr int kKeyWarps = kBlockN / kKeysPerWarp;  // warps along the keys
  // Warps sharing a 16-key slice of Sᵀ, dPᵀ (mma_bwd_split): 1 up to d = 128; 2 at d = 256,
  // where they split its queries and Pᵀ∘Z, dSᵀ go through shared memory. Split, the products
  // after it have warp tiles of their own: dK, dV and dQ in 32 rows × d/4 columns.
  static constexpr int kSplit = kNWarps / kKeyWarps;
  static constexpr int kQueriesPerWarpS = kBlockM / kSplit;  // columns of Sᵀ, dPᵀ per warp
  static constexpr int kRowsPerWarp = kSplit > 1 ? 32 : 16;  // rows of dK, dV (keys) and of dQ (queries) per warp
  static constexpr int kMTiles = kRowsPerWarp / 16;          // m16 tiles per warp in those products
  static constexpr int kKVWarps = kBlockN / kRowsPerWarp;    // dK, dV: warps along the keys
  static constexpr int kColsPerWarp = kHeadDim / (kNWarps / kKVWarps);  // … columns of dK, dV per warp
  static constexpr int kQueryWarps = kBlockM < kRowsPerWarp ? 1 : kBlockM / kRowsPerWarp;  // dQ: warps along the queries
  static constexpr int kDqRowsPerWarp = kBlockM / kQueryWarps;         // … rows of dQ per warp (16 or 32)
  static constexpr int kDqMTiles = kDqRowsPerWarp / 16;
  static constexpr int kDqColsPerWarp = kHeadDim / (kNWarps / kQueryWarps);  // … columns of dQ per warp
  static constexpr int kNTilesS = kQueriesPerWarpS / 8;  // n8 tiles of Sᵀ (over the queries)
  static constexpr int kKStepsD = kHeadDim / 16;         // k16 steps over d (Sᵀ, dPᵀ)
  static constexpr int kNTilesD = kColsPerWarp / 8;      // n8 tiles of dK, dV (over d) per m16 tile
  static constexpr int kAccTilesD = kMTiles * kNTilesD;  // dK, dV accumulator tiles per warp: [m16][n8]
  static constexpr int kKStepsQ = kBlockM / 16;          // k16 steps over the queries (dK, dV)
  static constexpr int kKStepsK = kBlockN / 16;          // k16 steps over the keys (dQ)
  static constexpr int kDqChunk = 32;                    // dQ columns per pass (bounds registers)
  static constexpr int kStride = kHeadDim + 8;           // smem row, elements: odd number of 16-B chunks
  static constexpr int kStrideS = kBlockM + 8;           // dSᵀ (and Pᵀ) smem row
  static constexpr int kChunksPerRow = kHeadDim / 8;
  static constexpr int kSmemKV = kBlockN * kStride;  // (kBlockN, kStride)
  static constexpr int kSmemQ = kBlockM * kStride;   // (kBlockM, kStride) per stage
  static constexpr int kSmemDs = kBlockN * kStrideS; // (kBlockN, kStrideS)
  static constexpr int kSmemP = kSplit > 1 ? kSmemDs : 0;  // Pᵀ∘Z when the queries are split
  static constexpr int kSmemElements = 2 * kSmemKV + 4 * kSmemQ + kSmemDs + kSmemP;
  static constexpr int kSmemBytes = kSmemElements * 2 + 4 * kBlockM * int(sizeof(float));  // + L, D × 2 stages

  static_assert(kBlockN % kKeysPerWarp == 0 && kNWarps % kKeyWarps == 0, "whole 16-key slices per warp");
  static_assert(kBlockN % kRowsPerWarp == 0 && kNWarps % kKVWarps == 0, "whole warp tiles of dK, dV");
  static_assert(kSplit > 1 || kRowsPerWarp == kKeysPerWarp, "unsplit, dK and dV take Pᵀ, dSᵀ from the warp's registers");
  static_assert(kBlockM % 16 == 0 && kNWarps % kQueryWarps == 0 && kDqRowsPerWarp % 16 == 0, "whole m16 tiles of dQ");
  static_assert(kDqColsPerWarp % kDqChunk == 0 && kNTilesS % 2 == 0 && kNTilesD % 2 == 0, "ldmatrix.x4 pairs");
  static_assert((kBlockM * kChunksPerRow) % kNThreads == 0, "whole copy rounds");
  static_assert(kSmemBytes == mma_bwd_smem_bytes(kHeadDim, {kBlockM, kBlockN, kNWarps, 2}));
};

// D_i = Σ_c dO_ic · O_ic. kLanes lanes per row (a power of two ≥ d/8), 16 bytes each.
template <typename T, int kHeadDim>
__global__ void flash2_bwd_preprocess_kernel(const BwdParams p) {
  constexpr int kChunks = kHeadDim / 8;
  constexpr int kLanes = kChunks <= 4 ? 4 : kChunks <= 8 ? 8 : kChunks <= 16 ? 16 : 32;
  const int64_t rows = int64_t(p.batch) * p.heads * p.seqlen_q;
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  const int lane = threadIdx.x % kLanes;
  float acc = 0.f;
  if (row < rows && lane < kChunks) {
    const uint4 o4 = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.o) + row * kHeadDim + lane * 8);
    const uint4 d4 = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.d_o) + row * kHeadDim + lane * 8);
    const T* o = reinterpret_cast<const T*>(&o4);
    const T* d = reinterpret_cast<const T*>(&d4);
#pragma unroll
    for (int e = 0; e < 8; ++e) acc += float(o[e]) * float(d[e]);
  }
#pragma unroll
  for (int off = kLanes / 2; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (row < rows && lane == 0) p.d_sum[row] = acc;
}

// dQ = scale · accumulator, converted to the element type; 8 elements per thread.
template <typename T>
__global__ void flash2_bwd_convert_dq_kernel(const BwdParams p, int64_t elements) {
  const int64_t e0 = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
  if (e0 >= elements) return;
  const float4 a = *reinterpret_cast<const float4*>(p.dq_accum + e0);
  const float4 b = *reinterpret_cast<const float4*>(p.dq_accum + e0 + 4);
  uint4 out;
  out.x = pack2<T>(a.x * p.scale, a.y * p.scale);
  out.y = pack2<T>(a.z * p.scale, a.w * p.scale);
  out.z = pack2<T>(b.x * p.scale, b.y * p.scale);
  out.w = pack2<T>(b.z * p.scale, b.w * p.scale);
  *reinterpret_cast<uint4*>(static_cast<T*>(p.dq) + e0) = out;
}


// for (i = 0; i < kN; ++i) f(i), fully unrolled, or unrolled by kUnroll where kUnroll > 0 (the
// d = 256 backward's loops: see bwd_tile_step). Two loops so that the fully unrolled one is
// exactly `#pragma unroll`: a `#pragma unroll(kN)` changes ptxas' register allocation.
template <int kN, int kUnroll, typename F>
__device__ __forceinline__ void unrolled_for(F&& f) {
  if constexpr (kUnroll == 0) {
#pragma unroll
    for (int i = 0; i < kN; ++i) f(i);
  } else {
#pragma unroll(kUnroll)
    for (int i = 0; i < kN; ++i) f(i);
  }
}

// The default `before_dq` of bwd_tile_step: nothing to wait for.
struct NoDqWait {
  __device__ __forceinline__ void operator()() const {}
};

// Deterministic dQ (kDeterministic): the turn of K/V tile `rank` on one Q tile's semaphore.
// dq_turn_wait: one thread spins on an acquire load until `rank` tiles have added, then the
// block proceeds (its dQ loads come after the barrier, from L2). dq_turn_pass: every thread's
// dQ stores are made visible (fence), then one thread hands the turn on with a release store.
__device__ __forceinline__ int load_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_gpu(int* p, int v) {
  asm volatile("st.release.gpu.global.s32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void dq_turn_wait(const int* semaphore, int rank) {
  if (threadIdx.x == 0)
    while (load_acquire_gpu(semaphore) != rank) {
    }
  __syncthreads();
}
__device__ __forceinline__ void dq_turn_pass(int* semaphore, int rank) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) store_release_gpu(semaphore, rank + 1);
}

// One step of the backward for a resident K/V tile (sK, sV) and one Q tile (sQs, sdOs, with
// L·log2(e) in sLses and D in sDs): accumulates dK, dV of this warp's 16 keys (and its
// kColsPerWarp columns) in registers and hands dQ_i += dS·K_j to `add_dq(float* dst, float x0,
// float x1)`, two adjacent floats, dst 8-byte aligned (an atomic add when thread blocks share dQ,
// as in flash2; a plain read-modify-write when one block owns the head, as in flash1).
// `before_dq()` runs block-wide once dSᵀ is complete, before the first dQ add (the deterministic
// mode's wait for its turn). Shared by flash2's and flash1's backward kernels; ends with dSᵀ
// (and sPs) consumed, but without a final barrier.
//
// Split (Tr::kSplit = 2, d = 256): the two warps of a 16-key slice compute Sᵀ and dPᵀ for one
// half of the queries each and write Pᵀ∘Z to sPs and dSᵀ to sdS; after a barrier every warp
// accumulates dV and dK over all the queries for a 32-key × d/4 tile, A read back by ldmatrix
// (32 rows: each B fragment feeds two m16 tiles), and dQ for a 32-query × d/4 tile likewise.
// Unsplit, Pᵀ∘Z and dSᵀ are used from the registers they were computed in (sPs unused).
template <typename Tr, bool kCausal, bool kDropout, typename AddDq, typename BeforeDq = NoDqWait>
__device__ __forceinline__ void bwd_tile_step(const BwdParams& p, const typename Tr::Element* sK,
                                              const typename Tr::Element* sV, const typename Tr::Element* sQs,
                                              const typename Tr::Element* sdOs, typename Tr::Element* sdS,
                                              const float* sLses, const float* sDs, int b, int h, int n0, int m0,
                                              int nk, float (&acc_dk)[Tr::kAccTilesD][4], float (&acc_dv)[Tr::kAccTilesD][4],
                                              AddDq add_dq, BeforeDq before_dq = {},
                                              typename Tr::Element* sPs = nullptr) {
  using T = typename Tr::Element;
  constexpr bool kSplit = Tr::kSplit > 1;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int key_row = (warp % Tr::kKeyWarps) * Tr::kKeysPerWarp;  // first key row of this warp in the tile
  const int query0 = (warp / Tr::kKeyWarps) * Tr::kQueriesPerWarpS;  // first query column of its Sᵀ
  const int kv_row = (warp % Tr::kKVWarps) * Tr::kRowsPerWarp;       // first key row of its dK, dV (unsplit: key_row)
  const int col0 = (warp / Tr::kKVWarps) * Tr::kColsPerWarp;         // first column of its dK, dV
  const int a_row = lane % 16, a_col = (lane / 16) * 8;                            // A (row-major)
  const int b_row = (lane % 8) + (lane / 16) * 8, b_col = ((lane / 8) % 2) * 8;    // B from [n][k]
  const int t_row = (lane % 8) + ((lane / 8) % 2) * 8, t_col = (lane / 16) * 8;    // B from [k][n] (trans)
  const int at_row = (lane % 8) + (lane / 16) * 8, at_col = ((lane / 8) % 2) * 8;  // A from [k][m] (trans)

  // Sᵀ = K_j·Q_iᵀ and dPᵀ = V_j·dO_iᵀ (Algorithm 2, lines 9 and 13, transposed): (16 keys, kQueriesPerWarpS).
  float acc_s[Tr::kNTilesS][4], acc_dp[Tr::kNTilesS][4];
#pragma unroll
  for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_s[nt][e] = acc_dp[nt][e] = 0.f;
  // Split (d = 256), this loop and the two product loops below are unrolled partly (by 4, 1, 1)
  // or ptxas hoists enough ldmatrix loads to spill (up to 60 bytes at full unrolling, none so).
  unrolled_for<Tr::kKStepsD, (Tr::kSplit > 1 ? 4 : 0)>([&](int kk) {
    uint32_t ak[4], av[4];
    ldmatrix_x4(ak, smem_addr(sK + (key_row + a_row) * Tr::kStride + kk * 16 + a_col));
    ldmatrix_x4(av, smem_addr(sV + (key_row + a_row) * Tr::kStride + kk * 16 + a_col));
#pragma unroll
    for (int np = 0; np < Tr::kNTilesS / 2; ++np) {
      uint32_t bq[4], bdo[4];
      ldmatrix_x4(bq, smem_addr(sQs + (query0 + np * 16 + b_row) * Tr::kStride + kk * 16 + b_col));
      ldmatrix_x4(bdo, smem_addr(sdOs + (query0 + np * 16 + b_row) * Tr::kStride + kk * 16 + b_col));
      mma_16816<T>(acc_s[2 * np], ak, bq[0], bq[1]);
      mma_16816<T>(acc_s[2 * np + 1], ak, bq[2], bq[3]);
      mma_16816<T>(acc_dp[2 * np], av, bdo[0], bdo[1]);
      mma_16816<T>(acc_dp[2 * np + 1], av, bdo[2], bdo[3]);
    }
  });

  // Pᵀ = exp(Sᵀ·scale − L) (line 11), masked; Pᵀ∘Z (dropout) kept in acc_s for dV,
  // dSᵀ = Pᵀ∘(dPᵀ∘Z − D) (line 15) in acc_dp for dK and dQ.
  const bool tail = n0 + Tr::kBlockN > nk;
  const bool diagonal = kCausal && n0 + key_row + Tr::kKeysPerWarp - 1 > m0 + query0;
  FragmentKeep<true> keep{};  // dropout: n8 tiles in pairs, one Philox draw per lane
#pragma unroll
  for (int nt = 0; nt < Tr::kNTilesS; ++nt) {
    if constexpr (kDropout) {  // element e: query m0 + query0 + nt·8 + 2t + (e&1), key n0 + key_row + g (+8)
      static_assert(Tr::kNTilesS % 2 == 0 && Tr::kKeysPerWarp % 16 == 0, "dropout_keep_bwd: tile pairs, 8-key groups");
      if (nt % 2 == 0) {
        const uint32_t group = uint32_t(n0 + key_row) / kDropoutColumnsPerDraw;
        const uint32_t i0 = uint32_t(m0 + query0 + nt * 8 + 2 * t);
        keep =
            dropout_keep_bwd(p.seed, uint32_t(b), uint32_t(h), group, group + 1, i0, i0 + 8, p.dropout_threshold, lane);
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = key_row + g + (e >= 2 ? 8 : 0);    // key row in the tile
      const int c = query0 + nt * 8 + 2 * t + (e & 1);  // query row in the tile
      const int j = n0 + r, i = m0 + c;
      float pe = exp2f(fmaf(acc_s[nt][e], p.scale_log2, -sLses[c]));
      if ((tail || diagonal) && (j >= nk || (kCausal && j > i))) pe = 0.f;
      const float z = kDropout ? (keep(nt % 2, e) ? p.dropout_scale : 0.f) : 1.f;
      acc_dp[nt][e] = pe * (acc_dp[nt][e] * z - sDs[c]);
      acc_s[nt][e] = pe * z;
    }
  }

  // Split: Pᵀ∘Z and dSᵀ to shared memory, (key row, query pair) words, for both warps of the
  // slice (unsplit, dSᵀ is stored in the loop below, for the dQ step only).
  if constexpr (kSplit) {
#pragma unroll
    for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int off = (key_row + g + hr * 8) * Tr::kStrideS + query0 + nt * 8 + 2 * t;
        *reinterpret_cast<uint32_t*>(sPs + off) = pack2<T>(acc_s[nt][2 * hr], acc_s[nt][2 * hr + 1]);
        *reinterpret_cast<uint32_t*>(sdS + off) = pack2<T>(acc_dp[nt][2 * hr], acc_dp[nt][2 * hr + 1]);
      }
    __syncthreads();  // Pᵀ∘Z and dSᵀ complete: every query of the slice
  }

  // dV_j += (P∘Z)ᵀ·dO_i (line 12), dK_j += dSᵀ·Q_i (line 17): A from registers (split: from
  // sPs and sdS by ldmatrix, kMTiles m16 tiles of keys), B by ldmatrix.trans.
  unrolled_for<Tr::kKStepsQ, (Tr::kSplit > 1 ? 1 : 0)>([&](int kk) {
    uint32_t ap[Tr::kMTiles][4], ads[Tr::kMTiles][4];
    if constexpr (kSplit) {
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt) {
        ldmatrix_x4(ap[mt], smem_addr(sPs + (kv_row + mt * 16 + a_row) * Tr::kStrideS + kk * 16 + a_col));
        ldmatrix_x4(ads[mt], smem_addr(sdS + (kv_row + mt * 16 + a_row) * Tr::kStrideS + kk * 16 + a_col));
      }
    } else {
      ap[0][0] = pack2<T>(acc_s[2 * kk][0], acc_s[2 * kk][1]);
      ap[0][1] = pack2<T>(acc_s[2 * kk][2], acc_s[2 * kk][3]);
      ap[0][2] = pack2<T>(acc_s[2 * kk + 1][0], acc_s[2 * kk + 1][1]);
      ap[0][3] = pack2<T>(acc_s[2 * kk + 1][2], acc_s[2 * kk + 1][3]);
      ads[0][0] = pack2<T>(acc_dp[2 * kk][0], acc_dp[2 * kk][1]);
      ads[0][1] = pack2<T>(acc_dp[2 * kk][2], acc_dp[2 * kk][3]);
      ads[0][2] = pack2<T>(acc_dp[2 * kk + 1][0], acc_dp[2 * kk + 1][1]);
      ads[0][3] = pack2<T>(acc_dp[2 * kk + 1][2], acc_dp[2 * kk + 1][3]);
      // dSᵀ to shared memory for the dQ step: (key row, query pair) words.
      *reinterpret_cast<uint32_t*>(sdS + (key_row + g) * Tr::kStrideS + kk * 16 + 2 * t) = ads[0][0];
      *reinterpret_cast<uint32_t*>(sdS + (key_row + g + 8) * Tr::kStrideS + kk * 16 + 2 * t) = ads[0][1];
      *reinterpret_cast<uint32_t*>(sdS + (key_row + g) * Tr::kStrideS + kk * 16 + 8 + 2 * t) = ads[0][2];
      *reinterpret_cast<uint32_t*>(sdS + (key_row + g + 8) * Tr::kStrideS + kk * 16 + 8 + 2 * t) = ads[0][3];
    }
#pragma unroll
    for (int dp = 0; dp < Tr::kNTilesD / 2; ++dp) {
      uint32_t bdo[4], bq[4];
      ldmatrix_x4_trans(bdo, smem_addr(sdOs + (kk * 16 + t_row) * Tr::kStride + col0 + dp * 16 + t_col));
      ldmatrix_x4_trans(bq, smem_addr(sQs + (kk * 16 + t_row) * Tr::kStride + col0 + dp * 16 + t_col));
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt) {
        const int a0 = mt * Tr::kNTilesD + 2 * dp;  // accumulator tile [mt][2·dp]
        mma_16816<T>(acc_dv[a0], ap[mt], bdo[0], bdo[1]);
        mma_16816<T>(acc_dv[a0 + 1], ap[mt], bdo[2], bdo[3]);
        mma_16816<T>(acc_dk[a0], ads[mt], bq[0], bq[1]);
        mma_16816<T>(acc_dk[a0 + 1], ads[mt], bq[2], bq[3]);
      }
    }
  });
  if constexpr (!kSplit) __syncthreads();  // dSᵀ complete (split: since the barrier above)
  before_dq();

  // dQ_i += dS·K_j (line 16): warps split the query rows (kDqMTiles m16 tiles each) and, with
  // warps to spare, the columns; A = dS from dSᵀ by ldmatrix.trans.
  const int q_row = (warp % Tr::kQueryWarps) * Tr::kDqRowsPerWarp;
  const int dq_col0 = (warp / Tr::kQueryWarps) * Tr::kDqColsPerWarp;
  float* dq = p.dq_accum + ((size_t(b) * p.heads + h) * p.seqlen_q) * Tr::kHeadDim;
  unrolled_for<Tr::kDqColsPerWarp / Tr::kDqChunk, (Tr::kSplit > 1 ? 1 : 0)>([&](int chunk) {
    const int col = dq_col0 + chunk * Tr::kDqChunk;
    float acc_dq[Tr::kDqMTiles][Tr::kDqChunk / 8][4];
#pragma unroll
    for (int mt = 0; mt < Tr::kDqMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kDqChunk / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_dq[mt][nt][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < Tr::kKStepsK; ++ks) {
      uint32_t a[Tr::kDqMTiles][4];
#pragma unroll
      for (int mt = 0; mt < Tr::kDqMTiles; ++mt)
        ldmatrix_x4_trans(a[mt], smem_addr(sdS + (ks * 16 + at_row) * Tr::kStrideS + q_row + mt * 16 + at_col));
#pragma unroll
      for (int dp = 0; dp < Tr::kDqChunk / 16; ++dp) {
        uint32_t bk[4];
        ldmatrix_x4_trans(bk, smem_addr(sK + (ks * 16 + t_row) * Tr::kStride + col + dp * 16 + t_col));
#pragma unroll
        for (int mt = 0; mt < Tr::kDqMTiles; ++mt) {
          mma_16816<T>(acc_dq[mt][2 * dp], a[mt], bk[0], bk[1]);
          mma_16816<T>(acc_dq[mt][2 * dp + 1], a[mt], bk[2], bk[3]);
        }
      }
    }
#pragma unroll
    for (int mt = 0; mt < Tr::kDqMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kDqChunk / 8; ++nt)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int i = m0 + q_row + mt * 16 + g + hr * 8;
          if (i < p.seqlen_q) {
            float* dst = dq + size_t(i) * Tr::kHeadDim + col + nt * 8 + 2 * t;
            add_dq(dst, acc_dq[mt][nt][2 * hr], acc_dq[mt][nt][2 * hr + 1]);
          }
        }
  });
}

// Writes this block's dK_j = scale·acc_dk and dV_j = acc_dv (rows n0 … n0 + kBlockN of the K/V
// head at kv_off), staged through sK / sV (free by then) for 16-byte stores. Block-wide: every
// thread calls it; it waits for outstanding copies and synchronises.
template <typename Tr>
__device__ __forceinline__ void store_dkdv(const BwdParams& p, typename Tr::Element* sK, typename Tr::Element* sV,
                                           const float (&acc_dk)[Tr::kAccTilesD][4],
                                           const float (&acc_dv)[Tr::kAccTilesD][4], size_t kv_off, int n0) {
  using T = typename Tr::Element;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int warp = threadIdx.x / 32;
  const int kv_row = (warp % Tr::kKVWarps) * Tr::kRowsPerWarp;  // this warp's dK, dV rows (bwd_tile_step)
  const int col0 = (warp / Tr::kKVWarps) * Tr::kColsPerWarp;     // … and columns
  cp_async_wait<0>();
  __syncthreads();
#pragma unroll
  for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < Tr::kNTilesD; ++nt)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int r = kv_row + mt * 16 + g + hr * 8, a = mt * Tr::kNTilesD + nt;
        *reinterpret_cast<uint32_t*>(sK + r * Tr::kStride + col0 + nt * 8 + 2 * t) =
            pack2<T>(acc_dk[a][2 * hr] * p.scale, acc_dk[a][2 * hr + 1] * p.scale);
        *reinterpret_cast<uint32_t*>(sV + r * Tr::kStride + col0 + nt * 8 + 2 * t) =
            pack2<T>(acc_dv[a][2 * hr], acc_dv[a][2 * hr + 1]);
      }
  __syncthreads();
  T* dk = static_cast<T*>(p.dk) + kv_off;
  T* dv = static_cast<T*>(p.dv) + kv_off;
  constexpr int kChunks = Tr::kBlockN * Tr::kChunksPerRow;
  for (int c = threadIdx.x; c < kChunks; c += Tr::kNThreads) {
    const int r = c / Tr::kChunksPerRow;
    const int col = (c % Tr::kChunksPerRow) * 8;
    if (n0 + r < p.seqlen_k) {
      *reinterpret_cast<uint4*>(dk + size_t(n0 + r) * Tr::kHeadDim + col) =
          *reinterpret_cast<const uint4*>(sK + r * Tr::kStride + col);
      *reinterpret_cast<uint4*>(dv + size_t(n0 + r) * Tr::kHeadDim + col) =
          *reinterpret_cast<const uint4*>(sV + r * Tr::kStride + col);
    }
  }
}

// kDeterministic: dQ added in turn (header comment), a template parameter so that the default
// kernel's code and registers stay those of the atomic version.
template <typename Tr, bool kCausal, bool kDropout, bool kSparse = false, bool kDeterministic = false>
__global__ void __launch_bounds__(Tr::kNThreads) flash2_bwd_kernel(const BwdParams p) {
  static_assert(!(kSparse && kDeterministic), "block-sparse columns are not a prefix of the K/V tiles");
  using T = typename Tr::Element;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);  // (kBlockN, kStride)
  T* sV = sK + Tr::kSmemKV;                 // (kBlockN, kStride)
  T* sQ = sV + Tr::kSmemKV;                 // (2, kBlockM, kStride)
  T* sdO = sQ + 2 * Tr::kSmemQ;             // (2, kBlockM, kStride)
  T* sdS = sdO + 2 * Tr::kSmemQ;            // (kBlockN, kStrideS): dSᵀ of this iteration
  T* sP = sdS + Tr::kSmemDs;                // (kBlockN, kStrideS) Pᵀ∘Z, split only (kSmemP)
  float* sLse = reinterpret_cast<float*>(sP + Tr::kSmemP);  // (2, kBlockM) L·log2(e); +inf: no key
  float* sD = sLse + 2 * Tr::kBlockM;                          // (2, kBlockM)

  const int n_block = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const int group = p.heads / p.kv_heads;
  const int nk = p.key_lengths ? min(p.key_lengths[b], p.seqlen_k) : p.seqlen_k;
  const int n0 = n_block * Tr::kBlockN;  // first key of this block
  const int m_blocks = (p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM;
  // Causal: Q tiles whose last row is before the first key see none of it.
  const int m_first = kCausal ? min(n0 / Tr::kBlockM, m_blocks) : 0;
  // The Q tiles this K/V tile visits per query head, k → tile index: dense, m_first … m_blocks−1;
  // block-sparse, the non-zero tiles of its column from m_first on.
  int tiles_per_head = m_blocks - m_first;
  const int* sparse_tiles = nullptr;  // (tiles_per_head) increasing tile indices
  if constexpr (kSparse) {
    int begin = p.sparse_ptr[n_block];
    const int end = p.sparse_ptr[n_block + 1];
    while (begin < end && p.sparse_idx[begin] < m_first) ++begin;  // above the causal diagonal
    sparse_tiles = p.sparse_idx + begin;
    tiles_per_head = end - begin;
  }
  auto m_tile = [&](int k) -> int {
    if constexpr (kSparse) {
      return sparse_tiles[k];
    } else {
      return m_first + k;
    }
  };
  const int per_head = n0 < nk ? tiles_per_head : 0;  // a block past the valid keys: dK = dV = 0
  const int iterations = group * per_head;

  const size_t kv_off = (size_t(b) * p.kv_heads + hk) * p.seqlen_k * Tr::kHeadDim;
  const T* k = static_cast<const T*>(p.k) + kv_off;
  const T* v = static_cast<const T*>(p.v) + kv_off;
  load_tile<Tr, Tr::kBlockN>(sK, k, n0, p.seqlen_k);
  load_tile<Tr, Tr::kBlockN>(sV, v, n0, p.seqlen_k);
  cp_async_commit();

  // Issues the loads of iteration `it` into `stage`: Q_i, dO_i (cp.async), L_i, D_i.
  auto load_iteration = [&](int it, int stage) {
    const int h = hk * group + it / per_head;
    const int m0 = m_tile(it % per_head) * Tr::kBlockM;
    const size_t q_off = ((size_t(b) * p.heads + h) * p.seqlen_q) * Tr::kHeadDim;
    load_tile<Tr, Tr::kBlockM>(sQ + stage * Tr::kSmemQ, static_cast<const T*>(p.q) + q_off, m0, p.seqlen_q);
    load_tile<Tr, Tr::kBlockM>(sdO + stage * Tr::kSmemQ, static_cast<const T*>(p.d_o) + q_off, m0, p.seqlen_q);
    const size_t row_off = (size_t(b) * p.heads + h) * p.seqlen_q;
    for (int r = threadIdx.x; r < Tr::kBlockM; r += Tr::kNThreads) {
      const int i = m0 + r;
      const float l = i < p.seqlen_q ? p.lse[row_off + i] : -INFINITY;
      sLse[stage * Tr::kBlockM + r] = l == -INFINITY ? INFINITY : l * kLog2e;  // no key seen: P = 0
      sD[stage * Tr::kBlockM + r] = i < p.seqlen_q ? p.d_sum[row_off + i] : 0.f;
    }
  };

  float acc_dk[Tr::kAccTilesD][4];  // [m16][n8] of this warp's dK rows × columns, without the softmax scale
  float acc_dv[Tr::kAccTilesD][4];
#pragma unroll
  for (int nt = 0; nt < Tr::kAccTilesD; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[nt][e] = acc_dv[nt][e] = 0.f;

  if (iterations > 0) load_iteration(0, 0);
  cp_async_commit();

  for (int it = 0; it < iterations; ++it) {
    const int stage = it % 2;
    if (it + 1 < iterations) {
      load_iteration(it + 1, stage ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const int h = hk * group + it / per_head;
    const int m0 = m_tile(it % per_head) * Tr::kBlockM;
    const T* sQs = sQ + stage * Tr::kSmemQ;
    const T* sdOs = sdO + stage * Tr::kSmemQ;
    const float* sLses = sLse + stage * Tr::kBlockM;
    const float* sDs = sD + stage * Tr::kBlockM;

    if constexpr (kDeterministic) {
      // This block's rank among the K/V tiles adding to dQ_i is n_block (header comment).
      int* semaphore = p.dq_semaphore + (size_t(b) * p.heads + h) * m_blocks + m0 / Tr::kBlockM;
      bwd_tile_step<Tr, kCausal, kDropout>(
          p, sK, sV, sQs, sdOs, sdS, sLses, sDs, b, h, n0, m0, nk, acc_dk, acc_dv,
          [](float* dst, float x0, float x1) {
                                              float2* d2 = reinterpret_cast<float2*>(dst);
                                              const float2 v = __ldcg(d2);
                                              __stcg(d2, make_float2(v.x + x0, v.y + x1));
                                            }, [&] { dq_turn_wait(semaphore, n_block); }, sP);
      dq_turn_pass(semaphore, n_block);
    } else {
      bwd_tile_step<Tr, kCausal, kDropout>(p, sK, sV, sQs, sdOs, sdS, sLses, sDs, b, h, n0, m0, nk, acc_dk, acc_dv,
                                            [](float* dst, float x0, float x1) { atomic_add2(dst, x0, x1); },
                                            NoDqWait{}, sP);
    }
    __syncthreads();  // stage and dSᵀ are rewritten next
  }

  // Epilogue (line 21): dK_j, dV_j to HBM.
  store_dkdv<Tr>(p, sK, sV, acc_dk, acc_dv, kv_off, n0);
}

}  // namespace flashio::kernels
