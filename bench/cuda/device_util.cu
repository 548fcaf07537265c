#include "bench/cuda/device_util.h"

#include "bench/cuda/cuda_check.h"

namespace flashio {

__global__ void l2_flush_kernel(const uint4* __restrict__ buf, size_t n, unsigned* sink, unsigned magic) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(buf + i);  // cache in L2 only: this is what we want to replace
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == magic) *sink = acc;  // a run-time comparison keeps the loads alive; a match is harmless
}

void launch_l2_flush(const void* buf, size_t bytes, unsigned* sink, cudaStream_t stream) {
  const size_t n = bytes / sizeof(uint4);
  l2_flush_kernel<<<1024, 256, 0, stream>>>(static_cast<const uint4*>(buf), n, sink, 0x9e3779b9u);
  FLASHIO_CHECK_LAUNCH();
}

}  // namespace flashio
