#include "bench/measure/check.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "bench/core/parallel.h"
#include "bench/core/rng.h"
#include "bench/core/varlen.h"

namespace flashio {

Tolerance tolerance_for(DType t) {
  // fp16 keeps 11 significant bits, bf16 8: the bf16 tolerance is 8x looser. Both leave
  // room for the baseline, which rounds S and P to the input type, as PyTorch does.
  return t == DType::F16 ? Tolerance{1e-2, 1e-2} : Tolerance{8e-2, 8e-2};
}

Tolerance gradient_tolerance_for(DType t) {
  // dS = P∘(dP − D) cancels (Σ_j dS_ij = 0), but dS is rounded to the element type before
  // dQ = dS·K and dK = dSᵀ·Q, and those rounding errors do not cancel: gradients carry about
  // twice the output's relative error in fp16, more in bf16 at long sequences. Measured (H200):
  // bf16, causal, dropout 0.1, N = 4097, dQ reached 1.45x a 0.16 tolerance (flash1, d = 64
  // and 96; every other case below 1), hence 0.25.
  return t == DType::F16 ? Tolerance{2e-2, 2e-2} : Tolerance{2.5e-1, 2.5e-1};
}

std::vector<RowId> rows_to_check(const Problem& p, double budget_macs) {
  const int64_t total = p.heads * p.query_tokens();
  if (reference_cost(p, total) <= budget_macs) return all_rows(p);

  std::set<std::tuple<int64_t, int64_t, int64_t>> picked;
  SplitMix64 rng(p.seed ^ 0xc0ffee);
  std::vector<std::pair<int64_t, int64_t>> heads = {{0, 0}, {p.batch - 1, p.heads - 1}};
  for (int i = 0; i < 2; ++i) heads.push_back({int64_t(rng.next() % uint64_t(p.batch)), int64_t(rng.next() % uint64_t(p.heads))});
  if (p.varlen()) {  // and the longest sequence and the shortest non-empty one: both ends of the lengths
    int64_t longest = 0, shortest = -1;  // (a varlen decode's shortest may be empty: its rows see no key)
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t n = p.seq_lengths[size_t(b)];
      if (n > p.seq_lengths[size_t(longest)]) longest = b;
      if ((n > 0 || p.key_varlen()) && (shortest < 0 || n < p.seq_lengths[size_t(shortest)])) shortest = b;
    }
    heads.push_back({longest, int64_t(rng.next() % uint64_t(p.heads))});
    if (shortest >= 0) heads.push_back({shortest, int64_t(rng.next() % uint64_t(p.heads))});
  }
  const int64_t per_head = std::max<int64_t>(8, int64_t(budget_macs / reference_cost(p, 1)) / int64_t(heads.size()));
  for (auto [b, h] : heads) {
    const int64_t n = query_length(p, b);  // a varlen sequence's own length (0: no rows)
    if (n == 0) continue;
    std::vector<int64_t> rows = {0, 1, n - 1, n - 2};
    for (int64_t edge = 64; edge < n && rows.size() < 16; edge *= 2) {  // tile boundaries
      rows.push_back(edge - 1);
      rows.push_back(edge);
    }
    while (int64_t(rows.size()) < std::min(per_head, n)) rows.push_back(int64_t(rng.next() % uint64_t(n)));
    for (int64_t i : rows)
      if (i >= 0 && i < n) picked.insert({b, h, i});
  }
  std::vector<RowId> out;
  for (auto [b, h, i] : picked) out.push_back({b, h, i});
  return out;
}

double rms(const std::vector<double>& v, bool nonzero_only) {
  double sum_sq = 0.0;
  size_t counted = 0;
  for (double x : v)
    if (std::isfinite(x) && (!nonzero_only || x != 0.0)) {
      sum_sq += x * x;
      ++counted;
    }
  return counted ? std::sqrt(sum_sq / double(counted)) : 0.0;
}

namespace {

// atol as a fraction of the reference's RMS (check.h), floored for an all-zero reference.
double rms_atol(double atol_rms, const std::vector<double>& ref) { return atol_rms * std::max(rms(ref), 1e-6); }

// compare_tensor's comparison, element e of the method's tensor read as value(e).
template <class Value>
TensorCheck compare_values(const std::string& name, const Value& value, const std::vector<double>& ref, double atol,
                           double rtol, bool atol_is_absolute) {
  TensorCheck t;
  t.name = name;
  t.elements = int64_t(ref.size());
  t.rtol = rtol;
  t.atol = atol_is_absolute ? atol : rms_atol(atol, ref);
  // Pieces of the elements on a few of the host's threads (a point waits for its checks): each
  // piece's maxima and NaN flag, then the maxima of those, the same figures in any order.
  struct Piece {
    double abs = 0, rel = 0, ratio = 0;
    bool nan = false;
  };
  std::vector<Piece> part((ref.size() + kComparePiece - 1) / kComparePiece);
  for_each_piece(ref.size(), kComparePiece, kCompareThreads, [&](size_t i, size_t begin, size_t end) {
    Piece& q = part[i];
    for (size_t e = begin; e < end; ++e) {
      const double g = value(e), r = ref[e];
      if (std::isnan(g) || std::isnan(r)) {
        q.nan = true;
        continue;
      }
      if (std::isinf(r) || std::isinf(g)) {  // only an exact match of infinities passes
        if (g != r) q.nan = true;
        continue;
      }
      const double err = std::abs(g - r);
      q.abs = std::max(q.abs, err);
      q.rel = std::max(q.rel, err / std::max(std::abs(r), 1e-6));
      q.ratio = std::max(q.ratio, err / (t.atol + rtol * std::abs(r)));
    }
  });
  for (const Piece& q : part) {
    t.nan = t.nan || q.nan;
    t.max_abs_err = std::max(t.max_abs_err, q.abs);
    t.max_rel_err = std::max(t.max_rel_err, q.rel);
    t.worst_ratio = std::max(t.worst_ratio, q.ratio);
  }
  if (t.nan) t.max_abs_err = t.max_rel_err = t.worst_ratio = std::nan("");
  return t;
}

}  // namespace

TensorCheck compare_tensor(const std::string& name, const std::vector<double>& got, const std::vector<double>& ref,
                           double atol, double rtol, bool atol_is_absolute) {
  return compare_values(name, [&](size_t e) { return got[e]; }, ref, atol, rtol, atol_is_absolute);
}

TensorCheck compare_words(const std::string& name, const uint16_t* got, DType dtype, const std::vector<double>& ref,
                          double atol, double rtol, bool atol_is_absolute) {
  return compare_values(name, [&](size_t e) { return double(to_float(dtype, got[e])); }, ref, atol, rtol,
                        atol_is_absolute);
}

GradientAtols gradient_atols(DType dtype, const std::vector<double>& ref_dq, const std::vector<double>& ref_dk,
                             const std::vector<double>& ref_dv) {
  const Tolerance tol = gradient_tolerance_for(dtype);
  const double floor = 0.1 * std::max({rms(ref_dq, true), rms(ref_dk, true), rms(ref_dv, true)});
  auto atol = [&](const std::vector<double>& ref) { return tol.atol_rms * std::max({rms(ref), floor, 1e-6}); };
  return {atol(ref_dq), atol(ref_dk), atol(ref_dv)};
}

void add_tensor(CheckResult& c, const TensorCheck& t) {
  const bool first = c.tensors.empty();
  c.tensors.push_back(t);
  auto worst = [&](double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); };
  c.max_abs_err = first ? t.max_abs_err : worst(c.max_abs_err, t.max_abs_err);
  c.max_rel_err = first ? t.max_rel_err : worst(c.max_rel_err, t.max_rel_err);
  c.worst_ratio = first ? t.worst_ratio : worst(c.worst_ratio, t.worst_ratio);
  c.passed = (first || c.passed) && !t.nan && t.worst_ratio <= 1.0;
}

double output_atol(DType dtype, const std::vector<double>& ref_out) {
  return rms_atol(tolerance_for(dtype).atol_rms, ref_out);
}

CheckResult compare_row_words_with_reference(const Problem& p, size_t rows, const std::vector<double>& ref_out,
                                             double out_atol, const std::vector<double>& ref_lse,
                                             const uint16_t* out_words, const std::vector<double>* lse_rows) {
  const TensorCheck o = compare_words("o", out_words, p.dtype, ref_out, out_atol, tolerance_for(p.dtype).rtol, true);
  CheckResult c;
  c.rows_checked = int64_t(rows);
  c.rows_total = p.heads * p.query_tokens();  // real tokens' rows
  c.scope = c.rows_checked == c.rows_total ? "all rows" : "sampled rows";
  c.lse_checked = lse_rows != nullptr;
  c.atol = o.atol;
  c.rtol = o.rtol;
  add_tensor(c, o);
  if (lse_rows) {
    constexpr double kLseAtol = 1e-3, kLseRtol = 1e-4;  // LSE is fp32 from exact fp16/bf16 products
    add_tensor(c, compare_tensor("lse", *lse_rows, ref_lse, kLseAtol, kLseRtol, true));
  }
  return c;
}

CheckResult compare_with_reference(const Problem& p, const std::vector<RowId>& rows,
                                   const std::vector<double>& ref_out, const std::vector<double>& ref_lse,
                                   const uint16_t* out, const std::vector<float>* lse) {
  const size_t d = size_t(p.head_dim);
  std::vector<uint16_t> words(rows.size() * d);  // the rows of O, as the runner copies them back
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t base = ((rows[r].b * p.heads + rows[r].h) * p.seqlen_q + rows[r].i) * p.head_dim;
    std::copy(out + base, out + base + p.head_dim, words.begin() + long(r * d));
  }
  std::vector<double> lse_rows;
  if (lse) {
    const std::vector<int64_t> cu = cu_seqlens(p);
    for (const RowId& r : rows) lse_rows.push_back((*lse)[size_t(stored_row(p, cu, r))]);
  }
  return compare_row_words_with_reference(p, rows.size(), ref_out, output_atol(p.dtype, ref_out), ref_lse,
                                          words.data(), lse ? &lse_rows : nullptr);
}

int64_t stored_row(const Problem& p, const std::vector<int64_t>& cu, const RowId& r) {
  if (p.packed_q()) return r.h * cu.back() + cu[size_t(r.b)] + r.i;
  return (r.b * p.heads + r.h) * p.seqlen_q + r.i;
}

}  // namespace flashio
