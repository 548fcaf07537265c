#include "bench/sweep/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "bench/core/reference.h"
#include "bench/sweep/shard.h"
#include "bench/sweep/table.h"

namespace flashio {

namespace {

// Assumed rates, read off the H200 files of results/crosscheck/issue22-scaling (d1f52c7: medians
// over the FA-2 setting) and rounded down; only the ETA and --dry-run use them.
double kernel_flops_per_s(const std::string& method, Pass pass) {
  if (method == "flash1") return 85e12;                                // fwd+bwd median 91 TFLOP/s
  if (method == "flash2") return pass == Pass::Fwd ? 350e12 : 300e12;  // fwd median 367, fwd+bwd 302-316
  // standard: its GEMMs (cuBLAS); its time is the scores' HBM passes (estimate_seconds): the b90f9e5
  // sweep's N 8192 fwd+bwd points took 25 ms (d 64) and 13 ms (d 128) a launch against 27 and 13 ms
  // from those passes, where 90e12 for the whole pass gave 43 ms for both (standard's medians of
  // 92-137 TFLOP/s were over d 64 and 128 together)
  if (method == "standard" || method == "standard_fused") return 300e12;
  return 90e12;  // peers, new methods
}
constexpr double kHbmBytesPerS = 3.2e12;      // the materialized scores of `standard` (medians 3.23e12-3.42e12)
constexpr double kReferenceBudgetMacs = 4e9;  // RunOptions::check_budget_macs
constexpr double kCpuMethodFlopsPerS = 3e9;   // the `reference` method timed on the host
constexpr double kOverheadS = 0.001;          // plan, allocation (0.0004-0.0007 s since blocks are kept: 0d6ef67;
                                              // under 0.0001 s with blocks kept across problems: a1406be)
// Host work, from the records' phases_s of results/crosscheck/issue22-scaling (two H200s,
// 32 host cores, d1f52c7, 0d6ef67, a1406be, d2af9ae, ed87ba6 and b90f9e5; docs/sweep-time.md):
constexpr double kReferenceMacsPerCoreS = 2e9;    // float64 reference, multiply-adds per core (0d6ef67: the
                                                  // N 8192 forward parts, 3.8e9 in 0.062-0.065 s on 32 cores)
constexpr double kGpuReferenceMacsPerS = 7e11;    // the float64 reference on the GPU (bench/cuda/device_reference.h),
                                                  // in reference_macs' multiply-adds with its copies (96ef4df on an
                                                  // H200: the N 8192, d 128 parts, 1.9e9 and 5.8e9 in 5.0 and
                                                  // 5.3-5.5 ms)
constexpr double kInputsS = 0.01;                 // a problem's inputs: on the GPU, checked heads on the host (0.009 s)
constexpr double kCheckFwdS = 0.007;              // a forward point's checked runs and compares (medians
                                                  // 0.013 s at 0d6ef67, 0.011 s at a1406be, 0.008 s at d2af9ae,
                                                  // 0.006-0.007 s at ed87ba6, 0.005-0.006 s at b90f9e5)
constexpr double kCheckBwdS = 0.016;              // with gradients (medians 0.029-0.032 s, 0.027-0.033 s,
                                                  // 0.020-0.024 s, 0.016 s, 0.013-0.016 s)

// Query rows the check compares (bench/measure/check.cpp's rows_to_check): all of them within
// the budget, else about budget / (cost of a row) over four sampled heads.
double checked_rows(const Problem& p) {
  const double total = double(p.batch) * double(p.heads) * double(p.seqlen_q);
  const double row_cost = 2.0 * double(p.nk()) * double(p.head_dim);
  if (total * row_cost <= kReferenceBudgetMacs) return total;
  const double per_head = std::min(double(p.seqlen_q), std::max(8.0, kReferenceBudgetMacs / row_cost / 4.0));
  return std::min(total, 4.0 * per_head);
}

// The reference of a problem's checked rows, in multiply-adds: the forward, or (grad) dQ of those
// rows and dK, dV of the K/V heads the budget allows (bench/measure/host_side.cpp's make_forward,
// make_gradients).
double reference_macs(const Problem& p, bool grad) {
  const double visible = p.causal ? 0.5 : 1.0;
  const double row_macs = double(p.nk()) * double(p.head_dim) * visible;
  if (!grad) return checked_rows(p) * row_macs;
  double macs = 3.0 * checked_rows(p) * row_macs;  // P, dP and dQ over the keys of each row
  const double head = reference_dkdv_cost(p);
  const double heads = double(p.batch) * double(p.kvh());
  if (head * heads <= kReferenceBudgetMacs) macs += head * heads * visible;
  else if (2.0 * head <= kReferenceBudgetMacs) macs += std::min(2.0, heads) * head * visible;
  return macs;
}

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
      if (p.causal || p.key_padded()) passes += 2.0;
      if (p.dropout > 0) passes += pt.pass == Pass::Fwd ? 2.5 : 5.0;
    }
    kernel = std::max(kernel, passes * scores / kHbmBytesPerS);
  }
  if (pt.method == "reference") kernel = f / kCpuMethodFlopsPerS, reps = std::min(reps, 3);
  return kOverheadS + launches * kernel + (pt.pass == Pass::Fwd ? kCheckFwdS : kCheckBwdS);
}

std::vector<double> estimate_sweep_seconds(const std::vector<Point>& points, int reps, int warmup, int host_cores,
                                           bool reference_on_gpu) {
  const double cores = host_cores > 0 ? host_cores : double(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<double> out(points.size());
  for (size_t i = 0; i < points.size(); ++i) out[i] = estimate_seconds(points[i], reps, warmup);
  // The runner's timeline (bench/measure/host_side.h): the host makes a problem's forward part,
  // then its gradients' part (when a point of the group is a backward pass), one part at a time,
  // starting when the group before it starts on the GPU (the first two at once); the group runs
  // its forward points first (run_order). The first forward point waits for what of the forward
  // part is not made yet, the first other point for what of the gradients' part is not. Where the
  // GPU makes the reference (device_reference_covers), the host makes only the inputs, and the
  // group's first point carries the forward reference's GPU time, its first other point the
  // gradients'.
  const double host_rate = kReferenceMacsPerCoreS * cores;
  double gpu = 0, host = 0;    // when the GPU and the host are free
  double previous_start = 0;   // when the group before this one started on the GPU
  const auto groups = problem_groups(points);
  for (const auto& [begin, end] : groups) {
    const std::vector<Point> group(points.begin() + long(begin), points.begin() + long(end));
    const Problem& p = group.front().problem;
    bool grad = false;
    for (const Point& pt : group) grad = grad || pt.pass != Pass::Fwd;
    const bool on_gpu = reference_on_gpu && device_reference_covers(p);
    const double forward_macs = reference_macs(p, false), gradients_macs = grad ? reference_macs(p, true) : 0.0;
    host = std::max(host, previous_start);
    const double forward_ready = host + kInputsS + (on_gpu ? 0.0 : forward_macs / host_rate);
    const double gradients_ready = forward_ready + (on_gpu ? 0.0 : gradients_macs / host_rate);
    host = gradients_ready;
    previous_start = gpu;
    bool first_point = true, first_forward = true, first_other = true;
    for (size_t k : run_order(group)) {
      const size_t i = begin + k;
      const bool forward = points[i].pass == Pass::Fwd;
      bool& first = forward ? first_forward : first_other;
      if (first) {
        const double wait = std::max(0.0, (forward ? forward_ready : gradients_ready) - gpu);
        out[i] += wait;
        if (on_gpu) out[i] += (first_point ? forward_macs : 0.0) / kGpuReferenceMacsPerS +
                              (forward ? 0.0 : gradients_macs / kGpuReferenceMacsPerS);
        first = false;
      }
      first_point = false;
      gpu += out[i];
    }
  }
  return out;
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
  return fmt::format("{}total {:.3f} s: inputs {:.3f}, reference {:.3f}, plan {:.3f}, check {:.3f}, timed {:.3f}, "
                     "counters {:.3f}, other {:.3f}",
                     t.started_s ? fmt::format("at {:.3f} s, ", *t.started_s) : std::string(), t.total_s,
                     t.inputs_s, t.reference_s, t.plan_s, t.check_s, t.timed_s, t.counters_s,
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
