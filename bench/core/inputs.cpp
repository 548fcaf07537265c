#include "bench/core/inputs.h"

#include <algorithm>
#include <utility>

#include "bench/core/parallel.h"

namespace flashio {

namespace {

// Elements [first, first + count) of `tensor` into out[first - base, first - base + count) for each
// range, on every core: one pool of threads for all the ranges, each taking pieces of 2^16 elements.
void fill_ranges(uint16_t* out, size_t base, const std::vector<std::pair<size_t, size_t>>& ranges, DType dtype,
                 uint64_t seed, InputTensor tensor) {
  constexpr size_t kPiece = size_t(1) << 16;  // elements per unit of work
  std::vector<std::pair<size_t, size_t>> pieces;  // [begin, end)
  for (const auto& [first, count] : ranges)
    for (size_t b = first; b < first + count; b += kPiece) pieces.push_back({b, std::min(first + count, b + kPiece)});
  for_each_item(pieces.size(), 0, [&](int, size_t c) {  // every core, the next piece each
    for (size_t i = pieces[c].first; i < pieces[c].second; ++i) out[i - base] = input_word(dtype, seed, tensor, i);
  });
}

}  // namespace

void fill_normal(uint16_t* out, size_t first, size_t count, DType dtype, uint64_t seed, InputTensor tensor) {
  fill_ranges(out, first, {{first, count}}, dtype, seed, tensor);
}

void fill_normal_heads(uint16_t* out, int64_t head_words, const std::vector<int64_t>& heads, DType dtype,
                       uint64_t seed, InputTensor tensor) {
  std::vector<std::pair<size_t, size_t>> ranges;
  for (int64_t h : heads) ranges.push_back({size_t(h * head_words), size_t(head_words)});
  fill_ranges(out, 0, ranges, dtype, seed, tensor);
}

HostInputs make_inputs(const Problem& p, bool with_grad_output) {
  HostInputs in;
  auto make = [&](std::vector<uint16_t>& out, int64_t elements, InputTensor tensor) {
    out.resize(size_t(elements));
    fill_normal(out.data(), 0, out.size(), p.dtype, p.seed, tensor);
  };
  // Logical [B, H, Nq, d] and [B, Hkv, Nk, d] (a packed varlen problem's padded twin: the packed
  // tensors hold these values at the real tokens, bench/cuda/device_inputs.h).
  const int64_t q_elements = p.batch * p.heads * p.seqlen_q * p.head_dim;
  const int64_t kv_elements = p.batch * p.kvh() * p.nk() * p.head_dim;
  make(in.q, q_elements, InputTensor::Q);
  make(in.k, kv_elements, InputTensor::K);
  make(in.v, kv_elements, InputTensor::V);
  if (with_grad_output) make(in.d_o, q_elements, InputTensor::dO);
  in.key_lengths = key_lengths(p);
  return in;
}

}  // namespace flashio
