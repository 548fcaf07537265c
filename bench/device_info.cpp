#include "bench/device_info.h"

#include <cctype>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "kernels/flash2/flash2_params.h"

namespace flashio {

std::string DeviceInfo::slug() const {
  std::string s;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      s += char(std::tolower(static_cast<unsigned char>(c)));
    } else if (!s.empty() && s.back() != '-') {
      s += '-';
    }
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "gpu" : s;
}

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
    const kernels::FusedKernelArch arch = kernels::fused_kernel_arch();
    d.kernel_ptx_arch = arch.ptx;
    d.kernel_binary_arch = arch.binary;
    cudaSetDevice(current);
  }
  return d;
}

nlohmann::json to_json(const DeviceInfo& d) {
  return {{"index", d.index},
          {"name", d.name},
          {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
          {"sm_count", d.sm_count},
          {"smem_per_sm_bytes", d.smem_per_sm},
          {"smem_per_block_optin_bytes", d.smem_per_block_optin},
          {"l2_bytes", d.l2_bytes},
          {"global_memory_bytes", d.global_memory_bytes},
          {"memory_clock_khz", d.memory_clock_khz},
          {"bus_width_bits", d.bus_width_bits},
          {"peak_bandwidth_bytes_per_s", d.peak_bandwidth_bytes_per_s()},
          {"sm_clock_khz", d.sm_clock_khz},
          {"driver_version", d.driver_version},
          {"runtime_version", d.runtime_version},
          {"ecc", d.ecc}};
}

DeviceInfo device_from_json(const nlohmann::json& j) {
  DeviceInfo d;
  d.index = j.value("index", 0);
  d.name = j.value("name", std::string());
  const std::string cc = j.value("compute_capability", std::string("0.0"));
  if (std::sscanf(cc.c_str(), "%d.%d", &d.cc_major, &d.cc_minor) != 2) d.cc_major = d.cc_minor = 0;
  d.sm_count = j.value("sm_count", 0);
  d.smem_per_sm = j.value("smem_per_sm_bytes", int64_t(0));
  d.smem_per_block_optin = j.value("smem_per_block_optin_bytes", int64_t(0));
  d.l2_bytes = j.value("l2_bytes", int64_t(0));
  d.global_memory_bytes = j.value("global_memory_bytes", int64_t(0));
  d.memory_clock_khz = j.value("memory_clock_khz", int64_t(0));
  d.bus_width_bits = j.value("bus_width_bits", 0);
  d.sm_clock_khz = j.value("sm_clock_khz", int64_t(0));
  d.driver_version = j.value("driver_version", 0);
  d.runtime_version = j.value("runtime_version", 0);
  d.ecc = j.value("ecc", false);
  return d;
}

}  // namespace flashio
