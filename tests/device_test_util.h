// A Hopper DeviceInfo for CPU tests of what a method plans and supports on an H100 SXM, without a
// GPU: bench/core's h100_sxm, the figures the CLI also assumes where no GPU is at hand.
#pragma once
#include "bench/core/device_info.h"

namespace flashio::testing_util {

inline DeviceInfo test_h100() { return h100_sxm("test H100"); }

}  // namespace flashio::testing_util
