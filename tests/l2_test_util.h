// The H100 SXM as the L2 simulation sees it (analysis/l2_sim.h), for the CPU tests of DRAM traces:
// 132 SMs, 228 KiB of shared memory per SM, 50 MiB of L2 in two partitions, GH100's dirty share.
#pragma once
#include "analysis/dram_model.h"
#include "analysis/l2_sim.h"

namespace flashio::testing_util {

inline analysis::GpuLimits test_h100_limits() {
  analysis::GpuLimits g;
  g.sm_count = 132, g.smem_per_sm_bytes = 233472, g.l2_bytes = 52428800, g.l2_partitions = 2;
  g.l2_dirty = analysis::kGh100L2Dirty;
  return g;
}

}  // namespace flashio::testing_util
