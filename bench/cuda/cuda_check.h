// The one error macro: every CUDA runtime and cuBLAS call goes through it. A failure
// throws CudaError carrying file, line, the call and the runtime's message; the runner
// turns it into an `error` (or `oom`) record.
#pragma once
#include <stdexcept>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace flashio {

class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, bool out_of_memory, bool sticky)
      : std::runtime_error(what), out_of_memory_(out_of_memory), sticky_(sticky) {}
  bool out_of_memory() const { return out_of_memory_; }
  bool sticky() const { return sticky_; }  // the context is poisoned; later calls fail too

 private:
  bool out_of_memory_;
  bool sticky_;
};

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line);
bool is_sticky(cudaError_t err);

}  // namespace flashio

#define FLASHIO_CUDA_CHECK(call)                                                    \
  do {                                                                              \
    const cudaError_t flashio_err_ = (call);                                        \
    if (flashio_err_ != cudaSuccess)                                                \
      ::flashio::throw_cuda_error(flashio_err_, #call, __FILE__, __LINE__);         \
  } while (0)

#define FLASHIO_CUBLAS_CHECK(call)                                                  \
  do {                                                                              \
    const cublasStatus_t flashio_st_ = (call);                                      \
    if (flashio_st_ != CUBLAS_STATUS_SUCCESS)                                       \
      ::flashio::throw_cublas_error(flashio_st_, #call, __FILE__, __LINE__);        \
  } while (0)

// After a kernel launch: catches launch-configuration errors at once.
#define FLASHIO_CHECK_LAUNCH() FLASHIO_CUDA_CHECK(cudaGetLastError())
