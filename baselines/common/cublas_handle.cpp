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

void start_cublas(int device) {
  int previous = 0;
  FLASHIO_CUDA_CHECK(cudaGetDevice(&previous));
  FLASHIO_CUDA_CHECK(cudaSetDevice(device));
  struct Own {  // released whatever failed
    int previous;
    cublasHandle_t handle = nullptr;
    cudaStream_t stream = nullptr;
    ~Own() {
      if (stream) cudaStreamSynchronize(stream);
      if (handle) cublasDestroy(handle);
      if (stream) cudaStreamDestroy(stream);
      cudaSetDevice(previous);
    }
  } own{previous};
  // 16 × 16 fp16 operands, as the baselines' GEMMs (S = Q·Kᵀ: fp16 in and out, fp32 accumulation).
  DeviceAllocator alloc;
  constexpr int n = 16;
  DeviceBuffer a(alloc, n * n * 2), b(alloc, n * n * 2), c(alloc, n * n * 2);
  FLASHIO_CUDA_CHECK(cudaStreamCreateWithFlags(&own.stream, cudaStreamNonBlocking));
  FLASHIO_CUDA_CHECK(cudaMemsetAsync(a.get(), 0, a.bytes(), own.stream));
  FLASHIO_CUDA_CHECK(cudaMemsetAsync(b.get(), 0, b.bytes(), own.stream));
  FLASHIO_CUBLAS_CHECK(cublasCreate(&own.handle));
  FLASHIO_CUBLAS_CHECK(cublasSetStream(own.handle, own.stream));
  const float one = 1.0f, zero = 0.0f;
  FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(own.handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, a.get(),
                                                  CUDA_R_16F, n, n * n, b.get(), CUDA_R_16F, n, n * n, &zero, c.get(),
                                                  CUDA_R_16F, n, n * n, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(own.stream));
}

}  // namespace flashio
