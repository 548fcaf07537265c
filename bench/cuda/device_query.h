// Queries the GPUs of this machine through the CUDA runtime (the plain DeviceInfo it fills lives
// in bench/core/device_info.h, so that result files are read without CUDA).
#pragma once
#include <optional>
#include <string>

#include "bench/core/device_info.h"

namespace flashio {

// Queries GPU `index`; returns nullopt and sets *why when there is no usable GPU. Also reads
// which code the fused kernels load here (DeviceInfo::kernel_ptx_arch, kernel_binary_arch).
std::optional<DeviceInfo> query_device(int index, std::string* why);
int device_count(std::string* why);

// The device-to-device copy bandwidth of GPU `index`, measured: cudaMemcpy of `bytes` between
// two buffers, timed with CUDA events after two untimed copies, `reps` times; each copy reads
// and writes `bytes`, so the bandwidth is 2·bytes / the median time (the DRAM bytes per second
// a streaming kernel can hope for, against which the decode target is judged).
struct CopyBandwidth {
  int64_t bytes = 0;
  int reps = 0;
  double median_s = 0, min_s = 0, max_s = 0;
  double bytes_per_s() const { return median_s > 0 ? 2.0 * double(bytes) / median_s : 0.0; }
};
std::optional<CopyBandwidth> measure_copy_bandwidth(int index, int64_t bytes, int reps, std::string* why);

}  // namespace flashio
