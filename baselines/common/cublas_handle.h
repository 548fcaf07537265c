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

// cuBLAS's one-time start in this process, made on `device` (the thread's current device is
// restored): the first GEMM call loads the library's heuristics and kernels — 0.09-0.15 s of host
// work on an H100 or H200 host, after which a GEMM's first call on any device takes 0.1-3 ms
// (issue 22, docs/sweep-time.md step 16). One 16 × 16 × 16 GEMM, on a stream and a handle of its
// own that is destroyed after (not pooled: its memory would be measured while other threads
// allocate on the device). A sweep makes it on a thread of its own while the GPUs' workers run
// their first points, and times or counts nothing on `device` until it is made (first_starts.h).
// (Capturing the call into a graph instead, which runs nothing, made another thread's
// cudaDeviceSynchronize on the device fail while the capture lasted.) Throws on a CUDA or cuBLAS
// error.
void start_cublas(int device);

}  // namespace flashio
