// The `flash3` method's tile choice, shared by its description (flash3_method.cpp: supports())
// and its launch side (flash3_plan.cpp). Plain C++.
#pragma once
#include "bench/core/method.h"
#include "kernels/flash3/flash3_params.h"

namespace flashio {

// The forward tile for this problem on this GPU: the forced one (--block-r/--block-c), else the
// first (fastest) of flash3_configs.h's list that fits; no, with the reason, if none does or the
// build or GPU has no flash3 kernels.
Support flash3_choose_tile(const Problem& p, const DeviceInfo& dev, kernels::KernelTile* out);

// The backward's tile (kFlash3BwdTile) for this problem's head dim; no, with the reason, where
// flash3 has no backward (d 256) or the GPU's shared memory is too small.
Support flash3_choose_bwd_tile(const Problem& p, const DeviceInfo& dev, kernels::KernelTile* out);

}  // namespace flashio
