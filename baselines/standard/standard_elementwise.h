// The separate elementwise kernels of unfused standard attention (the `standard` method,
// FlashAttention Algorithms 0 and 3 as PyTorch runs them): each one memory-bound pass over a
// score-shaped (B·H·Nq × Nk) matrix in HBM, as masked_fill_, dropout and dropout's backward:
//   mask_scores       S := −∞ where key j is invisible to query i (causal, key padding), in place:
//                     reads S, writes S (every element, as masked_fill_ does).
//   dropout_forward   P_drop = P∘Z and the mask: reads P, writes P_drop and one byte per element
//                     (1 kept, 0 dropped; PyTorch keeps a bool mask for the backward).
//   dropout_backward  dP = dP_drop∘Z from the stored mask: reads dP_drop and the mask, writes dP
//                     (may be in place over dP_drop).
// Z_ij = keep(b, h, i, j)/(1 − p): the mask is *drawn* from the shared Philox generator
// (bench/core/philox.h, offset 0), so outputs match every other method exactly; the
// backward reads it back from HBM instead of redrawing it. The softmax (S → P) and the softmax
// backward (dS = P∘(dP − D)) are standard_softmax.h's row kernels with masks and dropout off.
#pragma once
#include <cstdint>

#include "baselines/standard/standard_softmax.h"

namespace flashio::baselines {

struct MaskScoresParams {
  void* s = nullptr;  // [rows, Nk] scores, overwritten in place
  RowShape shape;     // key_lengths and/or causal: the masks to apply
  bool bf16 = false;
};

struct DropoutForwardParams {
  const void* p = nullptr;  // [rows, Nk] P
  void* p_drop = nullptr;   // [rows, Nk] P∘Z (may be a dead buffer such as S; not `p`)
  uint8_t* mask = nullptr;  // [rows, Nk] 1 = kept, 0 = dropped
  RowShape shape;           // rows, seqlen_q, seqlen_k, heads (for b, h, i of a row); masks unused
  DropoutParams dropout;    // enabled
  bool bf16 = false;
};

struct DropoutBackwardParams {
  const void* dp_drop = nullptr;  // [rows, Nk] dO·Vᵀ
  const uint8_t* mask = nullptr;  // [rows, Nk] as dropout_forward wrote it
  void* dp = nullptr;             // [rows, Nk] dP_drop∘Z; may be `dp_drop` (in place)
  RowShape shape;
  float scale = 1.f;  // 1/(1 − p)
  bool bf16 = false;
};

void mask_scores(const MaskScoresParams& params, cudaStream_t stream);
void dropout_forward(const DropoutForwardParams& params, cudaStream_t stream);
void dropout_backward(const DropoutBackwardParams& params, cudaStream_t stream);

}  // namespace flashio::baselines
