// The plan shared by the two materialized-attention methods (FlashAttention Algorithms 0 and 3):
// the same cuBLAS GEMMs, S and P in HBM; they differ in how the elementwise steps between the
// GEMMs run:
//   StandardKernels::Separate  `standard` (baselines/standard/standard_method.cpp): one kernel
//                              each — masking in place over S, softmax S → P, dropout P → P_drop
//                              and a stored one-byte mask; backward: dropout backward from the
//                              stored mask, softmax backward — as PyTorch runs them.
//   StandardKernels::Fused     `standard_fused` (standard_fused_method.cpp): mask + softmax +
//                              dropout in one row kernel, dropout redrawn from Philox inside the
//                              softmax backward: a stronger baseline than the paper's.
// Records carry the choice as tiles.elementwise ("separate" / "fused"), which the IO model reads.
#pragma once
#include <memory>

#include "bench/core/method.h"

namespace flashio {

enum class StandardKernels { Separate, Fused };

const char* to_string(StandardKernels k);  // "separate", "fused"

// Workspace bytes a pass needs beyond cuBLAS's (E = B·H·Nq·Nk elements of e bytes):
//   forward                       S (P_drop over it with dropout), P; Separate + dropout: mask
//   backward/fwd+bwd, p = 0       S (dP/dS over it: dead after the forward), P
//   backward/fwd+bwd, p > 0       S/P_drop, P, dP/dS; Separate: + mask (E bytes)
struct StandardWorkspace {
  int score_buffers = 0;    // E·e each
  int64_t score_bytes = 0;  // E·e
  int64_t mask_bytes = 0;   // E (one byte per element) or 0
  int64_t total() const { return score_buffers * score_bytes + mask_bytes; }
};
StandardWorkspace standard_workspace(const Problem& p, Pass pass, StandardKernels k);

// The MethodInfo fields both share (name, summary and notes are each method's).
MethodInfo standard_common_info();

// supports() of both: check_common, head_dim % 8, the workspace against the GPU's memory, and
// cuBLAS's int dimensions.
Support standard_supports(const MethodInfo& info, const Problem& p, Pass pass, const DeviceInfo& dev,
                          StandardKernels k);

std::unique_ptr<Plan> make_standard_plan(const Problem& p, Pass pass, DeviceAllocator& alloc, StandardKernels k);

}  // namespace flashio
