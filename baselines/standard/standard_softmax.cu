// Row softmax of standard attention (FlashAttention Algorithm 0, line 2). standard_fused uses it
// with the masks and dropout fused in: P = softmax(mask(S)), and with p > 0 also P_drop = P∘Z
// for the P·V GEMM, where Z_ij = keep(b, h, i, j)/(1 − p) from the shared Philox mask
// (bench/core/philox.h). The normalisation uses the undropped P, as the reference does; Z
// multiplies afterwards. `standard` uses it plain (no mask, no dropout: separate kernels in
// standard_elementwise.cu), on scores already masked to −∞; a row that is −∞ throughout gives
// P = 0 (as a row with no visible key does here), where PyTorch's softmax would give NaN.
//
// HBM traffic per (b, h) row block, e bytes per element: a row that fits in registers
// (Nk ≤ 16384) reads S once and writes P once, N²·e each — the least a separate softmax
// kernel can move; with dropout it also writes P_drop (N²·e more; the mask itself is never
// stored: the backward redraws it). Longer rows read S twice (online max/sum, then the
// write). Layouts (standard_rows.cuh): rows ≤ 4 groups per lane: one warp per row, eight
// rows per block; longer rows: one thread block per row. Rows with Nk % 8 == 0 use 16-byte
// accesses. Masked entries get P = 0; a row with no visible key is all zeros.
// Run: build/flashio run --method standard --seqlen 4096 [--dropout 0.1]
#include <stdexcept>

#include "baselines/standard/standard_rows.cuh"
#include "baselines/standard/standard_softmax.h"
#include "bench/cuda/cuda_check.h"

namespace flashio::baselines {
namespace {

using namespace rows;

// Writes P (and P_drop) of columns j0 … j0 + kVec − 1 from the normalised values `prob`.
template <typename T, int kVec, bool kVecLoad>
__device__ __forceinline__ void write_probs(const SoftmaxParams& p, const RowDropout& drop, T* out, T* out_drop, int j0,
                                            float (&prob)[kVec]) {
  const int nk = p.shape.seqlen_k;
  store_group<T, kVec, kVecLoad>(out, j0, nk, prob);
  if (p.dropout.enabled) {
    float z[kVec];  // (kVec,) dropout factors: 1/(1 − p) or 0
    drop.factors(j0, z);
#pragma unroll
    for (int e = 0; e < kVec; ++e) prob[e] *= z[e];
    store_group<T, kVec, kVecLoad>(out_drop, j0, nk, prob);
  }
}

// A row held in registers: kItems groups of kVec columns per thread, kRowThreads threads
// per row. With P_drop written over S (in place), every thread reads its own groups before
// it writes them, and no thread touches another's.
template <typename T, int kVec, bool kVecLoad, int kItems, int kRowThreads>
__global__ void __launch_bounds__(kThreads) softmax_cached(const SoftmaxParams p) {
  __shared__ float scratch[kThreads / kWarp];
  const RowSlot<kRowThreads> slot;
  if (slot.row >= p.shape.rows) return;  // whole warps only: a block-per-row grid has no spare rows
  const int nk = p.shape.seqlen_k;
  const RowCoords c = row_coords(p.shape, slot.row);
  const T* s = static_cast<const T*>(p.s) + slot.row * nk;
  float x[kItems][kVec];  // (kItems, kVec): masked scores, then exp(S − max)
  float mx = -FLT_MAX;
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int j0 = (it * kRowThreads + slot.t) * kVec;
    if (j0 < nk) load_group<T, kVec, kVecLoad>(s, j0, nk, x[it]);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      x[it][e] = j0 + e < c.visible ? x[it][e] : -INFINITY;
      mx = fmaxf(mx, x[it][e]);
    }
  }
  mx = row_reduce<kRowThreads>(mx, MaxOp{}, scratch);
  float sum = 0.f;
#pragma unroll
  for (int it = 0; it < kItems; ++it)
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      x[it][e] = __expf(x[it][e] - mx);
      sum += x[it][e];
    }
  sum = row_reduce<kRowThreads>(sum, SumOp{}, scratch);
  const float inv = c.visible > 0 && sum > 0.f ? 1.f / sum : 0.f;  // a row masked to −∞ throughout: P = 0
  T* out = static_cast<T*>(p.p) + slot.row * nk;
  T* out_drop = p.dropout.enabled ? static_cast<T*>(p.p_drop) + slot.row * nk : nullptr;
  const RowDropout drop{p.dropout, c};
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int j0 = (it * kRowThreads + slot.t) * kVec;
    if (j0 >= nk) continue;
    float prob[kVec];  // (kVec,)
#pragma unroll
    for (int e = 0; e < kVec; ++e) prob[e] = x[it][e] * inv;
    write_probs<T, kVec, kVecLoad>(p, drop, out, out_drop, j0, prob);
  }
}

// Any row length, one block per row: pass 1 keeps a running (max, sum) per thread; pass 2
// re-reads S and writes P (and P_drop) in groups of kScalarGroup columns, one Philox draw
// each. Pass 1 ends at the block reduction's barrier, so an in-place P_drop never
// overwrites a score another thread has yet to read.
template <typename T>
__global__ void __launch_bounds__(kThreads) softmax_streaming(const SoftmaxParams p) {
  __shared__ float scratch[kThreads / kWarp];
  const int64_t row = blockIdx.x;
  const int nk = p.shape.seqlen_k;
  const RowCoords c = row_coords(p.shape, row);
  const T* s = static_cast<const T*>(p.s) + row * nk;
  float mx = -INFINITY, sum = 0.f;
  for (int j = threadIdx.x; j < c.visible; j += kThreads) {
    const float x = to_f(s[j]);
    if (x == -INFINITY) continue;  // masked by a separate kernel (unfused standard): exp = 0
    const float m_new = fmaxf(mx, x);
    sum = sum * __expf(mx - m_new) + __expf(x - m_new);
    mx = m_new;
  }
  const float row_max = row_reduce<kThreads>(mx, MaxOp{}, scratch);
  const float mine = mx == -INFINITY ? 0.f : sum * __expf(mx - row_max);
  const float total = row_reduce<kThreads>(mine, SumOp{}, scratch);
  const float inv = c.visible > 0 && total > 0.f ? 1.f / total : 0.f;  // a row masked to −∞ throughout: P = 0
  T* out = static_cast<T*>(p.p) + row * nk;
  T* out_drop = p.dropout.enabled ? static_cast<T*>(p.p_drop) + row * nk : nullptr;
  const RowDropout drop{p.dropout, c};
  for (int j0 = threadIdx.x * kScalarGroup; j0 < nk; j0 += kThreads * kScalarGroup) {
    float prob[kScalarGroup];  // (kScalarGroup,)
    load_group<T, kScalarGroup, false>(s, j0, nk, prob);
#pragma unroll
    for (int e = 0; e < kScalarGroup; ++e)
      prob[e] = j0 + e < c.visible && inv > 0.f ? __expf(prob[e] - row_max) * inv : 0.f;
    write_probs<T, kScalarGroup, false>(p, drop, out, out_drop, j0, prob);
  }
}

template <typename T>
struct SoftmaxLaunch {
  const SoftmaxParams& p;
  cudaStream_t stream;

  template <int kVec, bool kVecLoad, int kItems, int kRowThreads>
  void cached() const {
    softmax_cached<T, kVec, kVecLoad, kItems, kRowThreads>
        <<<row_grid(p.shape.rows, kRowThreads), kThreads, 0, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();
  }
  void streaming() const {
    softmax_streaming<T><<<row_grid(p.shape.rows, kThreads), kThreads, 0, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();
  }
};

constexpr int kSoftmaxArrays = 1;  // cached floats per owned column: the scores

}  // namespace

void softmax_rows(const SoftmaxParams& p, cudaStream_t stream) {
  if (p.shape.rows > kMaxGridRows) throw std::invalid_argument("softmax: more than 2^31-1 rows");
  if (p.dropout.enabled && !p.p_drop) throw std::invalid_argument("softmax: dropout needs a P_drop buffer");
  if (p.shape.rows == 0 || p.shape.seqlen_k == 0) return;
  if (p.bf16) {
    dispatch_rows<__nv_bfloat16, kSoftmaxArrays>(p.shape.seqlen_k, SoftmaxLaunch<__nv_bfloat16>{p, stream});
  } else {
    dispatch_rows<half, kSoftmaxArrays>(p.shape.seqlen_k, SoftmaxLaunch<half>{p, stream});
  }
}

}  // namespace flashio::baselines
