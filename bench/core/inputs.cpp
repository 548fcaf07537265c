#include "bench/core/inputs.h"

#include <algorithm>
#include <thread>

#include "bench/core/rng.h"

namespace flashio {

void fill_normal(std::vector<uint16_t>& out, DType dtype, uint64_t seed, uint64_t stream) {
  constexpr size_t kChunk = size_t(1) << 18;  // elements per independently seeded chunk
  const size_t chunks = (out.size() + kChunk - 1) / kChunk;
  const unsigned threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), unsigned(chunks)));
  auto work = [&](unsigned tid) {
    for (size_t c = tid; c < chunks; c += threads) {
      SplitMix64 rng(seed * 0x9E3779B97F4A7C15ull ^ (stream << 48) ^ c);
      const size_t end = std::min(out.size(), (c + 1) * kChunk);
      for (size_t i = c * kChunk; i < end; ++i) out[i] = from_float(dtype, float(rng.normal()));
    }
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
  in.q.resize(size_t(p.q_elements()));
  in.k.resize(size_t(p.kv_elements()));
  in.v.resize(size_t(p.kv_elements()));
  fill_normal(in.q, p.dtype, p.seed, 1);
  fill_normal(in.k, p.dtype, p.seed, 2);
  fill_normal(in.v, p.dtype, p.seed, 3);
  if (with_grad_output) {
    in.d_o.resize(size_t(p.q_elements()));
    fill_normal(in.d_o, p.dtype, p.seed, 4);
  }
  in.key_lengths = key_lengths(p);
  return in;
}

}  // namespace flashio
