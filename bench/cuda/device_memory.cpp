#include "bench/cuda/device_memory.h"

#include <fmt/format.h>

#include <iterator>

#include "bench/cuda/cuda_check.h"

namespace flashio {

void* DeviceAllocator::allocate(size_t bytes) {
  void* p = nullptr;
  if (auto it = kept_.find(bytes); it != kept_.end()) {
    p = it->second;
    kept_.erase(it);
    kept_bytes_ -= bytes;
    current_ += int64_t(bytes);
    peak_ = std::max(peak_, current_);
    return p;
  }
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation && !kept_.empty()) {  // the kept blocks may be what is missing
    cudaGetLastError();
    trim();
    err = cudaMalloc(&p, bytes);
  }
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
  kept_.emplace(bytes, p);
  kept_bytes_ += bytes;
  current_ -= int64_t(bytes);
}

void DeviceAllocator::trim_to(size_t bytes) {
  while (kept_bytes_ > bytes) {
    const auto largest = std::prev(kept_.end());
    cudaFree(largest->second);
    kept_bytes_ -= largest->first;
    kept_.erase(largest);
  }
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) cudaFreeHost(ptr_);
}

void* PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return ptr_;
  if (ptr_) cudaFreeHost(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
  FLASHIO_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
  bytes_ = bytes;
  return ptr_;
}

void DeviceAllocator::trim() {
  for (const auto& [bytes, p] : kept_) cudaFree(p);
  kept_.clear();
  kept_bytes_ = 0;
}

}  // namespace flashio
