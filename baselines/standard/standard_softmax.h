// The softmax step of standard attention (FlashAttention Algorithm 0, line 2): one
// memory-bound kernel that reads the scaled scores S from HBM, applies the causal and
// key-padding masks, and writes P = softmax(S) to HBM in the input type.
#pragma once
#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace flashio::baselines {

struct SoftmaxParams {
  const void* s;  // [rows, Nk] scores, already scaled (cuBLAS alpha)
  void* p;        // [rows, Nk]
  int64_t rows;   // B·H·Nq
  int seqlen_q, seqlen_k, heads;
  const int* key_lengths;  // [B] or null
  bool causal;
  bool bf16;
};

void softmax_rows(const SoftmaxParams& params, cudaStream_t stream);

}  // namespace flashio::baselines
