#include "baselines/common/cublas_handle.h"

#include <cuda_runtime_api.h>

#include "bench/cuda/cuda_check.h"

namespace flashio {

CublasHandle::CublasHandle(DeviceAllocator& alloc) : alloc_(alloc), workspace_(alloc, kWorkspaceBytes) {
  size_t free_before = 0, free_after = 0, total = 0;
  FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
  FLASHIO_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  FLASHIO_CUBLAS_CHECK(cublasCreate(&handle_));
  FLASHIO_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  handle_bytes_ = free_before > free_after ? int64_t(free_before - free_after) : 0;
  alloc_.account_external(handle_bytes_);
  FLASHIO_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.get(), workspace_.bytes()));
}

CublasHandle::~CublasHandle() {
  if (handle_) cublasDestroy(handle_);
  alloc_.account_external(-handle_bytes_);
}

}  // namespace flashio
