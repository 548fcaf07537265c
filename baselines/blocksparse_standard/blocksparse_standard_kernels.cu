// Kernels of the blocksparse_standard baseline: see blocksparse_standard_kernels.h and the
// method's file comment (baselines/blocksparse_standard/blocksparse_standard_method.cpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <type_traits>

#include "baselines/blocksparse_standard/blocksparse_standard_kernels.h"
#include "bench/cuda/cuda_check.h"
#include "bench/core/philox.h"

namespace flashio::baselines {
namespace {

constexpr int kThreads = 256;

// Entry t of every family (see the header); BH·nnz threads.
__global__ void pointers_kernel(const BlocksparseShape s, const int2* blocks, const int2* row_steps,
                                const int4* col_steps, const BlocksparseOperands ops, bool backward,
                                BlocksparsePointers out) {
  const int64_t bh_count = int64_t(s.batch) * s.heads;
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= bh_count * s.nnz) return;
  const int group = s.heads / s.kv_heads;
  const int64_t eb = s.elem_bytes;
  const int64_t blk = int64_t(s.block) * s.head_dim;        // elements of one (Bs, d) block
  const int64_t sblk = int64_t(s.block) * s.block;          // elements of one (Bs, Bs) block
  auto q_rows = [&](const void* base, int64_t bh, int r) {  // (Bs, d) block r of query head bh
    return static_cast<const char*>(base) + (bh * s.rows_padded * s.head_dim + r * blk) * eb;
  };
  auto kv_rows = [&](const void* base, int64_t bkv, int c) {  // (Bs, d) block c of K/V head bkv
    return static_cast<const char*>(base) + (bkv * s.keys_padded * s.head_dim + c * blk) * eb;
  };
  auto score_block = [&](void* base, int64_t bh, int e) {  // (Bs, Bs) block e of head bh
    return static_cast<char*>(base) + (bh * s.nnz + e) * sblk * eb;
  };
  {  // scores and dP: t = bh·nnz + e
    const int64_t bh = t / s.nnz;
    const int e = int(t % s.nnz);
    const int64_t bkv = (bh / s.heads) * s.kv_heads + (bh % s.heads) / group;
    const int2 rc = blocks[e];
    out.scores.a[t] = kv_rows(ops.k, bkv, rc.y);
    out.scores.b[t] = q_rows(ops.q, bh, rc.x);
    out.scores.c[t] = score_block(ops.p, bh, e);
    if (backward) {
      out.dp.a[t] = kv_rows(ops.v, bkv, rc.y);
      out.dp.b[t] = q_rows(ops.d_o, bh, rc.x);
      out.dp.c[t] = score_block(ops.ds, bh, e);
    }
  }
  {  // P·V and dQ: t = u·BH + bh, (r, e) = row_steps[u]
    const int64_t u = t / bh_count, bh = t % bh_count;
    const int64_t bkv = (bh / s.heads) * s.kv_heads + (bh % s.heads) / group;
    const int2 re = row_steps[u];
    const int c = blocks[re.y].y;
    out.pv.a[t] = kv_rows(ops.v, bkv, c);
    out.pv.b[t] = score_block(ops.p_drop, bh, re.y);
    out.pv.c[t] = ops.o_acc + bh * s.rows_padded * s.head_dim + re.x * blk;
    if (backward) {
      out.dq.a[t] = kv_rows(ops.k, bkv, c);
      out.dq.b[t] = score_block(ops.ds, bh, re.y);
      out.dq.c[t] = ops.dq_acc + bh * s.rows_padded * s.head_dim + re.x * blk;
    }
  }
  if (backward) {  // dV and dK: t = u·BKV + bkv, (c, e, g) = col_steps[u]
    const int64_t bkv_count = int64_t(s.batch) * s.kv_heads;
    const int64_t u = t / bkv_count, bkv = t % bkv_count;
    const int4 ceg = col_steps[u];
    const int r = blocks[ceg.y].x;
    const int64_t bh = (bkv / s.kv_heads) * s.heads + (bkv % s.kv_heads) * group + ceg.z;
    float* dv = ops.dv_acc + bkv * s.keys_padded * s.head_dim + ceg.x * blk;
    float* dk = ops.dk_acc + bkv * s.keys_padded * s.head_dim + ceg.x * blk;
    out.dv.a[t] = q_rows(ops.d_o, bh, r);
    out.dv.b[t] = score_block(ops.p_drop, bh, ceg.y);
    out.dv.c[t] = dv;
    out.dk.a[t] = q_rows(ops.q, bh, r);
    out.dk.b[t] = score_block(ops.ds, bh, ceg.y);
    out.dk.c[t] = dk;
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

// One warp per (bh, query row i < Np): where the row's materialized blocks live and which of
// their keys it sees.
struct RowView {
  int b, h, i, lr;
  int e0, e1;  // the row's blocks
  int nk;      // keys j < nk are visible (0 for padding rows), before the block mask
  int64_t bh;
  bool valid;
};

__device__ __forceinline__ RowView row_view(const BlocksparseShape& s, const BlocksparseSoftmaxParams& p) {
  RowView v;
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  v.bh = warp / s.rows_padded;
  v.i = int(warp % s.rows_padded);
  v.valid = v.bh < int64_t(s.batch) * s.heads;
  v.b = int(v.bh / s.heads);
  v.h = int(v.bh % s.heads);
  const int r = v.i / s.block;
  v.lr = v.i % s.block;
  v.nk = 0;
  v.e0 = v.e1 = 0;
  if (!v.valid) return v;
  v.nk = p.key_lengths ? min(p.key_lengths[v.b], s.seqlen_k) : s.seqlen_k;
  if (p.causal) v.nk = min(v.nk, v.i + 1);
  if (v.i >= s.seqlen_q) v.nk = 0;  // padding row
  v.e0 = p.row_ptr[r];
  v.e1 = p.row_ptr[r + 1];
  return v;
}

template <typename T>
__device__ __forceinline__ T* row_in_block(void* base, const BlocksparseShape& s, const RowView& v, int e) {
  return static_cast<T*>(base) + ((v.bh * s.nnz + e) * s.block + v.lr) * int64_t(s.block);
}

// Z_ij: keep(b, h, i, j)/(1 − p) or 0 (bench/core/philox.h, offset 0); 1 without dropout.
__device__ __forceinline__ float dropout_factor(const BlocksparseSoftmaxParams& p, const RowView& v, int j) {
  if (!p.dropout) return 1.f;
  const Philox4x32 w =
      dropout_words(p.seed, 0, uint32_t(v.b), uint32_t(v.h), uint32_t(v.i), uint32_t(j) / kDropoutColumnsPerDraw);
  return dropout_keeps_value(dropout_value(w, uint32_t(j) % kDropoutColumnsPerDraw), p.dropout_threshold)
             ? p.dropout_scale
             : 0.f;
}

// Pass 1: online max and sum over the visible keys of the row's blocks; pass 2: P = exp(s − m)/ℓ
// over S (and P∘Z to p_drop, or over S when p_drop is null); invisible keys 0.
template <typename T>
__global__ void softmax_kernel(const BlocksparseShape s, const BlocksparseSoftmaxParams p) {
  const RowView v = row_view(s, p);
  if (!v.valid) return;  // whole warps: a block holds kThreads/32 rows
  const int lane = threadIdx.x % 32;
  float m = -INFINITY, l = 0.f;
  for (int e = v.e0; e < v.e1; ++e) {
    const T* row = row_in_block<T>(p.scores, s, v, e);
    const int j0 = p.col_idx[e] * s.block;
    for (int jj = lane; jj < s.block; jj += 32) {
      if (j0 + jj >= v.nk) continue;
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
  for (int e = v.e0; e < v.e1; ++e) {
    T* row = row_in_block<T>(p.scores, s, v, e);
    T* row_drop = p.p_drop ? row_in_block<T>(p.p_drop, s, v, e) : row;
    const int j0 = p.col_idx[e] * s.block;
    for (int jj = lane; jj < s.block; jj += 32) {
      const int j = j0 + jj;
      const float pe = j < v.nk ? __expf(load(row + jj) - m) * inv : 0.f;
      const float z = j < v.nk ? dropout_factor(p, v, j) : 0.f;
      if (p.p_drop) row[jj] = from_float<T>(pe);
      row_drop[jj] = from_float<T>(pe * z);
    }
  }
  if (p.lse && lane == 0 && v.i < s.seqlen_q) p.lse[v.bh * s.seqlen_q + v.i] = l > 0.f ? m + logf(l) : -INFINITY;
}

// D_i = Σ_j P_ij·(dP_drop∘Z)_ij, then dS_ij = P_ij·((dP_drop∘Z)_ij − D_i) over dP; P is the
// undropped P the forward left in `scores`, read as stored (in the element type).
template <typename T>
__global__ void softmax_backward_kernel(const BlocksparseShape s, const BlocksparseSoftmaxParams p) {
  const RowView v = row_view(s, p);
  if (!v.valid) return;
  const int lane = threadIdx.x % 32;
  float dsum = 0.f;
  for (int e = v.e0; e < v.e1; ++e) {
    const T* prow = row_in_block<T>(p.scores, s, v, e);
    const T* dprow = row_in_block<T>(p.dp, s, v, e);
    const int j0 = p.col_idx[e] * s.block;
    for (int jj = lane; jj < s.block; jj += 32) {
      const int j = j0 + jj;
      if (j >= v.nk) continue;
      dsum += load(prow + jj) * load(dprow + jj) * dropout_factor(p, v, j);
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) dsum += __shfl_xor_sync(0xffffffffu, dsum, off);
  for (int e = v.e0; e < v.e1; ++e) {
    const T* prow = row_in_block<T>(p.scores, s, v, e);
    T* dprow = row_in_block<T>(p.dp, s, v, e);
    const int j0 = p.col_idx[e] * s.block;
    for (int jj = lane; jj < s.block; jj += 32) {
      const int j = j0 + jj;
      float ds = 0.f;
      if (j < v.nk) ds = load(prow + jj) * (load(dprow + jj) * dropout_factor(p, v, j) - dsum);
      dprow[jj] = from_float<T>(ds);
    }
  }
}

template <typename T>
__global__ void store_rows_kernel(int64_t heads, int n, int n_pad, int d, float scale, const float* acc, T* out) {
  const int64_t total = heads * n * d;
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total) return;
  const int64_t c = t % d, row = t / d;
  const int64_t h = row / n, i = row % n;
  out[t] = from_float<T>(scale * acc[(h * n_pad + i) * d + c]);
}

unsigned blocks_for(int64_t threads) { return unsigned((threads + kThreads - 1) / kThreads); }

}  // namespace

void build_blocksparse_pointers(const BlocksparseShape& s, const int2* blocks, const int2* row_steps,
                                const int4* col_steps, const BlocksparseOperands& ops, bool backward,
                                const BlocksparsePointers& out, cudaStream_t stream) {
  const int64_t total = int64_t(s.batch) * s.heads * s.nnz;
  if (total == 0) return;
  pointers_kernel<<<blocks_for(total), kThreads, 0, stream>>>(s, blocks, row_steps, col_steps, ops, backward, out);
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

void blocksparse_softmax_backward(const BlocksparseShape& s, const BlocksparseSoftmaxParams& p, cudaStream_t stream) {
  const int64_t threads = int64_t(s.batch) * s.heads * s.rows_padded * 32;
  if (p.bf16) {
    softmax_backward_kernel<__nv_bfloat16><<<blocks_for(threads), kThreads, 0, stream>>>(s, p);
  } else {
    softmax_backward_kernel<half><<<blocks_for(threads), kThreads, 0, stream>>>(s, p);
  }
  FLASHIO_CHECK_LAUNCH();
}

void blocksparse_store_rows(int64_t heads, int n, int n_pad, int d, float scale, const float* acc, void* out, bool bf16,
                            cudaStream_t stream) {
  const int64_t total = heads * n * d;
  if (total == 0) return;
  if (bf16) {
    store_rows_kernel<__nv_bfloat16>
        <<<blocks_for(total), kThreads, 0, stream>>>(heads, n, n_pad, d, scale, acc, static_cast<__nv_bfloat16*>(out));
  } else {
    store_rows_kernel<half>
        <<<blocks_for(total), kThreads, 0, stream>>>(heads, n, n_pad, d, scale, acc, static_cast<half*>(out));
  }
  FLASHIO_CHECK_LAUNCH();
}

}  // namespace flashio::baselines
