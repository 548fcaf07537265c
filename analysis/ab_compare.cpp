// flashio compare --baseline; see ab_compare.h.
#include "analysis/ab_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace flashio::analysis {

namespace {

using json = nlohmann::json;

double median_of_sorted(const std::vector<double>& s) {
  const size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return median_of_sorted(v);
}

// splitmix64: a small generator whose sequence is the same on every platform.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return size_t(next() % n); }
};

double resampled_median(const std::vector<double>& v, SplitMix& rng, std::vector<double>& scratch) {
  scratch.resize(v.size());
  for (auto& x : scratch) x = v[rng.below(v.size())];
  std::sort(scratch.begin(), scratch.end());
  return median_of_sorted(scratch);
}

double percentile(std::vector<double>& sorted, double q) {
  const double pos = q * double(sorted.size() - 1);
  const size_t i = size_t(std::floor(pos));
  const double f = pos - double(i);
  return i + 1 < sorted.size() ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}

struct Point {
  const json* rec;
  size_t file;
};

double median_s(const json& rec) {
  return rec.contains("time") && rec["time"].is_object() ? rec["time"].value("median_s", 0.0) : 0.0;
}

bool timed(const json& rec) { return rec.value("status", "") == "ok" && median_s(rec) > 0; }

std::vector<double> samples_of(const json& rec) {
  std::vector<double> s;
  if (!rec.contains("time") || !rec["time"].is_object() || !rec["time"].contains("samples_s")) return s;
  for (const auto& x : rec["time"]["samples_s"])
    if (x.is_number() && x.get<double>() > 0) s.push_back(x.get<double>());
  return s;
}

std::string why_untimed(const json& rec) {
  const std::string status = rec.value("status", "");
  const std::string reason = rec.value("reason", "");
  if (status == "ok") return "ok but no time";
  return reason.empty() ? status : status + ": " + reason;
}

}  // namespace

RatioInterval bootstrap_median_ratio(const std::vector<double>& a, const std::vector<double>& b, const AbOptions& opt) {
  if (a.size() < 2 || b.size() < 2) throw std::invalid_argument("bootstrap: fewer than two samples");
  RatioInterval r;
  r.ratio = median(b) / median(a);
  SplitMix rng{opt.seed};
  std::vector<double> ratios, scratch;
  ratios.reserve(size_t(opt.resamples));
  for (int i = 0; i < opt.resamples; ++i) {
    const double ma = resampled_median(a, rng, scratch);
    const double mb = resampled_median(b, rng, scratch);
    ratios.push_back(mb / ma);
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - opt.confidence) / 2;
  r.lo = percentile(ratios, tail);
  r.hi = percentile(ratios, 1 - tail);
  return r;
}

AbReport ab_compare(const Documents& docs, const AbOptions& opt) {
  if (docs.size() < 2) throw std::invalid_argument("compare --baseline: give the baseline and at least one other file");
  const std::vector<std::string> labels = file_labels(docs);
  // key → record, per file (the first record of a key; names are unique within a run), and the
  // keys in the file's order, so the tables follow the baseline's sweep
  std::vector<std::map<std::string, const json*>> by_file(docs.size());
  std::vector<std::vector<std::pair<std::string, const json*>>> in_order(docs.size());  // the files' record order
  for (size_t i = 0; i < docs.size(); ++i)
    for (const auto& rec : docs[i].second.at("records")) {
      const std::string key = matched_key(rec, docs[i].second);
      if (by_file[i].emplace(key, &rec).second) in_order[i].emplace_back(key, &rec);
    }

  AbReport out;
  const int pct = int(std::lround(opt.confidence * 100));
  Table unmatched{"Points not compared (in one file only, or without a time on one side)",
                  {"point", "baseline", "file", "why"},
                  {"", "", "", ""},
                  {}};
  const std::string& base_label = labels[0];
  for (size_t f = 1; f < docs.size(); ++f) {
    Table t{fmt::format("{} against the baseline {} (threshold {:.1f} %)", labels[f], base_label, opt.threshold * 100),
            {"point", "baseline ms", "ms", "ratio", fmt::format("{} % interval", pct), "samples", "verdict"},
            {"", "s", "s", "ratio", "ratio", "", ""},
            {}};
    for (const auto& [key, a] : in_order[0]) {
      const auto it = by_file[f].find(key);
      if (it == by_file[f].end()) {
        unmatched.rows.push_back(
            {text_cell(key), text_cell(base_label), text_cell(labels[f]), text_cell("only in the baseline")});
        continue;
      }
      const json& b = *it->second;
      if (!timed(*a) || !timed(b)) {
        const std::string why = !timed(*a) ? "baseline " + why_untimed(*a) : "";
        const std::string why_b = !timed(b) ? "this file " + why_untimed(b) : "";
        unmatched.rows.push_back({text_cell(key), text_cell(base_label), text_cell(labels[f]),
                                  text_cell(why + (why.empty() || why_b.empty() ? "" : "; ") + why_b)});
        continue;
      }
      const std::vector<double> sa = samples_of(*a), sb = samples_of(b);
      const double ma = median_s(*a), mb = median_s(b);
      std::vector<Cell> row{text_cell(key), number_cell(ma, fmt::format("{:.4f}", ma * 1e3)),
                            number_cell(mb, fmt::format("{:.4f}", mb * 1e3))};
      if (sa.size() < 2 || sb.size() < 2) {
        ++out.unjudged;
        row.push_back(number_cell(mb / ma, fmt::format("{:.3f}", mb / ma)));
        row.push_back(no_cell());
        row.push_back(text_cell(fmt::format("{} / {}", sa.size(), sb.size())));
        row.push_back(text_cell("no samples: not judged"));
        t.rows.push_back(row);
        continue;
      }
      ++out.judged;
      const RatioInterval ri = bootstrap_median_ratio(sa, sb, opt);
      std::string verdict;
      if (ri.lo > 1 && ri.ratio > 1 + opt.threshold) {
        verdict = "SLOWER";
        ++out.regressions;
      } else if (ri.hi < 1 && ri.ratio < 1 / (1 + opt.threshold)) {
        verdict = "faster";
      } else if (ri.lo > 1 || ri.hi < 1) {
        verdict = "within threshold";
      } else {
        verdict = "no significant change";
      }
      row.push_back(number_cell(ri.ratio, fmt::format("{:.3f}", ri.ratio)));
      row.push_back({fmt::format("[{:.3f}, {:.3f}]", ri.lo, ri.hi), json::array({ri.lo, ri.hi})});
      row.push_back(text_cell(fmt::format("{} / {}", sa.size(), sb.size())));
      row.push_back(text_cell(verdict));
      t.rows.push_back(row);
    }
    for (const auto& [key, b] : in_order[f])
      if (!by_file[0].count(key))
        unmatched.rows.push_back(
            {text_cell(key), text_cell(base_label), text_cell(labels[f]), text_cell("not in the baseline")});
    out.tables.push_back(t);
  }
  if (!unmatched.rows.empty()) out.tables.push_back(unmatched);
  return out;
}

}  // namespace flashio::analysis
