#include "bench/check.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "bench/rng.h"

namespace flashio {

Tolerance tolerance_for(DType t) {
  // fp16 keeps 11 significant bits, bf16 8: the bf16 tolerance is 8x looser. Both leave
  // room for the baseline, which rounds S and P to the input type, as PyTorch does.
  return t == DType::F16 ? Tolerance{1e-2, 1e-2} : Tolerance{8e-2, 8e-2};
}

std::vector<RowId> rows_to_check(const Problem& p, double budget_macs) {
  const int64_t total = p.batch * p.heads * p.seqlen_q;
  if (reference_cost(p, total) <= budget_macs) return all_rows(p);

  std::set<std::tuple<int64_t, int64_t, int64_t>> picked;
  SplitMix64 rng(p.seed ^ 0xc0ffee);
  std::vector<std::pair<int64_t, int64_t>> heads = {{0, 0}, {p.batch - 1, p.heads - 1}};
  for (int i = 0; i < 2; ++i) heads.push_back({int64_t(rng.next() % uint64_t(p.batch)), int64_t(rng.next() % uint64_t(p.heads))});
  const int64_t per_head = std::max<int64_t>(8, int64_t(budget_macs / reference_cost(p, 1)) / int64_t(heads.size()));
  for (auto [b, h] : heads) {
    std::vector<int64_t> rows = {0, 1, p.seqlen_q - 1, p.seqlen_q - 2};
    for (int64_t edge = 64; edge < p.seqlen_q && rows.size() < 16; edge *= 2) {  // tile boundaries
      rows.push_back(edge - 1);
      rows.push_back(edge);
    }
    while (int64_t(rows.size()) < std::min(per_head, p.seqlen_q)) rows.push_back(int64_t(rng.next() % uint64_t(p.seqlen_q)));
    for (int64_t i : rows)
      if (i >= 0 && i < p.seqlen_q) picked.insert({b, h, i});
  }
  std::vector<RowId> out;
  for (auto [b, h, i] : picked) out.push_back({b, h, i});
  return out;
}

CheckResult compare_with_reference(const Problem& p, const std::vector<RowId>& rows,
                                   const std::vector<double>& ref_out, const std::vector<double>& ref_lse,
                                   const std::vector<uint16_t>& out, const std::vector<float>* lse) {
  const int64_t d = p.head_dim;
  const Tolerance tol = tolerance_for(p.dtype);
  double sum_sq = 0.0;
  for (double x : ref_out) sum_sq += x * x;
  const double rms = ref_out.empty() ? 0.0 : std::sqrt(sum_sq / double(ref_out.size()));

  CheckResult c;
  c.atol = tol.atol_rms * std::max(rms, 1e-6);
  c.rtol = tol.rtol;
  c.rows_checked = int64_t(rows.size());
  c.rows_total = p.batch * p.heads * p.seqlen_q;
  c.scope = c.rows_checked == c.rows_total ? "all rows" : "sampled rows";
  c.lse_checked = lse != nullptr;
  bool nan_seen = false;

  auto account = [&](double got, double ref, double atol, double rtol) {
    if (std::isnan(got) || std::isnan(ref) != std::isnan(got)) {
      nan_seen = true;
      return;
    }
    if (std::isinf(ref) || std::isinf(got)) {  // only an exact match of infinities passes
      if (got != ref) nan_seen = true;
      return;
    }
    const double err = std::abs(got - ref);
    c.max_abs_err = std::max(c.max_abs_err, err);
    c.max_rel_err = std::max(c.max_rel_err, err / std::max(std::abs(ref), 1e-6));
    c.worst_ratio = std::max(c.worst_ratio, err / (atol + rtol * std::abs(ref)));
  };
  constexpr double kLseAtol = 1e-3, kLseRtol = 1e-4;  // LSE is fp32 from exact fp16/bf16 products
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& row = rows[r];
    const int64_t base = ((row.b * p.heads + row.h) * p.seqlen_q + row.i) * d;
    for (int64_t c2 = 0; c2 < d; ++c2)
      account(to_float(p.dtype, out[size_t(base + c2)]), ref_out[r * size_t(d) + size_t(c2)], c.atol, c.rtol);
    if (lse) account((*lse)[size_t(base / d)], ref_lse[r], kLseAtol, kLseRtol);
  }
  if (nan_seen) {
    c.max_abs_err = c.max_rel_err = c.worst_ratio = std::nan("");
  }
  c.passed = !nan_seen && c.worst_ratio <= 1.0;
  return c;
}

}  // namespace flashio
