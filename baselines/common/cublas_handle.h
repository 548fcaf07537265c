// The cuBLAS handle of a materialized baseline's plan (standard, blocksparse_standard): its
// workspace comes from the suite's allocator, and the device memory cublasCreate takes on
// its own (64 MiB on an H100, measured with cudaMemGetInfo) is accounted as the record's
// memory.library_bytes.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cublas_v2.h>

#include "baselines/common/cublas_workspace.h"
#include "bench/cuda/device_memory.h"

namespace flashio {

class CublasHandle {
 public:
  static constexpr size_t kWorkspaceBytes = kCublasWorkspaceBytes;

  explicit CublasHandle(DeviceAllocator& alloc);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  DeviceAllocator& alloc_;
  DeviceBuffer workspace_;
  cublasHandle_t handle_ = nullptr;
  int64_t handle_bytes_ = 0;  // device memory cublasCreate took
};

}  // namespace flashio
