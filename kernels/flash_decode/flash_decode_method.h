// The `flash_decode` method's split choice, shared by its description (flash_decode_method.cpp)
// and its launch side (flash_decode_plan.cpp). Plain C++.
#pragma once
#include "bench/core/method.h"
#include "kernels/flash_decode/flash_decode_configs.h"

namespace flashio {

// The split of this problem on this GPU (flash_decode_split with the GPU's SMs and shared memory).
kernels::DecodeSplit flash_decode_choose_split(const Problem& p, const DeviceInfo& dev);

}  // namespace flashio
