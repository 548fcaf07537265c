// Kernels of the blocksparse_standard baseline: see blocksparse_standard_kernels.h and the
// method's file comment (baselines/blocksparse_standard/blocksparse_standard_method.cpp).
#include "baselines/blocksparse_standard/blocksparse_standard_kernels.h"

#include <cmath>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "bench/cuda_check.h"
#include "kernels/common/philox.h"

namespace flashio::baselines {
namespace {

constexpr int kThreads = 256;

__global__ void pointers_kernel(const BlocksparseShape s, const int2* blocks, const int2* steps, const char* q,
                                const char* k, const char* v, char* scores, float* o_acc, BlocksparsePointers out) {
  const int64_t bh_count = int64_t(s.batch) * s.heads;
  const int64_t total = bh_count * s.nnz;
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total) return;
  const int64_t e_bytes = s.elem_bytes;
  const int64_t block_elems = int64_t(s.block) * s.head_dim;  // one (Bs, d) block of Q, K, V, O
  {  // scores entry t = bh·nnz + e
    const int64_t bh = t / s.nnz, e = t % s.nnz;
    const int64_t b = bh / s.heads, h = bh % s.heads, hk = h / (s.heads / s.kv_heads);
    const int2 rc = blocks[e];
    out.s_a[t] = k + ((b * s.kv_heads + hk) * s.keys_padded * s.head_dim + rc.y * block_elems) * e_bytes;
    out.s_b[t] = q + (bh * s.rows_padded * s.head_dim + rc.x * block_elems) * e_bytes;
    out.s_c[t] = scores + (bh * s.nnz + e) * int64_t(s.block) * s.block * e_bytes;
  }
  {  // pv entry t = u·BH + bh
    const int64_t u = t / bh_count, bh = t % bh_count;
    const int64_t b = bh / s.heads, h = bh % s.heads, hk = h / (s.heads / s.kv_heads);
    const int2 re = steps[u];  // (row, e)
    const int col = blocks[re.y].y;
    out.pv_a[t] = v + ((b * s.kv_heads + hk) * s.keys_padded * s.head_dim + col * block_elems) * e_bytes;
    out.pv_b[t] = scores + (bh * s.nnz + re.y) * int64_t(s.block) * s.block * e_bytes;
    out.pv_c[t] = o_acc + bh * s.rows_padded * s.head_dim + re.x * block_elems;
  }
}

template <typename T>
__device__ __forceinline__ float load(const T* p) {
  if constexpr (std::is_same_v<T, half>) {
    return __half2float(*p);
  } else {
    return __bfloat162float(*p);
  }
}
template <typename T>
__device__ __forceinline__ T from_float(float x) {
  if constexpr (std::is_same_v<T, half>) {
    return __float2half_rn(x);
  } else {
    return __float2bfloat16_rn(x);
  }
}

// One warp per (bh, query row i < Np). Pass 1: online max and sum over the visible keys of the
// row's blocks; pass 2: P = exp(s − m)/ℓ (· Z with dropout), written over S; invisible keys 0.
template <typename T>
__global__ void softmax_kernel(const BlocksparseShape s, const BlocksparseSoftmaxParams p) {
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const int64_t bh = warp / s.rows_padded;
  const int i = int(warp % s.rows_padded);
  if (bh >= int64_t(s.batch) * s.heads) return;
  const int b = int(bh / s.heads), h = int(bh % s.heads);
  const int r = i / s.block, lr = i % s.block;
  int nk = p.key_lengths ? min(p.key_lengths[b], s.seqlen_k) : s.seqlen_k;
  if (p.causal) nk = min(nk, i + 1);
  if (i >= s.seqlen_q) nk = 0;  // padding row: P = 0
  T* sc = static_cast<T*>(p.scores);
  const int e0 = p.row_ptr[r], e1 = p.row_ptr[r + 1];
  auto row_of = [&](int e) { return sc + ((bh * s.nnz + e) * s.block + lr) * int64_t(s.block); };

  float m = -INFINITY, l = 0.f;
  for (int e = e0; e < e1; ++e) {
    const T* row = row_of(e);
    const int j0 = p.col_idx[e] * s.block;
    for (int jj = lane; jj < s.block; jj += 32) {
      if (j0 + jj >= nk) continue;
      const float x = load(row + jj);
      const float m_new = fmaxf(m, x);
      l = l * __expf(m - m_new) + __expf(x - m_new);
      m = m_new;
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {  // merge (m, ℓ) across the warp
    const float m_o = __shfl_xor_sync(0xffffffffu, m, off);
    const float l_o = __shfl_xor_sync(0xffffffffu, l, off);
    const float m_new = fmaxf(m, m_o);
    if (m_new != -INFINITY) l = l * __expf(m - m_new) + l_o * __expf(m_o - m_new);
    m = m_new;
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  for (int e = e0; e < e1; ++e) {
    T* row = row_of(e);
    const int j0 = p.col_idx[e] * s.block;
    for (int jj = lane; jj < s.block; jj += 32) {
      const int j = j0 + jj;
      float pe = 0.f;
      if (j < nk) {
        pe = __expf(load(row + jj) - m) * inv;
        if (p.dropout) {
          const Philox4x32 w = dropout_words(p.seed, 0, uint32_t(b), uint32_t(h), uint32_t(i), uint32_t(j) / 4);
          pe = dropout_keeps_word(philox_lane(w, uint32_t(j) % 4), p.dropout_threshold) ? pe * p.dropout_scale : 0.f;
        }
      }
      row[jj] = from_float<T>(pe);
    }
  }
  if (p.lse && lane == 0 && i < s.seqlen_q) p.lse[bh * s.seqlen_q + i] = l > 0.f ? m + logf(l) : -INFINITY;
}

template <typename T>
__global__ void store_o_kernel(const BlocksparseShape s, const float* o_acc, T* o) {
  const int64_t total = int64_t(s.batch) * s.heads * s.seqlen_q * s.head_dim;
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total) return;
  const int64_t c = t % s.head_dim, row = t / s.head_dim;
  const int64_t bh = row / s.seqlen_q, i = row % s.seqlen_q;
  o[t] = from_float<T>(o_acc[(bh * s.rows_padded + i) * s.head_dim + c]);
}

unsigned blocks_for(int64_t threads) { return unsigned((threads + kThreads - 1) / kThreads); }

}  // namespace

void build_blocksparse_pointers(const BlocksparseShape& s, const int2* blocks, const int2* steps, const void* q_pad,
                                const void* k_pad, const void* v_pad, void* scores, float* o_acc,
                                const BlocksparsePointers& out, cudaStream_t stream) {
  const int64_t total = int64_t(s.batch) * s.heads * s.nnz;
  if (total == 0) return;
  pointers_kernel<<<blocks_for(total), kThreads, 0, stream>>>(s, blocks, steps, static_cast<const char*>(q_pad),
                                                              static_cast<const char*>(k_pad),
                                                              static_cast<const char*>(v_pad),
                                                              static_cast<char*>(scores), o_acc, out);
  FLASHIO_CHECK_LAUNCH();
}

void blocksparse_softmax(const BlocksparseShape& s, const BlocksparseSoftmaxParams& p, cudaStream_t stream) {
  const int64_t threads = int64_t(s.batch) * s.heads * s.rows_padded * 32;
  if (p.bf16) {
    softmax_kernel<__nv_bfloat16><<<blocks_for(threads), kThreads, 0, stream>>>(s, p);
  } else {
    softmax_kernel<half><<<blocks_for(threads), kThreads, 0, stream>>>(s, p);
  }
  FLASHIO_CHECK_LAUNCH();
}

void blocksparse_store_o(const BlocksparseShape& s, const float* o_acc, void* o, bool bf16, cudaStream_t stream) {
  const int64_t total = int64_t(s.batch) * s.heads * s.seqlen_q * s.head_dim;
  if (bf16) {
    store_o_kernel<__nv_bfloat16><<<blocks_for(total), kThreads, 0, stream>>>(s, o_acc, static_cast<__nv_bfloat16*>(o));
  } else {
    store_o_kernel<half><<<blocks_for(total), kThreads, 0, stream>>>(s, o_acc, static_cast<half*>(o));
  }
  FLASHIO_CHECK_LAUNCH();
}

}  // namespace flashio::baselines
