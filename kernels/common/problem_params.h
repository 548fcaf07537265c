// Fills the fields every fused kernel's argument block shares (shape, masks, softmax scale,
// dropout) from a Problem: host-only, used by the flash1 and flash2 methods.
#pragma once
#include "bench/core/problem.h"
#include "bench/core/philox.h"

namespace flashio {

template <typename Params>
void fill_problem_params(const Problem& p, Params& k) {
  constexpr double kLog2e = 1.4426950408889634;
  k.batch = int(p.batch);
  k.heads = int(p.heads);
  k.kv_heads = int(p.kvh());
  k.seqlen_q = int(p.seqlen_q);
  k.seqlen_k = int(p.nk());
  k.head_dim = int(p.head_dim);
  k.scale_log2 = float(p.scale() * kLog2e);
  k.causal = p.causal;
  k.dropout = p.dropout > 0.0;
  k.dropout_threshold = dropout_threshold(p.dropout);
  k.dropout_scale = float(dropout_scale(p.dropout));
  k.seed = p.seed;
}

}  // namespace flashio
