// The separate elementwise kernels of unfused standard attention: masking (in place over S),
// dropout (P → P_drop and a one-byte mask) and dropout's backward (dP_drop → dP from the mask);
// see standard_elementwise.h. Algorithm 0 line 2 / Algorithm 3 line 3 split into the passes
// PyTorch runs (masked_fill_, softmax, dropout), each reading and writing HBM once.
//
// Layout: one thread per group of kGroup = 8 consecutive columns of a row (a 16-byte access
// when Nk % 8 == 0, else eight scalar ones), grid-stride over B·H·Nq·⌈Nk/8⌉ groups. A group is
// one Philox call of the dropout mask (kDropoutColumnsPerDraw columns), drawn once.
// HBM traffic per (b, h), E = Nq·Nk elements of e bytes:
//   mask_scores       E·e read, E·e written
//   dropout_forward   E·e read, E·e + E (mask bytes) written
//   dropout_backward  E·e + E read, E·e written
// Run: build/flashio run --method standard --pass fwdbwd --seqlen 4096 --dropout 0.1 --padding random
#include <stdexcept>

#include "baselines/standard/standard_elementwise.h"
#include "baselines/standard/standard_rows.cuh"
#include "bench/cuda/cuda_check.h"

namespace flashio::baselines {
namespace {

using namespace rows;

constexpr int kGroup = int(kDropoutColumnsPerDraw);  // columns per thread: one Philox call
static_assert(kGroup * 2 == kVecBytes, "a group of 16-bit elements is one 16-byte access");
constexpr int64_t kMaxBlocks = 1 << 20;  // grid-stride beyond this many blocks

// The group a grid-stride step is at: row, first column, and the row's coordinates.
struct Group {
  int64_t row;
  int j0;
};

__device__ __forceinline__ Group group_at(int64_t index, int groups_per_row) {
  return Group{index / groups_per_row, int(index % groups_per_row) * kGroup};
}

__host__ __device__ inline int64_t groups_of(const RowShape& s) {
  return s.rows * ((s.seqlen_k + kGroup - 1) / kGroup);
}

inline unsigned grid_of(int64_t groups) {
  return unsigned(std::min<int64_t>((groups + kThreads - 1) / kThreads, kMaxBlocks));
}

// The eight mask bytes of a group: one 8-byte store, or bytes up to the row's end.
template <bool kVecLoad>
__device__ __forceinline__ void store_mask(uint8_t* row, int j0, int n, const uint8_t (&m)[kGroup]) {
  if constexpr (kVecLoad) {
    *reinterpret_cast<uint2*>(row + j0) = *reinterpret_cast<const uint2*>(m);
  } else {
#pragma unroll
    for (int e = 0; e < kGroup; ++e)
      if (j0 + e < n) row[j0 + e] = m[e];
  }
}

template <bool kVecLoad>
__device__ __forceinline__ void load_mask(const uint8_t* row, int j0, int n, uint8_t (&m)[kGroup]) {
  if constexpr (kVecLoad) {
    *reinterpret_cast<uint2*>(m) = *reinterpret_cast<const uint2*>(row + j0);
  } else {
#pragma unroll
    for (int e = 0; e < kGroup; ++e) m[e] = j0 + e < n ? row[j0 + e] : 0;
  }
}

template <typename T, bool kVecLoad>
__global__ void __launch_bounds__(kThreads) mask_scores_kernel(const MaskScoresParams p) {
  const int nk = p.shape.seqlen_k, groups_per_row = (nk + kGroup - 1) / kGroup;
  const int64_t groups = groups_of(p.shape);
  for (int64_t index = int64_t(blockIdx.x) * kThreads + threadIdx.x; index < groups;
       index += int64_t(gridDim.x) * kThreads) {
    const Group gr = group_at(index, groups_per_row);
    const int visible = row_coords(p.shape, gr.row).visible;
    T* row = static_cast<T*>(p.s) + gr.row * nk;
    float x[kGroup];  // (kGroup,) scores
    load_group<T, kGroup, kVecLoad>(row, gr.j0, nk, x);
#pragma unroll
    for (int e = 0; e < kGroup; ++e) x[e] = gr.j0 + e < visible ? x[e] : -INFINITY;
    store_group<T, kGroup, kVecLoad>(row, gr.j0, nk, x);
  }
}

template <typename T, bool kVecLoad>
__global__ void __launch_bounds__(kThreads) dropout_forward_kernel(const DropoutForwardParams p) {
  const int nk = p.shape.seqlen_k, groups_per_row = (nk + kGroup - 1) / kGroup;
  const int64_t groups = groups_of(p.shape);
  for (int64_t index = int64_t(blockIdx.x) * kThreads + threadIdx.x; index < groups;
       index += int64_t(gridDim.x) * kThreads) {
    const Group gr = group_at(index, groups_per_row);
    const RowDropout drop{p.dropout, row_coords(p.shape, gr.row)};
    float x[kGroup], z[kGroup];  // (kGroup,) P, then P∘Z; the factors Z
    load_group<T, kGroup, kVecLoad>(static_cast<const T*>(p.p) + gr.row * nk, gr.j0, nk, x);
    drop.factors(gr.j0, z);
    uint8_t keep[kGroup];  // (kGroup,)
#pragma unroll
    for (int e = 0; e < kGroup; ++e) {
      keep[e] = z[e] != 0.f;
      x[e] *= z[e];
    }
    store_group<T, kGroup, kVecLoad>(static_cast<T*>(p.p_drop) + gr.row * nk, gr.j0, nk, x);
    store_mask<kVecLoad>(p.mask + gr.row * nk, gr.j0, nk, keep);
  }
}

template <typename T, bool kVecLoad>
__global__ void __launch_bounds__(kThreads) dropout_backward_kernel(const DropoutBackwardParams p) {
  const int nk = p.shape.seqlen_k, groups_per_row = (nk + kGroup - 1) / kGroup;
  const int64_t groups = groups_of(p.shape);
  for (int64_t index = int64_t(blockIdx.x) * kThreads + threadIdx.x; index < groups;
       index += int64_t(gridDim.x) * kThreads) {
    const Group gr = group_at(index, groups_per_row);
    float x[kGroup];       // (kGroup,) dP_drop, then dP
    uint8_t keep[kGroup];  // (kGroup,)
    load_group<T, kGroup, kVecLoad>(static_cast<const T*>(p.dp_drop) + gr.row * nk, gr.j0, nk, x);
    load_mask<kVecLoad>(p.mask + gr.row * nk, gr.j0, nk, keep);
#pragma unroll
    for (int e = 0; e < kGroup; ++e) x[e] = keep[e] ? x[e] * p.scale : 0.f;
    store_group<T, kGroup, kVecLoad>(static_cast<T*>(p.dp) + gr.row * nk, gr.j0, nk, x);
  }
}

// Launches kernel<T, kVecLoad> for the element type and the row alignment (16-byte rows when
// Nk % 8 == 0).
template <template <typename, bool> class Kernel, typename Params>
void launch(const Params& p, cudaStream_t stream) {
  const int64_t groups = groups_of(p.shape);
  if (groups == 0) return;
  const bool vec = p.shape.seqlen_k % kGroup == 0;
  auto go = [&](auto kernel) {
    kernel<<<grid_of(groups), kThreads, 0, stream>>>(p);
    FLASHIO_CHECK_LAUNCH();
  };
  if (p.bf16) {
    vec ? go(Kernel<__nv_bfloat16, true>::get()) : go(Kernel<__nv_bfloat16, false>::get());
  } else {
    vec ? go(Kernel<half, true>::get()) : go(Kernel<half, false>::get());
  }
}

template <typename T, bool V>
struct MaskScores {
  static auto get() { return mask_scores_kernel<T, V>; }
};
template <typename T, bool V>
struct DropoutForward {
  static auto get() { return dropout_forward_kernel<T, V>; }
};
template <typename T, bool V>
struct DropoutBackward {
  static auto get() { return dropout_backward_kernel<T, V>; }
};

}  // namespace

void mask_scores(const MaskScoresParams& p, cudaStream_t stream) {
  if (!p.shape.causal && !p.shape.key_lengths) throw std::invalid_argument("mask_scores: no mask to apply");
  launch<MaskScores>(p, stream);
}

void dropout_forward(const DropoutForwardParams& p, cudaStream_t stream) {
  if (!p.dropout.enabled || !p.mask || !p.p_drop || p.p_drop == p.p)
    throw std::invalid_argument("dropout_forward: needs dropout, a mask buffer and a P_drop buffer other than P");
  launch<DropoutForward>(p, stream);
}

void dropout_backward(const DropoutBackwardParams& p, cudaStream_t stream) {
  if (!p.mask) throw std::invalid_argument("dropout_backward: needs the forward's mask");
  launch<DropoutBackward>(p, stream);
}

}  // namespace flashio::baselines
