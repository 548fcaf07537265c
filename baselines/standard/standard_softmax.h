// The softmax step of standard attention (FlashAttention Algorithm 0, line 2, with dropout
// applied after the softmax as in Algorithm 2 and the reference): one memory-bound kernel that reads the scaled
// scores S from HBM, applies the causal and key-padding masks, and writes P = softmax(S)
// to HBM in the input type — and, with dropout, P_drop = P∘Z (Z = keep/(1 − p) from the
// shared Philox mask) for the P·V GEMM, in the same pass: one read of S, one or two writes.
// That is standard_fused's kernel; `standard` calls it with no mask and no dropout, between
// its separate masking and dropout kernels (standard_elementwise.h).
#pragma once
#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace flashio::baselines {

// The rows of a (B·H·Nq × Nk) score-shaped matrix and their masks.
struct RowShape {
  int64_t rows = 0;  // B·H·Nq, row (b·H + h)·Nq + i
  int seqlen_q = 0, seqlen_k = 0, heads = 0;
  const int* key_lengths = nullptr;  // [B] valid keys per sequence, or null
  bool causal = false;               // top-left: key j visible to query i iff j <= i
};

// Dropout as bench/core/philox.h defines it (offset 0, h = query head).
struct DropoutParams {
  bool enabled = false;  // p > 0
  uint64_t seed = 0;
  uint32_t threshold = 0;  // dropout_threshold(p), computed on the host
  float scale = 1.f;       // dropout_scale(p) = 1/(1 − p)
};

struct SoftmaxParams {
  const void* s = nullptr;  // [rows, Nk] scores, already scaled (cuBLAS alpha)
  void* p = nullptr;        // [rows, Nk] P
  void* p_drop = nullptr;   // [rows, Nk] P∘Z, written when dropout is enabled; may be `s` (in place)
  RowShape shape;
  DropoutParams dropout;
  bool bf16 = false;
};

void softmax_rows(const SoftmaxParams& params, cudaStream_t stream);

}  // namespace flashio::baselines
