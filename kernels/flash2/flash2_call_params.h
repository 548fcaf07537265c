// The argument blocks of flash2's kernels for one call: the call's buffers plus the
// problem's shape, masks, scale and dropout. Host-only; shared by flash2 and
// blocksparse_flash (which adds its block lists), so both fill them the same way.
#pragma once
#include "bench/core/method.h"
#include "bench/core/problem.h"
#include "kernels/common/problem_params.h"
#include "kernels/flash2/flash2_params.h"

namespace flashio {

inline kernels::FwdParams flash2_fwd_params(const Problem& p, const AttentionBuffers& buf) {
  kernels::FwdParams k{};
  k.q = buf.q;
  k.k = buf.k;
  k.v = buf.v;
  k.o = buf.o;
  k.lse = buf.lse;
  k.key_lengths = buf.key_lengths;
  fill_problem_params(p, k);
  if (p.packed()) {  // the varlen kernels (a null cu_seqlens selects the dense ones)
    k.cu_seqlens = buf.cu_seqlens;
    k.total_tokens = int(p.total_tokens());
    k.key_lengths = nullptr;
  }
  return k;
}

// `d_sum` (rowsum(dO∘O)), `dq_accum` (fp32 dQ) and, when p.deterministic, `dq_semaphore`
// ([B, H, ⌈Nq/Br⌉] ints, Br of flash2_bwd_tile) are the plan's workspace.
inline kernels::BwdParams flash2_bwd_params(const Problem& p, const AttentionBuffers& buf, float* d_sum,
                                                  float* dq_accum, int* dq_semaphore = nullptr) {
  kernels::BwdParams k{};
  k.q = buf.q;
  k.k = buf.k;
  k.v = buf.v;
  k.o = buf.o;
  k.d_o = buf.d_o;
  k.lse = buf.lse;
  k.d_sum = d_sum;
  k.dq_accum = dq_accum;
  k.dq = buf.dq;
  k.dk = buf.dk;
  k.dv = buf.dv;
  k.key_lengths = buf.key_lengths;
  fill_problem_params(p, k);
  k.scale = float(p.scale());
  k.deterministic = p.deterministic;
  k.dq_semaphore = dq_semaphore;
  return k;
}

}  // namespace flashio
