// The GPU query: fills DeviceInfo (bench/core/device_info.h) from the CUDA runtime.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "bench/cuda/device_query.h"

namespace flashio {
namespace {

// Compiled with the same architectures and flags as every kernel library of this build (one
// CMAKE_CUDA_ARCHITECTURES list; kernels/flash2/hopper/ is the only sm_90a exception): its
// cudaFuncGetAttributes says which code the fused kernels load on this GPU, PTX JIT included.
__global__ void code_arch_probe() {}

}  // namespace

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = fmt::format("no usable CUDA GPU: {} ({})", cudaGetErrorString(err), cudaGetErrorName(err));
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA GPU found";
  return n;
}

std::optional<DeviceInfo> query_device(int index, std::string* why) {
  const int n = device_count(why);
  if (n == 0) return std::nullopt;
  if (index < 0 || index >= n) {
    if (why) *why = fmt::format("GPU {} does not exist (this machine has {})", index, n);
    return std::nullopt;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    if (why) *why = fmt::format("cannot read the properties of GPU {}", index);
    return std::nullopt;
  }
  DeviceInfo d;
  d.index = index;
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.smem_per_sm = int64_t(prop.sharedMemPerMultiprocessor);
  d.smem_per_block_optin = int64_t(prop.sharedMemPerBlockOptin);
  d.l2_bytes = prop.l2CacheSize;
  d.global_memory_bytes = int64_t(prop.totalGlobalMem);
  d.bus_width_bits = prop.memoryBusWidth;
  d.ecc = prop.ECCEnabled != 0;
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, index) == cudaSuccess) d.memory_clock_khz = v;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, index) == cudaSuccess) d.sm_clock_khz = v;
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  int current = 0;
  if (cudaGetDevice(&current) == cudaSuccess && cudaSetDevice(index) == cudaSuccess) {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, code_arch_probe) == cudaSuccess) {
      d.kernel_ptx_arch = attr.ptxVersion;
      d.kernel_binary_arch = attr.binaryVersion;
    } else {
      cudaGetLastError();  // not sticky: clear it
    }
    cudaSetDevice(current);
  }
  return d;
}

std::optional<CopyBandwidth> measure_copy_bandwidth(int index, int64_t bytes, int reps, std::string* why) {
  auto fail = [&](const char* what, cudaError_t err) {
    if (why) *why = fmt::format("copy bandwidth: {}: {}", what, cudaGetErrorString(err));
    return std::nullopt;
  };
  cudaError_t err = cudaSetDevice(index);
  if (err != cudaSuccess) return fail("cudaSetDevice", err);
  void *src = nullptr, *dst = nullptr;
  if ((err = cudaMalloc(&src, size_t(bytes))) != cudaSuccess) return fail("cudaMalloc", err);
  if ((err = cudaMalloc(&dst, size_t(bytes))) != cudaSuccess) {
    cudaFree(src);
    return fail("cudaMalloc", err);
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<double> times;
  cudaMemset(src, 0x3c, size_t(bytes));
  for (int i = 0; i < 2 + reps && err == cudaSuccess; ++i) {
    cudaEventRecord(start);
    err = cudaMemcpy(dst, src, size_t(bytes), cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (i >= 2) times.push_back(double(ms) * 1e-3);  // the first two warm up
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(src);
  cudaFree(dst);
  if (err != cudaSuccess) return fail("cudaMemcpy", err);
  std::sort(times.begin(), times.end());
  CopyBandwidth c;
  c.bytes = bytes;
  c.reps = reps;
  c.median_s =
      times.size() % 2 ? times[times.size() / 2] : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
  c.min_s = times.front();
  c.max_s = times.back();
  return c;
}

}  // namespace flashio
