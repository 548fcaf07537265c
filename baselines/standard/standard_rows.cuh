// Device helpers shared by the row kernels of standard attention: the forward softmax
// (standard_softmax.cu, Algorithm 0 line 2 plus dropout) and the softmax backward
// (standard_softmax_backward.cu, Algorithm 3 line 3). Both walk rows of an (rows × Nk)
// matrix in HBM, one warp or one thread block per row, each thread owning groups of kVec
// consecutive columns: a group is one 16-byte load (kVec = 8, Nk % 8 == 0) or kVec scalar
// loads (kVec = 8). Groups are a multiple of the eight columns one Philox call serves, so a
// thread draws each dropout word once.
#pragma once
#include <cfloat>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "baselines/standard/standard_softmax.h"
#include "bench/core/philox.h"

namespace flashio::baselines::rows {

constexpr int kThreads = 256;  // threads per block, every row kernel
constexpr int kWarp = 32;
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kVecBytes = 16;  // one uint4 load or store
constexpr int kScalarGroup = int(kDropoutColumnsPerDraw);  // columns per group without vector loads
constexpr int64_t kMaxGridRows = 0x7fffffffLL;  // gridDim.x limit: one block per row at most

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<half>(half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ half from_f<half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

struct MaxOp { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct SumOp { __device__ float operator()(float a, float b) const { return a + b; } };

// Reduction over the kRowThreads threads of one row; `op` is max or sum; every thread of the
// row gets the result. kRowThreads = kWarp: shuffles only (no barrier, so a warp whose row is
// past the end may return early). kRowThreads = kThreads: every thread of the block must call.
template <int kRowThreads, typename Op>
__device__ __forceinline__ float row_reduce(float x, Op op, float* scratch /* [kThreads / kWarp] */) {
  static_assert(kRowThreads == kWarp || kRowThreads == kThreads, "a row is one warp or one block");
  for (int off = kWarp / 2; off > 0; off /= 2) x = op(x, __shfl_xor_sync(kFullWarp, x, off));
  if constexpr (kRowThreads == kThreads) {
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    __syncthreads();  // scratch may still be read by a previous reduction
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    x = scratch[0];
    for (int w = 1; w < kThreads / kWarp; ++w) x = op(x, scratch[w]);
  }
  return x;
}

// Where row `row` of the (B·H·Nq × Nk) matrix sits, and how many of its keys are visible
// (key padding, then top-left causal: key j visible to query i iff j <= i).
struct RowCoords {
  uint32_t b, h, i;
  int visible;
};

__device__ __forceinline__ RowCoords row_coords(const RowShape& s, int64_t row) {
  RowCoords c;
  c.i = uint32_t(row % s.seqlen_q);
  c.h = uint32_t((row / s.seqlen_q) % s.heads);
  c.b = uint32_t(row / (int64_t(s.heads) * s.seqlen_q));
  int visible = s.key_lengths ? min(s.key_lengths[c.b], s.seqlen_k) : s.seqlen_k;
  if (s.causal) visible = min(visible, int(c.i) + 1);
  c.visible = max(visible, 0);
  return c;
}

// The dropout factors Z of one row (bench/core/philox.h): keep → 1/(1 − p), drop → 0.
struct RowDropout {
  DropoutParams d;
  RowCoords c;
  // z[e] for columns j0 … j0 + kVec − 1; j0 is a multiple of kVec, hence of the eight columns
  // one Philox call serves. Call only when d.enabled.
  template <int kVec>
  __device__ __forceinline__ void factors(int j0, float (&z)[kVec]) const {
    static_assert(kVec % kDropoutColumnsPerDraw == 0, "a group holds whole Philox draws");
#pragma unroll
    for (int g = 0; g < kVec; g += kDropoutColumnsPerDraw) {
      const Philox4x32 words =
          dropout_words(d.seed, kDropoutOffset, c.b, c.h, c.i, uint32_t(j0 + g) / kDropoutColumnsPerDraw);
#pragma unroll
      for (int e = 0; e < int(kDropoutColumnsPerDraw); ++e)
        z[g + e] = dropout_keeps_value(dropout_value(words, uint32_t(e)), d.threshold) ? d.scale : 0.f;
    }
  }
};

// Loads columns j0 … j0 + kVec − 1 of `row` (n columns) as floats; columns ≥ n read 0.
// kVecLoad: one 16-byte load, which needs n % kVec == 0 (then a group is all in or all out).
template <typename T, int kVec, bool kVecLoad>
__device__ __forceinline__ void load_group(const T* row, int j0, int n, float (&x)[kVec]) {
  if constexpr (kVecLoad) {
    static_assert(kVec * sizeof(T) == kVecBytes, "a vector group is one 16-byte access");
    T v[kVec];
    *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(row + j0);
#pragma unroll
    for (int e = 0; e < kVec; ++e) x[e] = to_f(v[e]);
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) x[e] = j0 + e < n ? to_f(row[j0 + e]) : 0.f;
  }
}

// Stores columns j0 … j0 + kVec − 1 of `row` (n columns), rounding to T; columns ≥ n are skipped.
template <typename T, int kVec, bool kVecLoad>
__device__ __forceinline__ void store_group(T* row, int j0, int n, const float (&x)[kVec]) {
  if constexpr (kVecLoad) {
    T v[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = from_f<T>(x[e]);
    *reinterpret_cast<uint4*>(row + j0) = *reinterpret_cast<const uint4*>(v);
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      if (j0 + e < n) row[j0 + e] = from_f<T>(x[e]);
  }
}

// The row a thread works on and its index within the row: kThreads / kRowThreads rows per block.
template <int kRowThreads>
struct RowSlot {
  int64_t row;
  int t;  // 0 … kRowThreads − 1
  __device__ __forceinline__ RowSlot()
      : row(int64_t(blockIdx.x) * (kThreads / kRowThreads) + threadIdx.x / kRowThreads),
        t(int(threadIdx.x % kRowThreads)) {}
};

// Grid size of a row kernel with kRowThreads threads per row.
inline unsigned row_grid(int64_t rows, int row_threads) {
  const int64_t rows_per_block = kThreads / row_threads;
  return static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
}

// ---- choosing a row kernel's layout (host) -----------------------------------------------
// A row that fits in registers is read once. `Launcher` provides
//   template <int kVec, bool kVecLoad, int kItems, int kRowThreads> void cached() const;
//   void streaming() const;  // one block per row, any length, the row read twice
// and the kernel keeps kArrays floats per column it owns (softmax: 1, backward: P and dP).

constexpr int kMaxCachedFloats = 64;  // row values one thread keeps in registers, all arrays together
constexpr int kWarpRowGroups = 4;     // groups per lane when a warp owns a row

// One block per row: the smallest power-of-two kItems whose groups cover the row, while a
// thread's arrays stay within kBudget floats each; longer rows stream.
template <int kVec, bool kVecLoad, int kItems, int kBudget, typename Launcher>
void dispatch_block_rows(int nk, const Launcher& l) {
  if (nk <= kItems * kThreads * kVec) {
    l.template cached<kVec, kVecLoad, kItems, kThreads>();
  } else if constexpr (2 * kItems * kVec <= kBudget) {
    dispatch_block_rows<kVec, kVecLoad, 2 * kItems, kBudget>(nk, l);
  } else {
    l.streaming();
  }
}

// Short rows: one warp per row, kThreads / kWarp rows per block (a block per short row would
// leave most threads idle). Longer rows: one block per row.
template <int kVec, bool kVecLoad, int kArrays, typename Launcher>
void dispatch_layout(int nk, const Launcher& l) {
  constexpr int kBudget = kMaxCachedFloats / kArrays;  // floats per array per thread
  static_assert(kWarpRowGroups * kVec <= kBudget, "a warp-owned row fits the register budget");
  if (nk <= kWarp * kVec) {
    l.template cached<kVec, kVecLoad, 1, kWarp>();
  } else if (nk <= kWarpRowGroups * kWarp * kVec) {
    l.template cached<kVec, kVecLoad, kWarpRowGroups, kWarp>();
  } else {
    dispatch_block_rows<kVec, kVecLoad, 1, kBudget>(nk, l);
  }
}

// 16-byte groups when every row starts 16-byte aligned (Nk % 8 == 0), else groups of
// kScalarGroup scalar accesses.
template <typename T, int kArrays, typename Launcher>
void dispatch_rows(int nk, const Launcher& l) {
  constexpr int kVec = kVecBytes / int(sizeof(T));
  if (nk % kVec == 0) {
    dispatch_layout<kVec, true, kArrays>(nk, l);
  } else {
    dispatch_layout<kScalarGroup, false, kArrays>(nk, l);
  }
}

}  // namespace flashio::baselines::rows
