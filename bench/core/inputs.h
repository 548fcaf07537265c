// Random inputs of a problem, generated on the host (so the reference reads exactly what
// the GPU reads): Q, K, V and dO standard normal, rounded to the problem's dtype.
// Deterministic in (seed, tensor, chunk) and independent of the thread count.
#pragma once
#include <cstdint>
#include <vector>

#include "bench/core/problem.h"

namespace flashio {

struct HostInputs {
  std::vector<uint16_t> q, k, v;
  std::vector<uint16_t> d_o;  // only when a backward pass needs it
  std::vector<int32_t> key_lengths;
};

HostInputs make_inputs(const Problem& p, bool with_grad_output);

// Fills `out` with standard-normal values in `dtype`; `stream` separates tensors.
void fill_normal(std::vector<uint16_t>& out, DType dtype, uint64_t seed, uint64_t stream);

}  // namespace flashio
