#include "bench/cuda/device_inputs.h"

#include "bench/cuda/cuda_check.h"

namespace flashio {

namespace {

__global__ void generate_kernel(uint16_t* out, size_t count, DType dtype, uint64_t seed, InputTensor tensor) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    out[i] = input_word(dtype, seed, tensor, i);
}

__global__ void generate_paged_kernel(uint16_t* out, const int32_t* __restrict__ table, PagedKvGeometry g, DType dtype,
                                      uint64_t seed, InputTensor tensor) {
  const uint64_t count = uint64_t(g.batch * g.kv_heads * g.seqlen_k * g.head_dim);
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += uint64_t(gridDim.x) * blockDim.x) {
    const int64_t col = int64_t(i % uint64_t(g.head_dim));
    const int64_t row = int64_t(i / uint64_t(g.head_dim));  // (b·Hkv + hk)·Nk + key
    const int64_t key = row % g.seqlen_k, bh = row / g.seqlen_k;
    const int64_t hk = bh % g.kv_heads, b = bh / g.kv_heads;
    if (g.key_lengths && key >= g.key_lengths[b]) continue;  // past a paged varlen sequence: no page
    const int64_t phys = table[b * g.pages_per_seq + key / g.page];
    out[((phys * g.kv_heads + hk) * g.page + key % g.page) * g.head_dim + col] = input_word(dtype, seed, tensor, i);
  }
}

__global__ void generate_varlen_kernel(uint16_t* out, const int32_t* __restrict__ cu, VarlenGeometry g, DType dtype,
                                       uint64_t seed, InputTensor tensor) {
  const uint64_t count = uint64_t(g.heads * g.total * g.head_dim);
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += uint64_t(gridDim.x) * blockDim.x) {
    const int64_t col = int64_t(i % uint64_t(g.head_dim));
    const int64_t row = int64_t(i / uint64_t(g.head_dim));  // h·T + t
    const int64_t t = row % g.total, h = row / g.total;
    int64_t lo = 0, hi = g.batch;  // the last b with cu[b] <= t (lengths of 0 share an offset)
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (cu[mid] <= t) lo = mid; else hi = mid;
    }
    const int64_t b = lo, token = t - cu[b];
    out[i] = input_word(dtype, seed, tensor, uint64_t(((b * g.heads + h) * g.seqlen + token) * g.head_dim + col));
  }
}

}  // namespace

void generate_varlen_inputs_on_device(uint16_t* out, const int32_t* cu, const VarlenGeometry& g, DType dtype,
                                      uint64_t seed, InputTensor tensor, cudaStream_t stream) {
  const size_t count = size_t(g.heads * g.total * g.head_dim);
  if (count == 0) return;
  constexpr int kThreads = 256;
  const size_t blocks = std::min<size_t>((count + kThreads - 1) / kThreads, 65536);
  generate_varlen_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(out, cu, g, dtype, seed, tensor);
  FLASHIO_CHECK_LAUNCH();
}

void generate_paged_inputs_on_device(uint16_t* out, const int32_t* table, const PagedKvGeometry& g, DType dtype,
                                     uint64_t seed, InputTensor tensor, cudaStream_t stream) {
  const size_t count = size_t(g.batch * g.kv_heads * g.seqlen_k * g.head_dim);
  if (count == 0) return;
  constexpr int kThreads = 256;
  const size_t blocks = std::min<size_t>((count + kThreads - 1) / kThreads, 65536);
  generate_paged_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(out, table, g, dtype, seed, tensor);
  FLASHIO_CHECK_LAUNCH();
}

void generate_inputs_on_device(uint16_t* out, size_t count, DType dtype, uint64_t seed, InputTensor tensor,
                               cudaStream_t stream) {
  if (count == 0) return;
  constexpr int kThreads = 256;
  const size_t blocks = std::min<size_t>((count + kThreads - 1) / kThreads, 65536);
  generate_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(out, count, dtype, seed, tensor);
  FLASHIO_CHECK_LAUNCH();
}

}  // namespace flashio
