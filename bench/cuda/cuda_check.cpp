#include "bench/cuda/cuda_check.h"

#include <fmt/format.h>

namespace flashio {

bool is_sticky(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(fmt::format("{} failed: {} ({}) at {}:{}", call, cudaGetErrorString(err), cudaGetErrorName(err), file, line),
                  err == cudaErrorMemoryAllocation, is_sticky(err));
}

void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line) {
  throw CudaError(fmt::format("{} failed: {} at {}:{}", call, cublasGetStatusString(st), file, line),
                  st == CUBLAS_STATUS_ALLOC_FAILED, false);
}

}  // namespace flashio
