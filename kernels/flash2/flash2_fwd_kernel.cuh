// flash2 forward: FlashAttention-2, Algorithm 1 (Dao, 2023).
//
// Loop order: one thread block per (Q tile i, head, batch) — the outer loop of Algorithm 1
// runs in parallel across thread blocks; the inner loop streams K/V tiles j through
// shared memory (double-buffered cp.async). Warps split the Q tile's rows (each warp owns
// kRowsPerWarp rows and all of K/V: no split-K, no inter-warp reduction). Online softmax
// keeps the running max m and the unnormalised sum ℓ in registers and rescales O only by
// exp(m_old - m_new); the division by ℓ is deferred to the end (FA-2 §3.1.1), and the
// log-sum-exp L = m + log ℓ is the only statistic written.
//
// Dropout: P is normalised with the undropped row sum ℓ, then each element is kept or
// dropped by the shared Philox mask (bench/core/philox.h) before P·V; the 1/(1−p) scale
// joins the final 1/ℓ. One Philox call serves eight elements (dropout_keep_fwd).
//
// Causal (top-left aligned): tiles entirely above the diagonal are never loaded; the K/V
// tiles are visited last-to-first so that the only tiles needing a mask (the diagonal and
// the sequence tail) come first, and the mask is applied only there.
//
// IO per (batch, head), e = element bytes, Tr = ⌈Nq/Br⌉: Q read once, O written once,
// L written once, K and V read Tr times (≈ half with causal): Nq·d·e·2 + 2·Tr·Nk·d·e + 4·Nq.
//
// Block-sparse (kSparse, the blocksparse_flash method; FlashAttention Algorithm 5): the K/V
// tiles visited by Q tile i are the non-zero ones of the tile mask, p.sparse_idx[p.sparse_ptr[i]
// .. p.sparse_ptr[i+1]) (increasing), cut at the causal / key-padding end and visited
// last-to-first as above; zero tiles are neither loaded nor computed. Same loop order (Q tiles
// across thread blocks, K/V streamed), so K and V are read s·Tr times: the N² term of the IO
// scales by the density s (Proposition 4). With every tile non-zero the visiting order and the
// arithmetic are those of the dense kernel, so the outputs are bitwise equal.
//
// Packed variable lengths (kVarlen; FwdParams::cu_seqlens): the grid is that of the longest
// sequence (Q tiles of N = max length, heads, sequences); a block whose Q tile starts past its
// sequence's length exits at once; the rest run the dense loop on the sequence's slices
// (fwd_head.cuh: rows cu[b] .. cu[b+1] of each head, key count = the length). Compiled without
// dropout and for the first tile of each head dim's list only (flash2_fwd_launch.cuh).
//
// Steps written once (kernels/common): the prologue (fwd_head.cuh: fwd_head_slices), the trip
// count and the mask step (masks.h: kv_tiles, tile), S = Q·Kᵀ and O += P·V (mma_tiles.cuh), the
// online softmax (online_softmax.h: softmax_update), dropout (dropout_scores.cuh). The kernel
// declares the operand fragments and keeps m, ℓ as arrays of its own: the register allocation
// depends on it (kernels/NOTES.md).
//
// Run: build/flashio run --method flash2 --seqlen 4096 --head-dim 128
#pragma once
#include <cmath>
#include <type_traits>

#include "kernels/common/dropout_scores.cuh"
#include "kernels/common/fwd_head.cuh"
#include "kernels/common/masks.h"
#include "kernels/common/mma.cuh"
#include "kernels/common/mma_tiles.cuh"
#include "kernels/common/online_softmax.h"
#include "kernels/flash2/flash2_fwd_configs.h"
#include "kernels/flash2/flash2_params.h"

namespace flashio::kernels {

template <typename Element_, int kHeadDim_, int kBlockM_, int kBlockN_, int kNWarps_, int kStages_>
struct Flash2FwdTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;  // Br: query rows per thread block
  static constexpr int kBlockN = kBlockN_;  // Bc: key rows per K/V tile
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kStages = kStages_;
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr int kRowsPerWarp = kBlockM / kNWarps;
  static constexpr int kMTiles = kRowsPerWarp / 16;   // m16 tiles per warp
  static constexpr int kNTilesS = kBlockN / 8;        // n8 tiles of S per m16 tile
  static constexpr int kKStepsQK = kHeadDim / 16;     // k16 steps of Q·Kᵀ
  static constexpr int kNTilesO = kHeadDim / 8;       // n8 tiles of O per m16 tile
  static constexpr int kKStepsPV = kBlockN / 16;      // k16 steps of P·V
  static constexpr int kStride = kHeadDim + 8;        // smem row, elements: odd number of 16-B chunks
  static constexpr int kChunksPerRow = kHeadDim / 8;  // 16-byte chunks per global row
  static constexpr int kSmemQ = kBlockM * kStride;    // (kBlockM, kStride)
  static constexpr int kSmemKV = kBlockN * kStride;   // (kBlockN, kStride) per stage
  static constexpr int kSmemBytes = flash2_fwd_smem_bytes(kHeadDim, {kBlockM, kBlockN, kNWarps, kStages});

  static_assert(kHeadDim % 32 == 0, "head dim: a multiple of 32 (ldmatrix.x4 loads 16 columns in pairs)");
  static_assert(kRowsPerWarp % 16 == 0, "each warp owns whole m16 tiles");
  static_assert(kBlockN % 16 == 0, "K/V tile: whole k16 steps of P·V");
  static_assert(kNTilesS % 2 == 0 && kNTilesO % 2 == 0, "ldmatrix.x4 feeds two n8 tiles at a time");
  static_assert(kStages == 2, "the pipeline below is written for double buffering");
  static_assert(kSmemBytes == (kSmemQ + 2 * kStages * kSmemKV) * 2, "smem formula shared with the host");
};

// Copies rows [row0, row0 + R) of a (rows_valid, d) row-major global matrix into a padded
// (R, kStride) shared tile; rows past rows_valid are zero-filled (their scores are masked,
// and zero V rows keep 0·garbage out of O).
template <typename Tr, int R>
__device__ __forceinline__ void load_tile(typename Tr::Element* s, const typename Tr::Element* g, int row0,
                                          int rows_valid) {
  constexpr int kChunks = R * Tr::kChunksPerRow;
  static_assert(kChunks % Tr::kNThreads == 0, "every thread copies the same number of chunks");
#pragma unroll
  for (int c = threadIdx.x; c < kChunks; c += Tr::kNThreads) {
    const int r = c / Tr::kChunksPerRow;
    const int col = (c % Tr::kChunksPerRow) * 8;
    const bool valid = row0 + r < rows_valid;
    const int64_t grow = valid ? row0 + r : 0;  // never form an address past the tensor
    cp_async_16(s + r * Tr::kStride + col, g + grow * Tr::kHeadDim + col, valid);
  }
}

// kDropout is a template parameter: the Philox code in the loop costs registers (measured:
// 132 → 225 for d = 64, 128×64, and 14 % of the speed) even when a run-time flag skips it.
// kSparse (block-sparse tile lists) likewise, so the dense kernels are unchanged.
template <typename Tr, bool kCausal, bool kDropout, bool kSparse = false, bool kVarlen = false>
__global__ void __launch_bounds__(Tr::kNThreads) flash2_fwd_kernel(const FwdParams p) {
  using T = typename Tr::Element;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);  // (kBlockM, kStride)
  T* sK = sQ + Tr::kSmemQ;                 // (kStages, kBlockN, kStride)
  T* sV = sK + Tr::kStages * Tr::kSmemKV;  // (kStages, kBlockN, kStride)

  // Heavy (late) causal Q tiles are scheduled first.
  const int m_block = kCausal ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = fwd_kv_head(p, h);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // fragment row group and column pair
  const int row0 = m_block * Tr::kBlockM;

  // This head's key length and slices from row row0 (fwd_head.cuh); q_rows: the valid rows of
  // this Q tile (may exceed kBlockM).
  int nk, q_rows;
  const T *q, *k, *v;
  T* o;
  float* lse;
  fwd_head_slices<T, Tr::kHeadDim, int64_t, kVarlen>(p, b, h, hk, row0, nk, q, k, v, o, lse, q_rows);
  if constexpr (kVarlen) {
    if (q_rows <= 0) return;  // past this sequence's end (the whole block: before any barrier)
  }

  // The K/V tiles this Q tile visits, iteration `it` → tile index, last-to-first: dense, every
  // tile with a key it can see; block-sparse, the non-zero tiles among them (masks.h).
  using Mask = std::conditional_t<kSparse, TileListMask<SequenceMask<kCausal>>, SequenceMask<kCausal>>;
  Mask mask{};
  mask.nk = nk;
  if constexpr (kSparse) {
    mask.sparse_ptr = p.sparse_ptr;
    mask.sparse_idx = p.sparse_idx;
  }
  const auto tiles = mask.kv_tiles(m_block, row0 + Tr::kBlockM, Tr::kBlockN);

  load_tile<Tr, Tr::kBlockM>(sQ, q, 0, q_rows);
  cp_async_commit();
  if (tiles.count > 0) {
    const int n = tiles(0);
    load_tile<Tr, Tr::kBlockN>(sK, k, n * Tr::kBlockN, nk);
    load_tile<Tr, Tr::kBlockN>(sV, v, n * Tr::kBlockN, nk);
  }
  cp_async_commit();

  float acc_o[Tr::kMTiles][Tr::kNTilesO][4];  // (rows of this warp, kHeadDim) in C fragments
  float row_max[Tr::kMTiles][2];              // online softmax: m of rows g and g+8, raw scores
  float row_sum[Tr::kMTiles][2];              // and this thread's share of ℓ (quad-reduced at the end)
#pragma unroll
  for (int mt = 0; mt < Tr::kMTiles; ++mt) {
    clear_fragments(acc_o[mt]);
    softmax_init(row_max[mt], row_sum[mt]);
  }

  const int warp_row = warp * Tr::kRowsPerWarp;  // first row of this warp in the tile
  const LdmatrixLane ld(lane);

  for (int it = 0; it < tiles.count; ++it) {
    const int n = tiles(it);  // last-to-first: masked tiles come first
    const int stage = it % 2;
    if (it + 1 < tiles.count) {  // prefetch the next tile into the other stage
      const int next = tiles(it + 1);
      load_tile<Tr, Tr::kBlockN>(sK + (stage ^ 1) * Tr::kSmemKV, k, next * Tr::kBlockN, nk);
      load_tile<Tr, Tr::kBlockN>(sV + (stage ^ 1) * Tr::kSmemKV, v, next * Tr::kBlockN, nk);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const T* sKs = sK + stage * Tr::kSmemKV;
    const T* sVs = sV + stage * Tr::kSmemKV;

    // S = Q·K_jᵀ (Algorithm 1, line 8), raw scores (τ joins exp2): (rows of this warp, kBlockN).
    float acc_s[Tr::kMTiles][Tr::kNTilesS][4];
    uint32_t q_frag[Tr::kMTiles][4], k_frag[4];  // operand fragments, declared here (mma_tiles.cuh)
    warp_mma_abt<T, Tr::kKStepsQK, Tr::kStride>(acc_s, sQ, warp_row, sKs, ld, q_frag, k_frag);
    // Mask, only where needed: the sequence tail, and (causal) tiles crossing the diagonal.
    const int col0 = n * Tr::kBlockN;
    mask.tile(acc_s, row0 + warp_row, col0, Tr::kBlockN, g, t);
    // Online softmax (lines 9-10): new max m, ℓ and O rescaled by exp(m_old − m), P = exp(S − m).
#pragma unroll
    for (int mt = 0; mt < Tr::kMTiles; ++mt)
      softmax_update<QuadRowReduce>(row_max[mt], row_sum[mt], acc_s[mt], acc_o[mt], p.scale_log2);
    if constexpr (kDropout) {  // after ℓ took P
      FragmentKeep<false> keep;
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt)
        dropout_p_fragment(acc_s[mt], p, uint32_t(b), uint32_t(h), row0 + warp_row + mt * 16, g, col0, lane, keep);
    }
    // O += P·V_j (line 10): P packed from the S accumulators into A fragments, V by ldmatrix.trans.
    uint32_t p_frag[Tr::kMTiles][4], v_frag[4];
    warp_mma_ab_trans<T, Tr::kKStepsPV, Tr::kStride>(
        acc_o, [&](int kk, int mt, uint32_t(&a)[4]) { pack_a_fragment<T>(acc_s[mt], kk, a); }, sVs, ld, p_frag, v_frag);
    __syncthreads();  // this stage is overwritten by the prefetch two iterations on
  }

  // Epilogue (lines 12-13): O = O / ℓ, L = m + log ℓ; O staged through sQ for 16-B stores.
  cp_async_wait<0>();
  __syncthreads();
#pragma unroll
  for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const float l = quad_sum(row_sum[mt][hr]);
      const float inv = OnlineSoftmax::output_scale<kDropout>(l, p.dropout_scale);  // a row that sees no key: O = 0
      const int r = warp_row + mt * 16 + g + hr * 8;
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesO; ++nt) {
        *reinterpret_cast<uint32_t*>(sQ + r * Tr::kStride + nt * 8 + 2 * t) =
            pack2<T>(acc_o[mt][nt][2 * hr] * inv, acc_o[mt][nt][2 * hr + 1] * inv);
      }
      if (t == 0 && r < q_rows) lse[r] = log_sum_exp(row_max[mt][hr], l, p.scale_log2);
    }
  __syncthreads();
  constexpr int kChunks = Tr::kBlockM * Tr::kChunksPerRow;
#pragma unroll
  for (int c = threadIdx.x; c < kChunks; c += Tr::kNThreads) {
    const int r = c / Tr::kChunksPerRow;
    const int col = (c % Tr::kChunksPerRow) * 8;
    if (r < q_rows)
      *reinterpret_cast<uint4*>(o + int64_t(r) * Tr::kHeadDim + col) =
          *reinterpret_cast<const uint4*>(sQ + r * Tr::kStride + col);
  }
}

}  // namespace flashio::kernels
