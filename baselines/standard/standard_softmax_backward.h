// The softmax backward step of standard attention (FlashAttention Algorithm 3, line 3, with
// dropout): one memory-bound kernel that reads P and dP_drop = dO·Vᵀ from HBM, redraws the
// dropout factors Z from the shared Philox mask, and writes
//   dP = dP_drop∘Z,  D_i = Σ_j P_ij·dP_ij,  dS_ij = P_ij·(dP_ij − D_i)
// to HBM in the input type. Masked entries have P = 0, so dS = 0 there.
#pragma once
#include <cstdint>

#include "baselines/standard/standard_softmax.h"

namespace flashio::baselines {

struct SoftmaxBackwardParams {
  const void* p = nullptr;   // [rows, Nk] P (undropped), as softmax_rows wrote it
  const void* dp = nullptr;  // [rows, Nk] dP_drop = dO·Vᵀ
  void* ds = nullptr;        // [rows, Nk] dS; may be `dp` (in place)
  RowShape shape;
  DropoutParams dropout;  // the forward's: same seed, same mask
  bool bf16 = false;
};

void softmax_backward_rows(const SoftmaxBackwardParams& params, cudaStream_t stream);

}  // namespace flashio::baselines
