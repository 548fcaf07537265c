// A Hopper DeviceInfo for CPU tests of what a method plans and supports on an H100 SXM
// (132 SMs, 227 KiB of shared memory a block may opt into, 80 GiB), without a GPU.
#pragma once
#include <cstdint>

#include "bench/core/device_info.h"

namespace flashio::testing_util {

inline DeviceInfo test_h100() {
  DeviceInfo d;
  d.name = "test H100";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.smem_per_sm = 233472;
  d.smem_per_block_optin = 232448;
  d.global_memory_bytes = int64_t(80) << 30;
  return d;
}

}  // namespace flashio::testing_util
