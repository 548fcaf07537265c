// Bounded work for the IO models: the exact models, the schedule walk and the DRAM walk visit
// every (batch, head) and, per head, up to every (Q tile, K/V tile) pair, so a record or a
// `flashio predict` point is modelled only when B·H·Tr·Tc (each kernel's tiles; 1 × 1 for the
// models without tiles) is at most kMaxModelWork: under a second here. A larger point is not
// modelled, with the reason, instead of running for hours (batch 10⁹ × heads 10⁶, N = 2⁴⁰).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "analysis/io_model.h"

namespace flashio::analysis {

inline constexpr int64_t kMaxModelWork = int64_t(1) << 26;

// Why the point is too large to model (or impossible: Problem::invalid_reason), or nullopt.
std::optional<std::string> model_work_reason(const ModelPoint& m);

}  // namespace flashio::analysis
