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

}  // namespace flashio
