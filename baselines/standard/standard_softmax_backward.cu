// Softmax backward of standard attention (FlashAttention Algorithm 3, line 3), dropout
// included (standard_fused; `standard` runs it with dropout off, after a separate dropout
// backward kernel, standard_elementwise.cu): per row i, with Z_ij = keep(b, h, i, j)/(1 − p)
// redrawn from the shared Philox mask (bench/core/philox.h; Z = 1 without dropout),
//   dP_ij = dP_drop_ij · Z_ij,   D_i = Σ_j P_ij · dP_ij,   dS_ij = P_ij · (dP_ij − D_i).
// D is the paper's Σ_l P_il dP_il, reduced over the row in fp32 from the stored P and dP_drop
// (the same value as rowsum(dO∘O), without O's rounding).
//
// HBM traffic per (b, h) row block, e bytes per element: a row that fits in registers
// (Nk ≤ 8192: P and dP both cached) reads P and dP_drop once and writes dS once, 3·N²·e —
// the paper's "read P, dP; write dS". Longer rows read P and dP_drop twice (pass 1: D,
// pass 2: dS). dS may overwrite dP_drop: each thread reads its own groups before it writes
// them, and no thread touches another's. Layouts as the forward softmax (standard_rows.cuh).
// Run: build/flashio run --method standard --pass bwd --seqlen 4096 [--dropout 0.1]
#include <stdexcept>

#include "baselines/standard/standard_rows.cuh"
#include "baselines/standard/standard_softmax_backward.h"
#include "bench/cuda/cuda_check.h"

namespace flashio::baselines {
namespace {

using namespace rows;

// Loads P and dP = dP_drop∘Z of columns j0 … j0 + kVec − 1; invisible columns read 0.
template <typename T, int kVec, bool kVecLoad>
__device__ __forceinline__ void load_grads(const SoftmaxBackwardParams& p, const RowDropout& drop, const T* prob_row,
                                           const T* dp_row, int j0, float (&prob)[kVec], float (&dprob)[kVec]) {
  const int nk = p.shape.seqlen_k;
  load_group<T, kVec, kVecLoad>(prob_row, j0, nk, prob);
  load_group<T, kVec, kVecLoad>(dp_row, j0, nk, dprob);
  float z[kVec];  // (kVec,) dropout factors: 1/(1 − p) or 0
  if (p.dropout.enabled) {
    drop.factors(j0, z);
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) z[e] = 1.f;
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    const bool visible = j0 + e < drop.c.visible;
    prob[e] = visible ? prob[e] : 0.f;
    dprob[e] = visible ? dprob[e] * z[e] : 0.f;
  }
}

// A row held in registers: kItems groups of kVec columns per thread, kRowThreads threads per row.
template <typename T, int kVec, bool kVecLoad, int kItems, int kRowThreads>
__global__ void __launch_bounds__(kThreads) softmax_backward_cached(const SoftmaxBackwardParams p) {
  __shared__ float scratch[kThreads / kWarp];
  const RowSlot<kRowThreads> slot;
  if (slot.row >= p.shape.rows) return;  // whole warps only: a block-per-row grid has no spare rows
  const int nk = p.shape.seqlen_k;
  const RowDropout drop{p.dropout, row_coords(p.shape, slot.row)};
  const T* prob_row = static_cast<const T*>(p.p) + slot.row * nk;
  const T* dp_row = static_cast<const T*>(p.dp) + slot.row * nk;
  float prob[kItems][kVec], dprob[kItems][kVec];  // (kItems, kVec) each: P and dP
  float dsum = 0.f;                               // this thread's share of D_i
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int j0 = (it * kRowThreads + slot.t) * kVec;
    if (j0 >= nk) continue;
    load_grads<T, kVec, kVecLoad>(p, drop, prob_row, dp_row, j0, prob[it], dprob[it]);
#pragma unroll
    for (int e = 0; e < kVec; ++e) dsum += prob[it][e] * dprob[it][e];
  }
  const float d_row = row_reduce<kRowThreads>(dsum, SumOp{}, scratch);  // D_i
  T* ds_row = static_cast<T*>(p.ds) + slot.row * nk;
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int j0 = (it * kRowThreads + slot.t) * kVec;
    if (j0 >= nk) continue;
    float ds[kVec];  // (kVec,)
#pragma unroll
    for (int e = 0; e < kVec; ++e) ds[e] = prob[it][e] * (dprob[it][e] - d_row);
    store_group<T, kVec, kVecLoad>(ds_row, j0, nk, ds);
  }
}

// Any row length, one block per row: pass 1 reduces D_i, pass 2 re-reads P and dP_drop,
// redraws Z and writes dS, both in groups of kScalarGroup columns (one Philox draw each).
// Pass 1 ends at the block reduction's barrier, so an in-place dS never overwrites a dP_drop
// another thread has yet to read.
template <typename T>
__global__ void __launch_bounds__(kThreads) softmax_backward_streaming(const SoftmaxBackwardParams p) {
  __shared__ float scratch[kThreads / kWarp];
  const int64_t row = blockIdx.x;
  const int nk = p.shape.seqlen_k;
  const RowDropout drop{p.dropout, row_coords(p.shape, row)};
  const T* prob_row = static_cast<const T*>(p.p) + row * nk;
  const T* dp_row = static_cast<const T*>(p.dp) + row * nk;
  float dsum = 0.f;
  for (int j0 = threadIdx.x * kScalarGroup; j0 < drop.c.visible; j0 += kThreads * kScalarGroup) {
    float prob[kScalarGroup], dprob[kScalarGroup];  // (kScalarGroup,) each
    load_grads<T, kScalarGroup, false>(p, drop, prob_row, dp_row, j0, prob, dprob);
#pragma unroll
    for (int e = 0; e < kScalarGroup; ++e) dsum += prob[e] * dprob[e];
  }
  const float d_row = row_reduce<kThreads>(dsum, SumOp{}, scratch);  // D_i
  T* ds_row = static_cast<T*>(p.ds) + row * nk;
  for (int j0 = threadIdx.x * kScalarGroup; j0 < nk; j0 += kThreads * kScalarGroup) {
    float prob[kScalarGroup], dprob[kScalarGroup], ds[kScalarGroup];  // (kScalarGroup,) each
    load_grads<T, kScalarGroup, false>(p, drop, prob_row, dp_row, j0, prob, dprob);
#pragma unroll
    for (int e = 0; e < kScalarGroup; ++e) ds[e] = prob[e] * (dprob[e] - d_row);
    store_group<T, kScalarGroup, false>(ds_row, j0, nk, ds);
  }
}

template <typename T>
struct SoftmaxBackwardLaunch {
  const SoftmaxBackwardParams& p;
  cudaStream_t stream;

  template <int kVec, bool kVecLoad, int kItems, int kRowThreads>
  void cached() const {
    softmax_backward_cached<T, kVec, kVecLoad, kItems, kRowThreads>
        <<<row_grid(p.shape.rows, kRowThreads), kThreads, 0, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();
  }
  void streaming() const {
    softmax_backward_streaming<T><<<row_grid(p.shape.rows, kThreads), kThreads, 0, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();
  }
};

constexpr int kBackwardArrays = 2;  // cached floats per owned column: P and dP

}  // namespace

void softmax_backward_rows(const SoftmaxBackwardParams& p, cudaStream_t stream) {
  if (p.shape.rows > kMaxGridRows) throw std::invalid_argument("softmax backward: more than 2^31-1 rows");
  if (p.shape.rows == 0 || p.shape.seqlen_k == 0) return;
  if (p.bf16) {
    dispatch_rows<__nv_bfloat16, kBackwardArrays>(p.shape.seqlen_k, SoftmaxBackwardLaunch<__nv_bfloat16>{p, stream});
  } else {
    dispatch_rows<half, kBackwardArrays>(p.shape.seqlen_k, SoftmaxBackwardLaunch<half>{p, stream});
  }
}

}  // namespace flashio::baselines
