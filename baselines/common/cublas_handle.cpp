#include "baselines/common/cublas_handle.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "bench/cuda/cuda_check.h"

namespace flashio {

namespace {

struct PooledHandle {
  cublasHandle_t handle = nullptr;
  int64_t bytes = 0;  // device memory cublasCreate took
};

// The free handles of each device. Never destroyed: the handles live until the process ends
// (destroying them after the CUDA runtime's own teardown is not safe).
struct HandlePool {
  std::mutex mu;
  std::map<int, std::vector<PooledHandle>> free;
};

HandlePool& pool() {
  static HandlePool* p = new HandlePool;
  return *p;
}

PooledHandle create_handle() {
  PooledHandle h;
  size_t free_before = 0, free_after = 0, total = 0;
  FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
  FLASHIO_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  FLASHIO_CUBLAS_CHECK(cublasCreate(&h.handle));
  FLASHIO_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  h.bytes = free_before > free_after ? int64_t(free_before - free_after) : 0;
  return h;
}

}  // namespace

CublasHandle::CublasHandle(DeviceAllocator& alloc) : alloc_(alloc), workspace_(alloc, kWorkspaceBytes) {
  FLASHIO_CUDA_CHECK(cudaGetDevice(&device_));
  PooledHandle h;
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    auto& free = pool().free[device_];
    if (!free.empty()) {
      h = free.back();
      free.pop_back();
    }
  }
  if (!h.handle) h = create_handle();
  if (const cublasStatus_t s = cublasSetWorkspace(h.handle, workspace_.get(), workspace_.bytes());
      s != CUBLAS_STATUS_SUCCESS) {
    {
      std::lock_guard<std::mutex> lock(pool().mu);
      pool().free[device_].push_back(h);
    }
    throw_cublas_error(s, "cublasSetWorkspace", __FILE__, __LINE__);
  }
  handle_ = h.handle;
  handle_bytes_ = h.bytes;
  alloc_.account_external(handle_bytes_);
}

CublasHandle::~CublasHandle() {
  if (!handle_) return;
  alloc_.account_external(-handle_bytes_);
  std::lock_guard<std::mutex> lock(pool().mu);
  pool().free[device_].push_back({handle_, handle_bytes_});
}

}  // namespace flashio
