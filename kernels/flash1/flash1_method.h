// The `flash1` method's tile choice, shared by its description (flash1_method.cpp) and its
// launch side (flash1_plan.cpp). Plain C++.
#pragma once
#include "bench/core/method.h"
#include "kernels/flash1/flash1_params.h"

namespace flashio {

// Algorithm 1's rule Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), rounded down to a compiled tile that
// fits, or the tile forced with --block-r/--block-c; no, with the reason, if none does.
Support flash1_choose_tile(const Problem& p, const DeviceInfo& dev, kernels::KernelTile* out);

}  // namespace flashio
