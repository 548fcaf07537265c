#include "bench/core/inputs.h"

#include <algorithm>
#include <thread>

namespace flashio {

void fill_normal(uint16_t* out, size_t first, size_t count, DType dtype, uint64_t seed, InputTensor tensor) {
  constexpr size_t kPiece = size_t(1) << 16;  // elements per unit of work
  const size_t pieces = (count + kPiece - 1) / kPiece;
  const unsigned threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), unsigned(pieces)));
  auto work = [&](unsigned tid) {
    for (size_t c = tid; c < pieces; c += threads)
      for (size_t i = c * kPiece; i < std::min(count, (c + 1) * kPiece); ++i)
        out[i] = input_word(dtype, seed, tensor, first + i);
  };
  if (threads <= 1) {
    work(0);
    return;
  }
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
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
