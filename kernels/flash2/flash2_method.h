// The `flash2` method's tile choice, shared by its description (flash2_method.cpp: supports())
// and its launch side (flash2_plan.cpp). Plain C++.
#pragma once
#include <string>

#include "bench/core/method.h"
#include "kernels/flash2/flash2_params.h"

namespace flashio {

// The forward tile for this problem on this GPU: the forced one (--block-r/--block-c, --mma),
// else the first (fastest) that fits its shared memory; no, with the reason, if none does.
Support flash2_choose_tile(const Problem& p, const DeviceInfo& dev, kernels::KernelTile* out);
// The backward's tile: wgmma where it can run (and --mma allows), else mma.sync; false with
// `why` when neither can.
bool flash2_choose_bwd_tile(const Problem& p, const DeviceInfo& dev, kernels::KernelTile* out, std::string* why);

}  // namespace flashio
