#include "bench/sweep/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/sweep/table.h"

namespace flashio {

namespace {

// Assumed rates, read off the committed H200 results (README, "Results") and rounded down;
// only the ETA and --dry-run use them.
double kernel_flops_per_s(const std::string& method, Pass pass) {
  if (method == "flash1") return 40e12;                         // fwd+bwd 38 TFLOP/s at N = 16k
  if (method == "flash2") return pass == Pass::Fwd ? 250e12 : 150e12;  // fwd 250-320, fwd+bwd 150-170
  return 100e12;                                                // standard: 90-300; peers, new methods
}
constexpr double kHbmBytesPerS = 2.5e12;      // the materialized scores of `standard`
constexpr double kReferenceMacsPerS = 1.5e9;  // the float64 reference, per problem
constexpr double kReferenceBudgetMacs = 4e9;  // RunOptions::check_budget_macs
constexpr double kCpuMethodFlopsPerS = 3e9;   // the `reference` method timed on the host
constexpr double kOverheadS = 0.05;           // allocation, input upload, plan

}  // namespace

double estimate_seconds(const Point& pt, int reps, int warmup) {
  const Problem& p = pt.problem;
  const double f = flops(p, pt.pass);
  const double launches = reps + warmup + 2;  // two checks around the timing
  double kernel = f / kernel_flops_per_s(pt.method, pt.pass);
  if (pt.method == "standard" || pt.method == "standard_fused") {
    // S and P in HBM: written and read a few times per pass; `standard`'s separate kernels add
    // the masking pass (S read and written) and the dropout passes (P read, P_drop and the mask
    // written; backward dP_drop and the mask read, dP written).
    const double scores = double(p.batch) * double(p.heads) * double(p.seqlen_q) * double(p.nk()) * 2.0;
    double passes = pt.pass == Pass::Fwd ? 4.0 : 10.0;
    if (pt.method == "standard") {
      if (p.causal || p.padding != Padding::None) passes += 2.0;
      if (p.dropout > 0) passes += pt.pass == Pass::Fwd ? 2.5 : 5.0;
    }
    kernel = std::max(kernel, passes * scores / kHbmBytesPerS);
  }
  if (pt.method == "reference") kernel = f / kCpuMethodFlopsPerS, reps = std::min(reps, 3);
  const double macs = double(p.batch) * double(p.heads) * double(p.seqlen_q) * double(p.nk()) * double(p.head_dim);
  const double reference =
      std::min(macs, kReferenceBudgetMacs) / kReferenceMacsPerS * (pt.pass == Pass::Fwd ? 1.0 : 3.0);
  return kOverheadS + launches * kernel + reference;
}

std::string format_duration(double s) {
  if (!(s >= 0) || std::isinf(s)) return "?";
  const long t = std::lround(s);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

std::string format_phases(const PhaseTimes& t) {
  const double parts = t.inputs_s + t.reference_s + t.plan_s + t.check_s + t.timed_s + t.counters_s;
  return fmt::format("total {:.3f} s: inputs {:.3f}, reference {:.3f}, plan {:.3f}, check {:.3f}, timed {:.3f}, "
                     "counters {:.3f}, other {:.3f}",
                     t.total_s, t.inputs_s, t.reference_s, t.plan_s, t.check_s, t.timed_s, t.counters_s,
                     std::max(0.0, t.total_s - parts));
}

Progress::Mode Progress::mode_for(bool quiet, std::FILE* out) {
  if (quiet) return Mode::Quiet;
  return isatty(fileno(out)) ? Mode::Terminal : Mode::Lines;
}

Progress::Progress(Mode mode, std::FILE* out, std::vector<double> estimates)
    : mode_(mode), out_(out), estimates_(std::move(estimates)), start_(std::chrono::steady_clock::now()) {
  for (double e : estimates_) estimate_total_ += e;
}

std::string Progress::line(size_t done, size_t total, const std::string& name, const std::string& outcome,
                           double elapsed_s, double eta_s) {
  const int percent = total ? int(100 * done / total) : 100;
  std::string s = fmt::format("[{}/{}] {}% {}", done, total, percent, name);
  if (!outcome.empty()) s += " " + outcome;
  s += fmt::format(" | elapsed {}, eta {}", format_duration(elapsed_s), format_duration(eta_s));
  return s;
}

double Progress::eta(double elapsed) const {
  if (estimate_done_ <= 0) return estimate_total_;  // nothing measured yet: the estimate itself
  return elapsed * (estimate_total_ - estimate_done_) / estimate_done_;
}

void Progress::started(size_t i, const std::string& name) {
  (void)i;
  if (mode_ != Mode::Terminal) return;
  std::lock_guard<std::mutex> lock(mu_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // \r and clear-to-end-of-line: the status line is redrawn in place.
  fmt::print(out_, "\r\033[K{}", line(done_, estimates_.size(), name, "running", elapsed, eta(elapsed)));
  std::fflush(out_);
}

void Progress::finished(size_t i, const Record& r) {
  if (mode_ == Mode::Quiet) return;
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  if (i < estimates_.size()) estimate_done_ += estimates_[i];
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string outcome = to_string(r.status);
  if (r.time)
    outcome += " " + format_time(r.time->median_s);
  else if (!r.reason.empty())
    outcome += ": " + r.reason;
  const std::string text = line(done_, estimates_.size(), r.name(), outcome, elapsed, eta(elapsed));
  if (mode_ == Mode::Terminal && r.status == Status::Ok)
    fmt::print(out_, "\r\033[K{}", text);
  else if (mode_ == Mode::Terminal)
    fmt::print(out_, "\r\033[K{}\n", text);  // a failure stays on screen
  else
    fmt::print(out_, "{}\n", text);
  std::fflush(out_);
}

void Progress::close() {
  if (mode_ == Mode::Terminal) {
    fmt::print(out_, "\n");
    std::fflush(out_);
  }
}

}  // namespace flashio
