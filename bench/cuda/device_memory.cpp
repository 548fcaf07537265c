#include "bench/cuda/device_memory.h"

#include <fmt/format.h>

#include "bench/cuda/cuda_check.h"

namespace flashio {

void* DeviceAllocator::allocate(size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();  // an allocation failure is not sticky: clear it
    throw CudaError(fmt::format("out of memory allocating {} bytes ({})", bytes, cudaGetErrorString(err)),
                    err == cudaErrorMemoryAllocation, is_sticky(err));
  }
  current_ += int64_t(bytes);
  peak_ = std::max(peak_, current_);
  return p;
}

void DeviceAllocator::release(void* p, size_t bytes) {
  cudaFree(p);
  current_ -= int64_t(bytes);
}

}  // namespace flashio
