#include "bench/sweep/sweep.h"

#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "bench/core/varlen.h"

namespace flashio {

SweepSpec default_sweep() {
  SweepSpec s;
  s.seqlen = {512, 1024, 2048, 4096};
  s.head_dim = {64, 128};
  s.tokens = 16384;
  s.model_dim = 2048;
  return s;
}

template <typename T>
static void require_nonempty(const std::vector<T>& v, const char* axis) {
  if (v.empty()) throw std::invalid_argument(fmt::format("axis --{} has no values", axis));
}

std::string problem_key(const Problem& p) {
  Problem inputs_of = p;
  inputs_of.deterministic = false;
  return inputs_of.name() + fmt::format("/seed:{}", p.seed);
}

std::vector<size_t> run_order(const std::vector<Point>& group) {
  std::vector<size_t> order;
  for (bool forward : {true, false})
    for (size_t i = 0; i < group.size(); ++i)
      if ((group[i].pass == Pass::Fwd) == forward) order.push_back(i);
  return order;
}

std::vector<Point> expand(const SweepSpec& s) {
  require_nonempty(s.methods, "method");
  require_nonempty(s.passes, "pass");
  require_nonempty(s.batch, "batch");
  require_nonempty(s.heads, "heads");
  require_nonempty(s.kv_heads, "kv-heads");
  require_nonempty(s.seqlen, "seqlen");
  require_nonempty(s.seqlen_k, "seqlen-k");
  require_nonempty(s.head_dim, "head-dim");
  require_nonempty(s.dtypes, "dtype");
  require_nonempty(s.causal, "causal");
  require_nonempty(s.padding, "padding");
  require_nonempty(s.dropout, "dropout");
  require_nonempty(s.deterministic, "deterministic");
  require_nonempty(s.block_r, "block-r");
  require_nonempty(s.block_c, "block-c");
  require_nonempty(s.mma, "mma");
  require_nonempty(s.kv_page, "kv-layout");
  require_nonempty(s.seqlens, "seqlens");
  require_nonempty(s.varlen_padded, "varlen-as");
  require_nonempty(s.varlen_queries, "seqlen-q");
  require_nonempty(s.pattern, "pattern");
  require_nonempty(s.density, "density");
  require_nonempty(s.sparse_block, "sparse-block");

  struct Sparsity {
    std::string pattern;
    double density;
    int block;
  };
  std::vector<Sparsity> sparsity;
  for (const auto& pat : s.pattern) {
    if (pat.empty() || pat == "none") {
      sparsity.push_back({"", s.density[0], s.sparse_block[0]});
      continue;
    }
    for (int bs : s.sparse_block) {
      if (pat == "random") {
        for (double dens : s.density) sparsity.push_back({pat, dens, bs});
      } else {
        sparsity.push_back({pat, s.density[0], bs});
      }
    }
  }

  std::vector<int64_t> batches = s.tokens ? std::vector<int64_t>{0} : s.batch;
  std::vector<int64_t> heads = s.model_dim ? std::vector<int64_t>{0} : s.heads;
  // The cartesian product's size first, overflow-checked: a sweep is never expanded past kMaxPoints.
  std::optional<int64_t> count = int64_t(1);
  for (size_t n :
       {s.dtypes.size(), s.head_dim.size(), s.causal.size(), s.padding.size(), s.dropout.size(), heads.size(),
        s.kv_heads.size(), batches.size(), s.seqlen.size(), s.seqlen_k.size(), s.block_r.size(), s.block_c.size(),
        s.mma.size(), s.kv_page.size(), s.seqlens.size(), s.varlen_padded.size(), s.varlen_queries.size(), sparsity.size(), s.deterministic.size(), s.methods.size(), s.passes.size()})
    if (count) count = checked_mul(*count, int64_t(n));
  if (!count || *count > kMaxPoints)
    throw std::invalid_argument(fmt::format("the sweep has {} points, more than flashio's bound of {}",
                                            count ? std::to_string(*count) : std::string("over 2^63"), kMaxPoints));
  std::vector<Point> points;
  for (DType dt : s.dtypes)
    for (int64_t d : s.head_dim)
      for (bool causal : s.causal)
        for (Padding pad : s.padding)
          for (double drop : s.dropout)
            for (int64_t h0 : heads)
              for (int64_t kvh : s.kv_heads)
                for (int64_t b0 : batches)
                  for (int64_t n : s.seqlen)
                    for (int64_t nk : s.seqlen_k)
                      for (int br : s.block_r)
                        for (int bc : s.block_c)
                          for (const std::string& mma : s.mma)
                            for (int kv_page : s.kv_page)
                              for (const std::string& seqlens : s.seqlens)
                              for (bool padded : s.varlen_padded)
                              for (int64_t queries : s.varlen_queries)
                              for (const Sparsity& sp : sparsity) {
                                const bool varlen = !seqlens.empty();
                                // Axes a varlen point does not have (its N and, for a file, its
                                // batch come from the lengths), so no point repeats.
                                if (!varlen && (padded || queries != s.varlen_queries.front())) continue;
                                if (varlen && n != s.seqlen.front()) continue;
                                if (varlen && seqlens.rfind("file:", 0) == 0 && b0 != batches.front()) continue;
                                Problem p;
                                p.pattern = sp.pattern;
                                p.sparse_density = sp.density;
                                p.sparse_block = sp.block;
                                p.sparse_window = s.sparse_window;
                                p.sparse_global = s.sparse_global;
                                p.dtype = dt;
                                p.head_dim = d;
                                p.causal = causal;
                                p.padding = pad;
                                p.dropout = drop;
                                p.seqlen_q = n;
                                p.seqlen_k = nk;
                                p.kv_heads = kvh;
                                p.block_r = br;
                                p.block_c = bc;
                                p.mma = mma;
                                p.kv_page = kv_page;
                                p.seed = s.seed;
                                p.batch = b0;
                                p.heads = h0;
                                p.seqlens = seqlens;
                                p.varlen_padded = padded;
                                if (s.tokens && !varlen) {
                                  if (n <= 0 || *s.tokens % n != 0 || *s.tokens < n)
                                    throw std::invalid_argument(fmt::format(
                                        "--tokens {} is not a positive multiple of seqlen {}", *s.tokens, n));
                                  p.batch = *s.tokens / n;
                                }
                                if (s.model_dim) {
                                  if (d <= 0 || *s.model_dim % d != 0 || *s.model_dim < d)
                                    throw std::invalid_argument(fmt::format(
                                        "--model-dim {} is not a positive multiple of head-dim {}", *s.model_dim, d));
                                  p.heads = *s.model_dim / d;
                                }
                                if (varlen) {
                                  if (s.tokens) p.batch = 1;  // resolve_varlen draws the count
                                  if (auto why = resolve_varlen(p, s.tokens, queries)) throw std::invalid_argument(*why);
                                }
                                if (auto why = p.invalid_reason()) throw std::invalid_argument(*why);
                                for (bool det : s.deterministic) {  // innermost: one problem's inputs shared
                                  p.deterministic = det;
                                  for (const auto& m : s.methods)
                                    for (Pass pass : s.passes) points.push_back({m, pass, p});
                                }
                              }
  return points;
}

}  // namespace flashio
