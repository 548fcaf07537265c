// The second level of the IO model: L2 as the fast memory, a wave of resident thread blocks as
// the tile (DESIGN.md "Where DRAM traffic does grow"). The thread blocks resident together
// stream the same K/V (forward) or Q/dO (backward) in near lock-step, so L2 serves every
// re-read inside a wave. While the operand set a wave streams fits in the L2 share one stream
// can use, every byte comes from DRAM once (compulsory); once it does not, each wave that
// touches a head fetches that head's streamed operand again:
//   forward  DRAM ≈ Q + O + L + Σ_heads (K+V of the head) × (waves touching the head)
//   backward DRAM ≈ compulsory + Σ_heads (Q, dO, L, D and the dQ accumulator) × (waves − 1)
// The wave size is blocks per SM (from the recorded shared memory, the thread count and the
// SM's limits; registers are not recorded, so a register-bound kernel is over-estimated)
// × the GPU's SM count. The usable share of L2 is a parameter (default one half: the L2 is
// two partitions, and data homed in the far one is cached again in the near one).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/io_model.h"

namespace flashio::analysis {

struct GpuLimits {
  int sm_count = 0;
  int64_t smem_per_sm_bytes = 0;
  int64_t l2_bytes = 0;
  int max_threads_per_sm = 2048;
  int blocks_per_sm_override = 0;  // > 0: the resident blocks per SM a wave assumes (a hypothesis to test)
};

struct DramPrediction {
  int64_t compulsory = 0;
  int64_t predicted = 0;
  int blocks_per_sm = 0;
  int64_t wave_blocks = 0;    // resident thread blocks of the streaming kernel
  double waves_per_head = 0;  // mean over heads of the waves that touch a head
  bool spills = false;        // the streamed working set exceeds the usable L2
  std::string note;
  nlohmann::json to_json() const;
};

inline constexpr double kDefaultL2UsableFraction = 0.5;

// Resident thread blocks per SM for a kernel of `threads` threads and `smem_bytes` of dynamic
// shared memory (1 KiB reserved per block, as on sm_80 and later).
int blocks_per_sm(int threads, int64_t smem_bytes, const GpuLimits& gpu);

DramPrediction predict_dram(const ModelPoint& m, int64_t fwd_smem_bytes, int64_t bwd_smem_bytes, const GpuLimits& gpu,
                            double l2_usable_fraction = kDefaultL2UsableFraction);

}  // namespace flashio::analysis
