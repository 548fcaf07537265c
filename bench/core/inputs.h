// Random inputs of a problem: Q, K, V and dO standard normal, rounded to the problem's dtype.
// Each element is a function of (seed, tensor, index) alone (input_word), so the host and the
// GPU (bench/cuda/device_inputs.h) generate the same bits, any part of a tensor can be made
// without the rest, and the result does not depend on the thread count.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/core/dtype.h"
#include "bench/core/host_device.h"
#include "bench/core/problem.h"
#include "bench/core/rng.h"

namespace flashio {

// The generator's stream of each tensor.
enum class InputTensor : uint64_t { Q = 1, K = 2, V = 3, dO = 4 };

// Elements per chunk of the generator: 2^18.
constexpr unsigned kInputChunkBits = 18;

// Element `index` of a tensor: chunks of 2^18 elements, each a SplitMix64 sequence seeded from
// (seed, tensor, chunk) that spends two draws (one Box-Muller value) per element; the draws of
// element j of a chunk are the sequence's (2j+1)-th and (2j+2)-th, reached by one jump.
FLASHIO_HOST_DEVICE uint16_t input_word(DType dtype, uint64_t seed, InputTensor tensor, uint64_t index) {
  const uint64_t chunk = index >> kInputChunkBits, j = index & ((uint64_t(1) << kInputChunkBits) - 1);
  const uint64_t chunk_seed = seed * 0x9E3779B97F4A7C15ull ^ (uint64_t(tensor) << 48) ^ chunk;
  SplitMix64 rng(chunk_seed + 2 * j * SplitMix64::kGamma);
  return from_float(dtype, float(rng.normal()));
}

struct HostInputs {
  std::vector<uint16_t> q, k, v;
  std::vector<uint16_t> d_o;  // only when a backward pass needs it
  std::vector<int32_t> key_lengths;
};

// The logical tensors [B, H, Nq, d], [B, Hkv, Nk, d] (also of a packed varlen problem: its padded twin's).
HostInputs make_inputs(const Problem& p, bool with_grad_output);

// The host keeps the whole chunks it has generated for the process, up to this many bytes (the
// least recently used dropped first), and copies a chunk it is asked for again (inputs.cpp).
constexpr size_t kInputCacheBytes = size_t(512) << 20;

struct InputCacheStats {
  size_t chunks = 0, bytes = 0;  // kept now
  size_t hits = 0, misses = 0;   // whole chunks asked for, since the process started
};
InputCacheStats input_cache_stats();

// Elements [first, first + count) of `tensor` into out[0, count), on every core.
void fill_normal(uint16_t* out, size_t first, size_t count, DType dtype, uint64_t seed, InputTensor tensor);
// The heads `heads` of a tensor laid out [heads][head_words], into `out` at their places, on every
// core (one pool for all of them: a few heads keep every core busy).
void fill_normal_heads(uint16_t* out, int64_t head_words, const std::vector<int64_t>& heads, DType dtype,
                       uint64_t seed, InputTensor tensor);

}  // namespace flashio
