// Progress of a sweep on stderr: points done / total, the current point, elapsed time and
// an ETA. On a terminal one status line is redrawn in place; otherwise (a log file, a
// Slurm job) each finished point is one plain line. `--quiet` turns it off.
//
// The ETA weighs the points by estimate_seconds(), so a sweep whose long sequences come
// last is not promised an early finish; the same estimate is `--dry-run`'s total.
#pragma once
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "bench/core/record.h"
#include "bench/sweep/sweep.h"

namespace flashio {

// A rough wall-clock estimate of one point on an H100/H200-class GPU, without the host work
// it may share with other points: the timed launches (warm-up, repetitions, two checks) at the
// method's typical throughput on the committed H200 results, the checks' compares and a fixed
// overhead. Good to a factor of a few: for planning.
double estimate_seconds(const Point& p, int reps, int warmup);

// The estimate of each point of `points` on one GPU, host work included as the runner does it:
// each problem group's host half (the inputs and float64 reference of its checked rows, then the
// gradients' reference when a point of it is a backward pass; on `host_cores` cores, 0 = this
// machine's) is made while the group before it runs, its forward points run first and wait only
// for the forward part, its other points for what of the gradients' part their GPU time did not
// cover. With `reference_on_gpu` (run --reference gpu) the problems the GPU's reference covers get
// it as GPU time of their first points instead, the host making only their inputs. Rates measured
// from the records' phases_s (docs/sweep-time.md). `--dry-run`'s total, the ETA and the multi-GPU
// group order use it.
std::vector<double> estimate_sweep_seconds(const std::vector<Point>& points, int reps, int warmup, int host_cores = 0,
                                           bool reference_on_gpu = true);

std::string format_duration(double seconds);  // 42s, 3m05s, 2h07m

// A point's time breakdown in one line (`run --verbose`): "total 1.23 s: inputs 0.10,
// reference 0.52, plan 0.01, check 0.05, timed 0.40, counters 0.12, other 0.03".
std::string format_phases(const PhaseTimes& t);

class Progress {
 public:
  enum class Mode { Quiet, Lines, Terminal };
  static Mode mode_for(bool quiet, std::FILE* out);  // Terminal when `out` is a tty

  // `estimates[i]` is the estimate of the i-th point to run.
  Progress(Mode mode, std::FILE* out, std::vector<double> estimates);
  void started(size_t i, const std::string& name);
  void finished(size_t i, const Record& r);
  void close();  // ends the terminal status line

  // One progress line (tested): "[3/40] 7% flash2/fwd/... ok 1.23 ms | elapsed 12s, eta 2m40s".
  static std::string line(size_t done, size_t total, const std::string& name, const std::string& outcome,
                          double elapsed_s, double eta_s);

 private:
  double eta(double elapsed) const;
  Mode mode_;
  std::FILE* out_;
  std::vector<double> estimates_;
  double estimate_total_ = 0, estimate_done_ = 0;
  size_t done_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
};

}  // namespace flashio
