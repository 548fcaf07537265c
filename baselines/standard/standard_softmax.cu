// Row softmax of standard attention. Rows of at most 1024 elements: one warp per row,
// eight rows per block (a block per short row would leave most threads idle). Longer rows:
// one thread block per row. A row that fits in registers (Nk ≤ 16384) is read once: one
// read of S, one write of P, the least traffic a separate softmax kernel can move. Longer
// rows stream twice (online max/sum, then the write). Rows of 8k elements use 16-byte
// vector loads. Masked entries get P = 0; a row with no visible key is all zeros.
#include <cfloat>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "baselines/standard/standard_softmax.h"
#include "bench/cuda_check.h"

namespace flashio::baselines {
namespace {

constexpr int kThreads = 256;

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<half>(half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ half from_f<half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Block-wide reduction; `op` is max or sum. All threads get the result.
template <typename Op>
__device__ float block_reduce(float x, Op op, float* scratch) {
  for (int off = 16; off > 0; off /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, off));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) x = op(x, scratch[w]);
  return x;
}

struct MaxOp { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct SumOp { __device__ float operator()(float a, float b) const { return a + b; } };

__device__ __forceinline__ int visible_keys(const SoftmaxParams& p, int64_t row) {
  const int i = int(row % p.seqlen_q);
  const int64_t b = row / (int64_t(p.heads) * p.seqlen_q);
  int visible = p.key_lengths ? min(p.key_lengths[b], p.seqlen_k) : p.seqlen_k;
  if (p.causal) visible = min(visible, i + 1);
  return visible;
}

// kVec elements per access (8 = 16 bytes, needs Nk % 8 == 0), kItems accesses per thread.
template <typename T, int kVec, int kItems>
__global__ void __launch_bounds__(kThreads) softmax_cached(const SoftmaxParams p) {
  __shared__ float scratch[kThreads / 32];
  const int64_t row = blockIdx.x;
  const T* s = static_cast<const T*>(p.s) + row * p.seqlen_k;
  T* out = static_cast<T*>(p.p) + row * p.seqlen_k;
  const int visible = visible_keys(p, row);
  float x[kItems][kVec];
  float mx = -FLT_MAX;
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int j0 = (it * kThreads + threadIdx.x) * kVec;
    T v[kVec];
    if (j0 < p.seqlen_k) {
      if constexpr (kVec == 8) {
        *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(s + j0);
      } else {
        v[0] = s[j0];
      }
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      x[it][e] = (j0 + e < visible) ? to_f(v[e]) : -INFINITY;
      mx = fmaxf(mx, x[it][e]);
    }
  }
  mx = block_reduce(mx, MaxOp{}, scratch);
  float sum = 0.f;
#pragma unroll
  for (int it = 0; it < kItems; ++it)
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      x[it][e] = __expf(x[it][e] - mx);
      sum += x[it][e];
    }
  sum = block_reduce(sum, SumOp{}, scratch);
  const float inv = visible > 0 ? 1.f / sum : 0.f;
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int j0 = (it * kThreads + threadIdx.x) * kVec;
    if (j0 >= p.seqlen_k) continue;
    T v[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = from_f<T>(x[it][e] * inv);
    if constexpr (kVec == 8) {
      *reinterpret_cast<uint4*>(out + j0) = *reinterpret_cast<const uint4*>(v);
    } else {
      out[j0] = v[0];
    }
  }
}

// Short rows: one warp per row, kVec·kItems elements per lane, warp shuffles only.
template <typename T, int kVec, int kItems>
__global__ void __launch_bounds__(kThreads) softmax_warp_per_row(const SoftmaxParams p) {
  constexpr int kRowsPerBlock = kThreads / 32;
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= p.rows) return;
  const T* s = static_cast<const T*>(p.s) + row * p.seqlen_k;
  T* out = static_cast<T*>(p.p) + row * p.seqlen_k;
  const int visible = visible_keys(p, row);
  float x[kItems][kVec];
  float mx = -FLT_MAX;
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int j0 = (it * 32 + lane) * kVec;
    T v[kVec];
    if (j0 < p.seqlen_k) {
      if constexpr (kVec == 8) {
        *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(s + j0);
      } else {
        v[0] = s[j0];
      }
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      x[it][e] = (j0 + e < visible) ? to_f(v[e]) : -INFINITY;
      mx = fmaxf(mx, x[it][e]);
    }
  }
  for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  float sum = 0.f;
#pragma unroll
  for (int it = 0; it < kItems; ++it)
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      x[it][e] = __expf(x[it][e] - mx);
      sum += x[it][e];
    }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  const float inv = visible > 0 ? 1.f / sum : 0.f;
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int j0 = (it * 32 + lane) * kVec;
    if (j0 >= p.seqlen_k) continue;
    T v[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = from_f<T>(x[it][e] * inv);
    if constexpr (kVec == 8) {
      *reinterpret_cast<uint4*>(out + j0) = *reinterpret_cast<const uint4*>(v);
    } else {
      out[j0] = v[0];
    }
  }
}

// Any row length: pass 1 keeps a running (max, sum) per thread; pass 2 writes P.
template <typename T>
__global__ void __launch_bounds__(kThreads) softmax_streaming(const SoftmaxParams p) {
  __shared__ float scratch[kThreads / 32];
  const int64_t row = blockIdx.x;
  const T* s = static_cast<const T*>(p.s) + row * p.seqlen_k;
  T* out = static_cast<T*>(p.p) + row * p.seqlen_k;
  const int visible = visible_keys(p, row);
  float mx = -INFINITY, sum = 0.f;
  for (int j = threadIdx.x; j < visible; j += kThreads) {
    const float x = to_f(s[j]);
    const float m_new = fmaxf(mx, x);
    sum = sum * __expf(mx - m_new) + __expf(x - m_new);
    mx = m_new;
  }
  const float row_max = block_reduce(mx, MaxOp{}, scratch);
  const float mine = mx == -INFINITY ? 0.f : sum * __expf(mx - row_max);
  const float total = block_reduce(mine, SumOp{}, scratch);
  const float inv = visible > 0 ? 1.f / total : 0.f;
  for (int j = threadIdx.x; j < p.seqlen_k; j += kThreads)
    out[j] = from_f<T>(j < visible ? __expf(to_f(s[j]) - row_max) * inv : 0.f);
}

template <typename T>
void launch(const SoftmaxParams& p, cudaStream_t stream) {
  const bool vec = p.seqlen_k % 8 == 0;
  const dim3 warp_grid(static_cast<unsigned>((p.rows + kThreads / 32 - 1) / (kThreads / 32)));
  if (vec && p.seqlen_k <= 256) {
    softmax_warp_per_row<T, 8, 1><<<warp_grid, kThreads, 0, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();
    return;
  }
  if (vec && p.seqlen_k <= 1024) {
    softmax_warp_per_row<T, 8, 4><<<warp_grid, kThreads, 0, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();
    return;
  }
  if (!vec && p.seqlen_k <= 256) {
    softmax_warp_per_row<T, 1, 8><<<warp_grid, kThreads, 0, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();
    return;
  }
  const dim3 grid(static_cast<unsigned>(p.rows));
  const int per_pass = vec ? 8 * kThreads : kThreads;
  const int items = (p.seqlen_k + per_pass - 1) / per_pass;
  if (vec && items <= 1) softmax_cached<T, 8, 1><<<grid, kThreads, 0, stream>>>(p);
  else if (vec && items <= 2) softmax_cached<T, 8, 2><<<grid, kThreads, 0, stream>>>(p);
  else if (vec && items <= 4) softmax_cached<T, 8, 4><<<grid, kThreads, 0, stream>>>(p);
  else if (vec && items <= 8) softmax_cached<T, 8, 8><<<grid, kThreads, 0, stream>>>(p);
  else if (!vec && items <= 4) softmax_cached<T, 1, 4><<<grid, kThreads, 0, stream>>>(p);
  else if (!vec && items <= 16) softmax_cached<T, 1, 16><<<grid, kThreads, 0, stream>>>(p);
  else softmax_streaming<T><<<grid, kThreads, 0, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
}

}  // namespace

void softmax_rows(const SoftmaxParams& p, cudaStream_t stream) {
  if (p.rows > 0x7fffffffLL) throw std::invalid_argument("softmax: more than 2^31-1 rows");
  if (p.bf16) {
    launch<__nv_bfloat16>(p, stream);
  } else {
    launch<half>(p, stream);
  }
}

}  // namespace flashio::baselines
