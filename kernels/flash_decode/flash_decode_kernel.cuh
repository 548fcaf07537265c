// flash_decode: split-KV attention for decoding (few queries per sequence, a long K/V cache).
// FlashAttention-2's forward with the parallelism moved from the queries to the keys
// ("Flash-Decoding", Dao et al. 2023), in one kernel, flash_decode_split_kernel, grid (split,
// K/V head × row tile, batch):
//
// 1. A thread block takes one K/V head hk and the rows that share it — the (query head, query)
//    pairs of its GQA/MQA group, H/Hkv · Nq rows, 16 per block (one m16 tile, padded with zero
//    rows) — and one split: a contiguous range of K/V tiles of 64 keys. So K and V are read once
//    per group (per row tile). Each of the four warps streams its own 16 keys of every tile
//    through its own shared-memory ring of kStages slices (cp.async through L1, no block-wide
//    barrier in the loop) and runs FlashAttention-2's inner loop on them: S = Q·Kᵀ (m16n8k16),
//    mask, online softmax, O += P·V. At the end the four warps' (m, ℓ, O) are merged through
//    shared memory and the block writes its split's O/ℓ (fp32) and L = τ·m + ln ℓ, or, with one
//    split, the final O and L.
// 2. With several splits, the last split of a row tile to finish (a counter per row tile) combines
//    them: L = log Σ_s exp(L_s), O = Σ_s exp(L_s − L)·O_s, in the element type. No second launch.
//
// Paged K/V: a tile of 64 keys lies in one page (page sizes are multiples of 64), found through
// the block table once per warp and tile; the contiguous layout is the same code with one page
// of Nk keys per (batch, K/V head). Keys past the batch's length are zero-filled, never read.
//
// Varlen decode (kKv = Packed or PagedVarlen, Problem::key_varlen): sequence b's L_b keys, K/V
// packed [Hkv, T, d] from row cu[b] of each head, or paged (Problem::paged_varlen) in the first
// ⌈L_b/P⌉ pages of its block-table row, found as the dense paged layout finds them; Q, O, L dense
// as above. Sequence b has its own split count, decode_sequence_splits(⌈L_b/64⌉, tiles_per_split):
// the grid's blocks past it return at once, and its last split counts only its own splits.
// L_b = 0: one split that sees no key (O = 0, L = −inf). kKv = Dense is the dense kernel, unchanged.
//
// IO per (batch, K/V head), e = element bytes, G = H/Hkv, s = splits, R = row tiles:
// K and V read R times (once for R = 1: G·Nq ≤ 16), Q read and O, L written once; with s > 1
// the partials, s·G·Nq·(4d + 4) bytes, written by the splits and read by the last one
// (analysis/models/flash_decode.cpp).
//
// Run: build/flashio run --method flash_decode --seqlen 1 --seqlen-k 8192 --heads 32 --kv-heads 8 --head-dim 128 -b 8
#pragma once
#include <cmath>

#include "kernels/common/fwd_head.cuh"
#include "kernels/common/masks.h"
#include "kernels/common/mma.cuh"
#include "kernels/common/mma_tiles.cuh"
#include "kernels/common/online_softmax.h"
#include "kernels/flash_decode/flash_decode_configs.h"
#include "kernels/flash_decode/flash_decode_params.h"

namespace flashio::kernels {

template <typename Element_, int kHeadDim_>
struct FlashDecodeTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kDecodeBlockM;      // rows per thread block: one m16 tile
  static constexpr int kBlockN = kDecodeBlockN;      // keys per K/V tile
  static constexpr int kWarps = kDecodeWarps;
  static constexpr int kWarpKeys = kDecodeWarpKeys;  // keys of a tile each warp owns
  static constexpr int kStages = flash_decode_stages(kHeadDim);
  static constexpr int kNThreads = kWarps * 32;
  static constexpr int kNTilesS = kWarpKeys / 8;     // n8 tiles of a warp's S
  static constexpr int kKStepsQK = kHeadDim / 16;    // k16 steps of Q·Kᵀ
  static constexpr int kNTilesO = kHeadDim / 8;      // n8 tiles of O
  static constexpr int kKStepsPV = kWarpKeys / 16;   // k16 steps of P·V
  static constexpr int kStride = kHeadDim + 8;       // smem row, elements: odd number of 16-B chunks
  static constexpr int kChunksPerRow = kHeadDim / 8; // 16-byte chunks per global row
  static constexpr int kSmemQ = kBlockM * kStride;   // (kBlockM, kStride)
  static constexpr int kSmemSlice = kWarpKeys * kStride;  // (kWarpKeys, kStride): one warp's keys of one tile
  static constexpr int kSmemBytes = flash_decode_smem_bytes(kHeadDim);
  // The epilogue's merge of the warps, over the K/V stages once they are drained: O of each warp
  // (kWarps, kBlockM, kOStride) fp32, its m and ℓ (kWarps, kBlockM), each row's weights
  // (kBlockM, kWarps) and L (kBlockM).
  static constexpr int kOStride = kHeadDim + 4;  // fp32 row, padded: float2 stores of a quad spread over banks
  static constexpr int kMergeFloats = kWarps * kBlockM * kOStride + 2 * kWarps * kBlockM + kBlockM * kWarps + kBlockM;

  static_assert(kHeadDim % 64 == 0, "head dim: Q's 16 rows are copied in whole rounds of 128 threads");
  static_assert(kNTilesS % 2 == 0 && kNTilesO % 2 == 0, "ldmatrix.x4 feeds two n8 tiles at a time");
  static_assert(kStages >= 2, "the ring needs a stage to compute on and one in flight");
  static_assert(kSmemBytes == (kSmemQ + 2 * kStages * kWarps * kSmemSlice) * 2, "smem formula shared with the host");
  static_assert(kMergeFloats * 4 <= 2 * kStages * kWarps * kSmemSlice * 2, "the merge fits over the K/V stages");
  static_assert(kBlockM * kDecodeMaxSplits <= kWarps * kBlockM * kOStride, "the combine's weights fit over the warps' O");
};

// Visibility of key `col` to row `row` of the block (rows row0 + row of the group: query index
// (row0 + row) mod Nq): the key exists (col < nk) and, causal (top-left), col ≤ the query index.
// A mask policy of kernels/common/masks.h's kind (hidden, for hide_scores).
template <bool kCausal>
struct DecodeMask {
  int nk, seqlen_q, row0;
  FLASHIO_HOST_DEVICE bool hidden(int row, int col) const {
    return col >= nk || (kCausal && col > (row0 + row) % seqlen_q);
  }
  // Does the warp's slice of keys [col0, col0 + cols) hide a score? (Causal: the one tile a
  // causal decode visits always may.)
  FLASHIO_HOST_DEVICE bool partial(int col0, int cols) const { return kCausal || col0 + cols > nk; }
};

// One warp's slice of K/V tile `tile`: keys tile·64 + warp·16 …, 16 rows of d into a padded
// (kWarpKeys, kStride) shared slice each for K and V; keys ≥ nk zero-filled (their scores are
// masked, and zero V rows keep 0·garbage out of O). The page is looked up once per slice.
template <typename Tr, DecodeKv kKv>
__device__ __forceinline__ void load_kv_slice(const DecodeParams& p, int b, int hk, int key0, int nk, int lane,
                                              typename Tr::Element* sk, typename Tr::Element* sv, int seq_start) {
  using T = typename Tr::Element;
  int64_t row = 0;  // the slice's first row in K/V, rows of d elements
  if constexpr (kKv == DecodeKv::Packed) {  // packed [Hkv, T, d]: the sequence's keys from row cu[b] of head hk
    if (key0 < nk) row = int64_t(hk) * p.total_tokens + seq_start + key0;
  } else if (key0 < nk) {  // contiguous, or paged (key0 < nk: a page of the sequence's own)
    int phys = b, in_page = key0;
    if (kKv == DecodeKv::PagedVarlen || p.block_table) {
      const int page = key0 / p.page;
      phys = __ldg(p.block_table + int64_t(b) * p.pages_per_seq + page);
      in_page = key0 - page * p.page;
    }
    row = (int64_t(phys) * p.kv_heads + hk) * p.page + in_page;
  }
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  constexpr int kChunks = Tr::kWarpKeys * Tr::kChunksPerRow;
  static_assert(kChunks % 32 == 0, "every lane copies the same number of chunks");
#pragma unroll
  for (int c = lane; c < kChunks; c += 32) {
    const int r = c / Tr::kChunksPerRow;
    const int col = (c % Tr::kChunksPerRow) * 8;
    const bool valid = key0 + r < nk;
    const int64_t src = valid ? (row + r) * Tr::kHeadDim + col : 0;  // never form an address past the tensor
    cp_async_16_l1(sk + r * Tr::kStride + col, k + src, valid);
    cp_async_16_l1(sv + r * Tr::kStride + col, v + src, valid);
  }
}

template <typename Tr, bool kCausal, DecodeKv kKv>
__global__ void __launch_bounds__(Tr::kNThreads) flash_decode_split_kernel(const DecodeParams p) {
  using T = typename Tr::Element;
  constexpr bool kVarlen = kKv != DecodeKv::Dense;  // each sequence its own length (cu_seqlens) and splits
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);                  // (kBlockM, kStride)
  T* sK = sQ + Tr::kSmemQ;                                  // (kStages, kWarps, kWarpKeys, kStride)
  T* sV = sK + Tr::kStages * Tr::kWarps * Tr::kSmemSlice;  // (kStages, kWarps, kWarpKeys, kStride)

  const int split = blockIdx.x, b = blockIdx.z;
  const int hk = int(blockIdx.y) / p.row_tiles, row_tile = int(blockIdx.y) % p.row_tiles;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // fragment row group and column pair

  // The rows sharing K/V head hk are those of query heads hk·G … hk·G + G − 1, Nq each: one
  // contiguous run of G·Nq rows of Q, O and L, of which this block takes 16 from row0.
  const int group_rows = (p.heads / p.kv_heads) * p.seqlen_q;
  const int row0 = row_tile * Tr::kBlockM;
  const int rows = min(Tr::kBlockM, group_rows - row0);
  const int64_t grow0 = (int64_t(b) * p.heads + int64_t(hk) * (p.heads / p.kv_heads)) * p.seqlen_q + row0;

  // This split's K/V tiles: [first, first + count) of those any row sees. Varlen: this
  // sequence's splits only (the grid's are the longest sequence's).
  const int nk = fwd_key_length<kVarlen>(p, b);
  const int seq_start = kKv == DecodeKv::Packed ? p.cu_seqlens[b] : 0;
  const DecodeMask<kCausal> mask{nk, p.seqlen_q, row0};
  const int tiles = kv_tile_count(kCausal ? min(nk, p.seqlen_q) : nk, Tr::kBlockN);
  // (A function, not a local copy: the dense kernel then reads p.splits where it always did, and
  // compiles to the SASS it had before varlen.)
  auto splits = [&] { return kVarlen ? decode_sequence_splits(tiles, p.tiles_per_split) : p.splits; };
  if (kVarlen && split >= splits()) return;
  const int first = split * p.tiles_per_split;
  const int count = max(0, min(tiles, first + p.tiles_per_split) - first);

  // Q: the block's rows (zero rows past the group), copied once by the whole block.
  {
    const T* q = static_cast<const T*>(p.q) + grow0 * Tr::kHeadDim;
    constexpr int kChunks = Tr::kBlockM * Tr::kChunksPerRow;
#pragma unroll
    for (int c = threadIdx.x; c < kChunks; c += Tr::kNThreads) {
      const int r = c / Tr::kChunksPerRow, col = (c % Tr::kChunksPerRow) * 8;
      cp_async_16_l1(sQ + r * Tr::kStride + col, q + (r < rows ? r * Tr::kHeadDim + col : 0), r < rows);
    }
    cp_async_commit();
  }
  auto slice_k = [&](int stage) { return sK + (stage * Tr::kWarps + warp) * Tr::kSmemSlice; };
  auto slice_v = [&](int stage) { return sV + (stage * Tr::kWarps + warp) * Tr::kSmemSlice; };
  auto slice_key0 = [&](int it) { return (first + it) * Tr::kBlockN + warp * Tr::kWarpKeys; };
  // The ring's first kStages − 1 slices in flight (a group each, empty past the split's end).
#pragma unroll
  for (int s = 0; s < Tr::kStages - 1; ++s) {
    if (s < count) load_kv_slice<Tr, kKv>(p, b, hk, slice_key0(s), nk, lane, slice_k(s), slice_v(s), seq_start);
    cp_async_commit();
  }

  float acc_o[1][Tr::kNTilesO][4];  // (kBlockM, kHeadDim) in C fragments: this warp's keys only
  float row_max[2], row_sum[2];     // online softmax of rows g and g + 8 over this warp's keys
  clear_fragments(acc_o);
  softmax_init(row_max, row_sum);
  const LdmatrixLane ld(lane);

  cp_async_wait<Tr::kStages - 2>();  // Q (and the first slice) landed, for this thread …
  __syncthreads();                   // … and Q for every warp

  for (int it = 0; it < count; ++it) {
    const int stage = it % Tr::kStages;
    cp_async_wait<Tr::kStages - 2>();  // slice `it` landed (this lane's copies) …
    __syncwarp();                      // … every lane's; and every lane is done with slice it − 1
    const int ahead = it + Tr::kStages - 1;  // refill the stage of slice it − 1
    if (ahead < count) {
      const int s = ahead % Tr::kStages;
      load_kv_slice<Tr, kKv>(p, b, hk, slice_key0(ahead), nk, lane, slice_k(s), slice_v(s), seq_start);
    }
    cp_async_commit();

    // S = Q·Kᵀ over this warp's 16 keys (FA-2 Algorithm 1, line 8): (kBlockM, kWarpKeys), raw.
    float acc_s[1][Tr::kNTilesS][4];
    uint32_t q_frag[1][4], k_frag[4];  // operand fragments, declared here (mma_tiles.cuh)
    warp_mma_abt<T, Tr::kKStepsQK, Tr::kStride>(acc_s, sQ, 0, slice_k(stage), ld, q_frag, k_frag);
    // Mask: keys past the sequence (the last tile) and, causal, keys after the row's query.
    const int col0 = slice_key0(it);
    if (mask.partial(col0, Tr::kWarpKeys)) hide_scores<8, 8>(mask, acc_s[0], g, col0, 2 * t);
    // Online softmax (lines 9-10): m, ℓ and O rescaled, P = exp(S − m) in place.
    softmax_update<QuadRowReduce>(row_max, row_sum, acc_s[0], acc_o[0], p.scale_log2);
    // O += P·V (line 10): P packed from the S accumulators into A fragments, V by ldmatrix.trans.
    uint32_t p_frag[1][4], v_frag[4];
    warp_mma_ab_trans<T, Tr::kKStepsPV, Tr::kStride>(
        acc_o, [&](int kk, int mt, uint32_t(&a)[4]) { pack_a_fragment<T>(acc_s[mt], kk, a); }, slice_v(stage), ld,
        p_frag, v_frag);
  }

  // Merge the four warps' (m, ℓ, O) — disjoint keys of the same rows — through shared memory,
  // over the drained K/V stages: m = max_w m_w, ℓ = Σ_w e^{τ(m_w − m)}·ℓ_w, O = Σ_w e^{τ(m_w − m)}·O_w / ℓ.
  cp_async_wait<0>();
  __syncthreads();
  float* sO = reinterpret_cast<float*>(sK);                 // (kWarps, kBlockM, kOStride)
  float* sM = sO + Tr::kWarps * Tr::kBlockM * Tr::kOStride;  // (kWarps, kBlockM)
  float* sL = sM + Tr::kWarps * Tr::kBlockM;                 // (kWarps, kBlockM)
  float* sW = sL + Tr::kWarps * Tr::kBlockM;                 // (kBlockM, kWarps): e^{τ(m_w − m)} / ℓ
  float* sLse = sW + Tr::kBlockM * Tr::kWarps;               // (kBlockM)
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int r = g + hr * 8;
    const float l = quad_sum(row_sum[hr]);
    if (t == 0) {
      sM[warp * Tr::kBlockM + r] = row_max[hr];
      sL[warp * Tr::kBlockM + r] = l;
    }
#pragma unroll
    for (int nt = 0; nt < Tr::kNTilesO; ++nt)
      *reinterpret_cast<float2*>(sO + (warp * Tr::kBlockM + r) * Tr::kOStride + nt * 8 + 2 * t) =
          make_float2(acc_o[0][nt][2 * hr], acc_o[0][nt][2 * hr + 1]);
  }
  __syncthreads();
  if (threadIdx.x < Tr::kBlockM) {
    const int r = threadIdx.x;
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < Tr::kWarps; ++w) m = fmaxf(m, sM[w * Tr::kBlockM + r]);
    float factor[Tr::kWarps], l = 0.f;
#pragma unroll
    for (int w = 0; w < Tr::kWarps; ++w) {
      const float mw = sM[w * Tr::kBlockM + r];
      factor[w] = mw == -INFINITY ? 0.f : exp2f((mw - m) * p.scale_log2);  // a warp that saw no key adds nothing
      l += factor[w] * sL[w * Tr::kBlockM + r];
    }
    const float inv = OnlineSoftmax::output_scale<false>(l, 1.f);  // a row that saw no key: O = 0
#pragma unroll
    for (int w = 0; w < Tr::kWarps; ++w) sW[r * Tr::kWarps + w] = factor[w] * inv;
    sLse[r] = log_sum_exp(m, l, p.scale_log2);
  }
  __syncthreads();

  // The block's rows: the final O and L (one split), or this split's fp32 O and L.
  const int64_t total_rows = int64_t(p.batch) * p.heads * p.seqlen_q;
  constexpr int kQuads = Tr::kHeadDim / 4;  // four columns per step
  for (int c = threadIdx.x; c < Tr::kBlockM * kQuads; c += Tr::kNThreads) {
    const int r = c / kQuads, col = (c % kQuads) * 4;
    if (r >= rows) continue;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < Tr::kWarps; ++w) {
      const float wt = sW[r * Tr::kWarps + w];
      const float4 x = *reinterpret_cast<const float4*>(sO + (w * Tr::kBlockM + r) * Tr::kOStride + col);
      acc.x += wt * x.x, acc.y += wt * x.y, acc.z += wt * x.z, acc.w += wt * x.w;
    }
    const int64_t grow = grow0 + r;
    if (splits() == 1) {
      *reinterpret_cast<uint2*>(static_cast<T*>(p.o) + grow * Tr::kHeadDim + col) =
          make_uint2(pack2<T>(acc.x, acc.y), pack2<T>(acc.z, acc.w));
    } else {
      *reinterpret_cast<float4*>(p.o_partial + (split * total_rows + grow) * Tr::kHeadDim + col) = acc;
    }
  }
  if (threadIdx.x < rows) {
    const int64_t grow = grow0 + threadIdx.x;
    if (splits() == 1) {
      p.lse[grow] = sLse[threadIdx.x];
    } else {
      p.lse_partial[split * total_rows + grow] = sLse[threadIdx.x];
    }
  }
  if (splits() == 1) return;

  // The last split of these rows to finish combines them (the other splits' partials read from
  // L2, past L1, which may hold none of them): L = m + ln Σ_s e^{L_s − m} (m = max_s L_s; a
  // split that saw no key has L_s = −inf and weight 0), O = Σ_s e^{L_s − L}·O_s.
  __shared__ bool last;
  __threadfence();  // this block's partials visible to the block that combines
  __syncthreads();
  if (threadIdx.x == 0) {
    int* done = p.splits_done + int64_t(b) * gridDim.y + blockIdx.y;
    last = atomicAdd(done, 1) == splits() - 1;
    if (last) *done = 0;  // zero for the next launch
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  float* sWeight = sO;  // (kBlockM, kDecodeMaxSplits): e^{L_s − L}, over the drained merge area
  if (threadIdx.x < rows) {
    const int r = threadIdx.x;
    const int64_t grow = grow0 + r;
    float m = -INFINITY;
    for (int s = 0; s < splits(); ++s) m = fmaxf(m, __ldcg(p.lse_partial + s * total_rows + grow));
    float sum = 0.f;
    for (int s = 0; s < splits(); ++s) {
      const float ls = __ldcg(p.lse_partial + s * total_rows + grow);
      const float e = ls == -INFINITY ? 0.f : exp2f((ls - m) * kLog2e);
      sWeight[r * kDecodeMaxSplits + s] = e;
      sum += e;
    }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    for (int s = 0; s < splits(); ++s) sWeight[r * kDecodeMaxSplits + s] *= inv;
    p.lse[grow] = sum > 0.f ? m + __logf(sum) : -INFINITY;
  }
  __syncthreads();
  for (int c = threadIdx.x; c < Tr::kBlockM * kQuads; c += Tr::kNThreads) {
    const int r = c / kQuads, col = (c % kQuads) * 4;
    if (r >= rows) continue;
    const int64_t grow = grow0 + r;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s = 0; s < splits(); ++s) {
      const float w = sWeight[r * kDecodeMaxSplits + s];
      const float4 x = __ldcg(reinterpret_cast<const float4*>(p.o_partial + (s * total_rows + grow) * Tr::kHeadDim + col));
      acc.x += w * x.x, acc.y += w * x.y, acc.z += w * x.z, acc.w += w * x.w;
    }
    *reinterpret_cast<uint2*>(static_cast<T*>(p.o) + grow * Tr::kHeadDim + col) =
        make_uint2(pack2<T>(acc.x, acc.y), pack2<T>(acc.z, acc.w));
  }
}

}  // namespace flashio::kernels
