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
// Run: build/flashio run --method flash2 --seqlen 4096 --head-dim 128
#pragma once
#include <cmath>

#include "kernels/common/mma.cuh"
#include "kernels/common/dropout_fragments.cuh"
#include "bench/core/philox.h"
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
  static constexpr int kMTiles = kRowsPerWarp / 16;  // m16 tiles per warp
  static constexpr int kNTilesS = kBlockN / 8;       // n8 tiles of S per m16 tile
  static constexpr int kKStepsQK = kHeadDim / 16;    // k16 steps of Q·Kᵀ
  static constexpr int kNTilesO = kHeadDim / 8;      // n8 tiles of O per m16 tile
  static constexpr int kKStepsPV = kBlockN / 16;     // k16 steps of P·V
  static constexpr int kStride = kHeadDim + 8;       // smem row, elements: odd number of 16-B chunks
  static constexpr int kChunksPerRow = kHeadDim / 8; // 16-byte chunks per global row
  static constexpr int kSmemQ = kBlockM * kStride;   // (kBlockM, kStride)
  static constexpr int kSmemKV = kBlockN * kStride;  // (kBlockN, kStride) per stage
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
template <typename Tr, bool kCausal, bool kDropout, bool kSparse = false>
__global__ void __launch_bounds__(Tr::kNThreads) flash2_fwd_kernel(const FwdParams p) {
  using T = typename Tr::Element;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);  // (kBlockM, kStride)
  T* sK = sQ + Tr::kSmemQ;                  // (kStages, kBlockN, kStride)
  T* sV = sK + Tr::kStages * Tr::kSmemKV;   // (kStages, kBlockN, kStride)

  // Heavy (late) causal Q tiles are scheduled first.
  const int m_block = kCausal ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.heads / p.kv_heads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // fragment row group and column pair
  const int row0 = m_block * Tr::kBlockM;
  const int nk = p.key_lengths ? min(p.key_lengths[b], p.seqlen_k) : p.seqlen_k;

  const T* q = static_cast<const T*>(p.q) + ((int64_t(b) * p.heads + h) * p.seqlen_q + row0) * Tr::kHeadDim;
  const T* k = static_cast<const T*>(p.k) + (int64_t(b) * p.kv_heads + hk) * p.seqlen_k * Tr::kHeadDim;
  const T* v = static_cast<const T*>(p.v) + (int64_t(b) * p.kv_heads + hk) * p.seqlen_k * Tr::kHeadDim;
  T* o = static_cast<T*>(p.o) + ((int64_t(b) * p.heads + h) * p.seqlen_q + row0) * Tr::kHeadDim;
  float* lse = p.lse + (int64_t(b) * p.heads + h) * p.seqlen_q + row0;
  const int q_rows = p.seqlen_q - row0;  // valid rows of this Q tile (may exceed kBlockM)

  // Keys this tile can see: all valid keys, or (causal) those up to its last row.
  const int n_end = kCausal ? min(nk, row0 + Tr::kBlockM) : nk;
  const int n_blocks = n_end > 0 ? (n_end + Tr::kBlockN - 1) / Tr::kBlockN : 0;
  // The K/V tiles this Q tile visits, iteration `it` → tile index: dense, all n_blocks of them
  // last-to-first; block-sparse, the non-zero tiles below n_blocks, last-to-first.
  int n_iters = n_blocks;
  const int* sparse_tiles = nullptr;  // (n_iters) increasing tile indices
  if constexpr (kSparse) {
    const int begin = p.sparse_ptr[m_block];
    int end = p.sparse_ptr[m_block + 1];
    while (end > begin && p.sparse_idx[end - 1] >= n_blocks) --end;  // past the causal / padding end
    sparse_tiles = p.sparse_idx + begin;
    n_iters = end - begin;
  }
  auto tile_at = [&](int it) -> int {
    if constexpr (kSparse) {
      return sparse_tiles[n_iters - 1 - it];
    } else {
      return n_blocks - 1 - it;
    }
  };

  load_tile<Tr, Tr::kBlockM>(sQ, q, 0, q_rows);
  cp_async_commit();
  if (n_iters > 0) {
    const int n = tile_at(0);
    load_tile<Tr, Tr::kBlockN>(sK, k, n * Tr::kBlockN, nk);
    load_tile<Tr, Tr::kBlockN>(sV, v, n * Tr::kBlockN, nk);
  }
  cp_async_commit();

  float acc_o[Tr::kMTiles][Tr::kNTilesO][4];  // (rows of this warp, kHeadDim) in C fragments
  float row_max[Tr::kMTiles][2];               // running max m of rows g and g+8, raw scores
  float row_sum[Tr::kMTiles][2];               // this thread's share of ℓ (quad-reduced at the end)
#pragma unroll
  for (int mt = 0; mt < Tr::kMTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < Tr::kNTilesO; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] = 0.f;
    row_max[mt][0] = row_max[mt][1] = -INFINITY;
    row_sum[mt][0] = row_sum[mt][1] = 0.f;
  }

  const int warp_row = warp * Tr::kRowsPerWarp;  // first row of this warp in the tile
  // ldmatrix row/column offsets of this lane (see mma.cuh for the fragment layouts).
  const int a_row = lane % 16, a_col = (lane / 16) * 8;                       // A: Q
  const int b_row = (lane % 8) + (lane / 16) * 8, b_col = ((lane / 8) % 2) * 8;  // B: K
  const int v_row = (lane % 8) + ((lane / 8) % 2) * 8, v_col = (lane / 16) * 8;  // B: V (trans)

  for (int it = 0; it < n_iters; ++it) {
    const int n = tile_at(it);  // last-to-first: masked tiles come first
    const int stage = it % 2;
    if (it + 1 < n_iters) {  // prefetch the next tile into the other stage
      const int next = tile_at(it + 1);
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

    // S = Q·K_jᵀ (Algorithm 1, line 8), fp32 accumulators: (rows of this warp, kBlockN).
    float acc_s[Tr::kMTiles][Tr::kNTilesS][4];
#pragma unroll
    for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < Tr::kKStepsQK; ++kk) {
      uint32_t a[Tr::kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt)
        ldmatrix_x4(a[mt], smem_addr(sQ + (warp_row + mt * 16 + a_row) * Tr::kStride + kk * 16 + a_col));
#pragma unroll
      for (int np = 0; np < Tr::kNTilesS / 2; ++np) {
        uint32_t bk[4];
        ldmatrix_x4(bk, smem_addr(sKs + (np * 16 + b_row) * Tr::kStride + kk * 16 + b_col));
#pragma unroll
        for (int mt = 0; mt < Tr::kMTiles; ++mt) {
          mma_16816<T>(acc_s[mt][2 * np], a[mt], bk[0], bk[1]);
          mma_16816<T>(acc_s[mt][2 * np + 1], a[mt], bk[2], bk[3]);
        }
      }
    }

    // Mask only where needed: the sequence tail, and (causal) tiles crossing the diagonal.
    const int col0 = n * Tr::kBlockN;
    const bool tail = col0 + Tr::kBlockN > nk;
    const bool diagonal = kCausal && col0 + Tr::kBlockN - 1 > row0 + warp_row;
    if (tail || diagonal) {
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesS; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = row0 + warp_row + mt * 16 + g + (e >= 2 ? 8 : 0);
            const int col = col0 + nt * 8 + 2 * t + (e & 1);
            if (col >= nk || (kCausal && col > row)) acc_s[mt][nt][e] = -INFINITY;
          }
    }

    // Online softmax (lines 9-10): new max, rescale ℓ and O by exp(m_old - m_new), P = exp(S - m).
#pragma unroll
    for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        float mx = row_max[mt][hr];
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesS; ++nt) mx = fmaxf(mx, fmaxf(acc_s[mt][nt][2 * hr], acc_s[mt][nt][2 * hr + 1]));
        mx = quad_max(mx);
        // All-masked-so-far rows keep m = -inf; subtract 0 instead so exp2 gives 0, not NaN.
        const float m_scaled = mx == -INFINITY ? 0.f : mx * p.scale_log2;
        const float alpha = exp2f(row_max[mt][hr] * p.scale_log2 - m_scaled);
        row_max[mt][hr] = mx;
        row_sum[mt][hr] *= alpha;
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesO; ++nt) {
          acc_o[mt][nt][2 * hr] *= alpha;
          acc_o[mt][nt][2 * hr + 1] *= alpha;
        }
#pragma unroll
        for (int nt = 0; nt < Tr::kNTilesS; ++nt) {
#pragma unroll
          for (int e = 2 * hr; e < 2 * hr + 2; ++e) {
            const float pe = exp2f(fmaf(acc_s[mt][nt][e], p.scale_log2, -m_scaled));
            acc_s[mt][nt][e] = pe;
            row_sum[mt][hr] += pe;
          }
        }
      }
    if constexpr (kDropout) {  // after ℓ took P: two n8 tiles per call, one Philox draw per lane
      static_assert(Tr::kNTilesS % 2 == 0, "dropout_keep_fwd covers n8 tiles in pairs");
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
        for (int np = 0; np < Tr::kNTilesS / 2; ++np) {
          const uint32_t i = uint32_t(row0 + warp_row + mt * 16 + g);
          const uint32_t group = uint32_t(col0 + np * 16) / kDropoutColumnsPerDraw;
          const FragmentKeep<false> keep =
              dropout_keep_fwd(p.seed, uint32_t(b), uint32_t(h), i, i + 8, group, group + 1, p.dropout_threshold, lane);
#pragma unroll
          for (int k = 0; k < 2; ++k)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (!keep(k, e)) acc_s[mt][2 * np + k][e] = 0.f;
        }
    }

    // O += P·V_j (line 10): P re-packed from S accumulators into A fragments, V by ldmatrix.trans.
#pragma unroll
    for (int kk = 0; kk < Tr::kKStepsPV; ++kk) {
      uint32_t a[Tr::kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt) {
        a[mt][0] = pack2<T>(acc_s[mt][2 * kk][0], acc_s[mt][2 * kk][1]);
        a[mt][1] = pack2<T>(acc_s[mt][2 * kk][2], acc_s[mt][2 * kk][3]);
        a[mt][2] = pack2<T>(acc_s[mt][2 * kk + 1][0], acc_s[mt][2 * kk + 1][1]);
        a[mt][3] = pack2<T>(acc_s[mt][2 * kk + 1][2], acc_s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < Tr::kNTilesO / 2; ++dp) {
        uint32_t bv[4];
        ldmatrix_x4_trans(bv, smem_addr(sVs + (kk * 16 + v_row) * Tr::kStride + dp * 16 + v_col));
#pragma unroll
        for (int mt = 0; mt < Tr::kMTiles; ++mt) {
          mma_16816<T>(acc_o[mt][2 * dp], a[mt], bv[0], bv[1]);
          mma_16816<T>(acc_o[mt][2 * dp + 1], a[mt], bv[2], bv[3]);
        }
      }
    }
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
      const float inv = l > 0.f ? (kDropout ? p.dropout_scale : 1.f) / l : 0.f;  // a row that sees no key: O = 0
      const int r = warp_row + mt * 16 + g + hr * 8;
#pragma unroll
      for (int nt = 0; nt < Tr::kNTilesO; ++nt) {
        *reinterpret_cast<uint32_t*>(sQ + r * Tr::kStride + nt * 8 + 2 * t) =
            pack2<T>(acc_o[mt][nt][2 * hr] * inv, acc_o[mt][nt][2 * hr + 1] * inv);
      }
      if (t == 0 && r < q_rows)
        lse[r] = l > 0.f ? (row_max[mt][hr] * p.scale_log2 + __log2f(l)) * kLn2 : -INFINITY;
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
