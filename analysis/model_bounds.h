// Bounded work for the IO models: the exact models, the schedule walk and the DRAM walk visit
// every (batch, head) and, per head, up to every (Q tile, K/V tile) pair, so a record or a
// `flashio predict` point is modelled only when B·H is at most kMaxModelHeads and B·H·Tr·Tc (each
// kernel's tiles; 1 × 1 for the models without tiles) at most kMaxModelWork. Measured here (CUDA-
// free Release build, flash2 fwdbwd): about 15 µs per (batch, head), so 2^15 of them at N = 256
// in 0.3 s, 4096 × 8 at N = 2048 in 0.5 s; B·H·Tr·Tc = 2^26 at 64 heads in 0.1 s; flash1's fwd+bwd
// at N 65536 with 128 heads (2^27: the memory files' largest point) about 14 s of one core, most of it
// its DRAM simulation, so 2^28 keeps a point within about half a minute. A larger point is not
// modelled, with the reason, instead of running for hours (batch 10⁹ × heads 10⁶, N = 2⁴⁰).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "analysis/io_model.h"

namespace flashio::analysis {

inline constexpr int64_t kMaxModelHeads = int64_t(1) << 15;
inline constexpr int64_t kMaxModelWork = int64_t(1) << 28;

// Why the point is too large to model (or impossible: Problem::invalid_reason), or nullopt.
std::optional<std::string> model_work_reason(const ModelPoint& m);

}  // namespace flashio::analysis
