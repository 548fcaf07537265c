#include "bench/cuda/device_inputs.h"

#include "bench/cuda/cuda_check.h"

namespace flashio {

namespace {

__global__ void generate_kernel(uint16_t* out, size_t count, DType dtype, uint64_t seed, InputTensor tensor) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    out[i] = input_word(dtype, seed, tensor, i);
}

}  // namespace

void generate_inputs_on_device(uint16_t* out, size_t count, DType dtype, uint64_t seed, InputTensor tensor,
                               cudaStream_t stream) {
  if (count == 0) return;
  constexpr int kThreads = 256;
  const size_t blocks = std::min<size_t>((count + kThreads - 1) / kThreads, 65536);
  generate_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(out, count, dtype, seed, tensor);
  FLASHIO_CHECK_LAUNCH();
}

}  // namespace flashio
