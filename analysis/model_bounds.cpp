#include "analysis/model_bounds.h"

#include <fmt/format.h>

namespace flashio::analysis {

std::optional<std::string> model_work_reason(const ModelPoint& m) {
  if (auto why = m.problem.invalid_reason()) return "impossible problem: " + *why;
  const Problem& p = m.problem;
  auto tiles = [&](const std::optional<ModelTiles>& t) -> std::optional<int64_t> {
    const int64_t br = t && t->block_r > 0 ? t->block_r : p.seqlen_q, bc = t && t->block_c > 0 ? t->block_c : p.nk();
    return checked_mul((p.seqlen_q + br - 1) / br, (p.nk() + bc - 1) / bc);
  };
  std::optional<int64_t> work = checked_mul(p.batch, p.heads);
  if (!work || *work > kMaxModelHeads)
    return fmt::format("too large to model: b {} · h {} is more than flashio's bound of {} (batch, head) pairs", p.batch,
                       p.heads, kMaxModelHeads);
  for (const auto* t : {&m.fwd_tiles, &m.bwd_tiles}) {
    const auto pairs = tiles(*t);
    const auto w = work && pairs ? checked_mul(*work, *pairs) : std::nullopt;
    if (!w || *w > kMaxModelWork)
      return fmt::format("too large to model: b {} · h {} · Tr·Tc {} is more than flashio's bound of {} (head, tile) pairs",
                         p.batch, p.heads, pairs ? std::to_string(*pairs) : std::string("over 2^63"), kMaxModelWork);
  }
  return std::nullopt;
}

}  // namespace flashio::analysis
