// The cuBLAS handle of a materialized baseline's plan (standard, blocksparse_standard): its
// workspace comes from the suite's allocator, and the device memory cublasCreate takes on
// its own (64 MiB on an H100, measured with cudaMemGetInfo) is accounted as the record's
// memory.library_bytes.
//
// Handles are kept for the process, per device: a plan takes a free one of its device (created,
// and its bytes measured, only when none is free) and gives it back when it ends. A handle per
// plan cost every point of `standard` a device synchronisation, cublasCreate's allocation and
// cublasDestroy's free — slower still with two GPUs' workers, whose driver calls contend (issue
// 22, docs/sweep-time.md). The record's library_bytes is the handle's, measured when it was made.
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

  explicit CublasHandle(DeviceAllocator& alloc);  // a handle of the current device
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  DeviceAllocator& alloc_;
  DeviceBuffer workspace_;
  int device_ = 0;
  cublasHandle_t handle_ = nullptr;
  int64_t handle_bytes_ = 0;  // device memory cublasCreate took
};

}  // namespace flashio
