// Runner: turns points into records. For each point: supports()? → inputs (shared by
// the points of one problem) → plan → check against the float64 reference → time.
// A failing point becomes a record (skipped / oom / error) and the sweep goes on.
#pragma once
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bench/core/counters.h"
#include "bench/core/device_info.h"
#include "bench/core/record.h"
#include "bench/sweep/sweep.h"

namespace flashio {

struct RunOptions {
  int device = 0;
  int reps = 30;
  int warmup = 5;
  bool flush_l2 = true;
  double check_budget_macs = 4e9;  // reference work per problem before rows are sampled
  CounterSet counters = CounterSet::Off;  // the hardware-counter pass after timing
  std::string cupti_library;              // empty: CounterSession::default_library()
  // Host threads of the float64 reference: 0 = every core (also with several GPU workers: their
  // host work seldom overlaps, and where it does the scheduler shares the cores).
  int host_threads = 0;
  // Where the float64 reference is made: on the point's GPU for the problems it covers
  // (device_reference_covers), the host for the rest; or always on the host.
  bool reference_on_gpu = true;
};

class L2Flusher;
class HostSideMaker;
class FirstStarts;

class Runner {
 public:
  // Times the launches of a point that passed its check: `launch` only enqueues work on
  // `stream`; `flusher` is null when L2 is not to be cleaned. (Google Benchmark's front end
  // times through this; the default is time_gpu's warm-up and median of repetitions.)
  using Timer = std::function<TimeStats(const std::function<void()>& launch, cudaStream_t stream, const L2Flusher* flusher)>;

  // `first`: the problem group this runner will run first. The constructor starts the GPU's
  // context and the counter session and runs each method of `first` once (a warm-up: module
  // loads, cuBLAS's start) while the host makes the group's problem.
  // `maker`: where the problems' host halves (bench/measure/host_side.h) come from: a sweep's,
  // shared by its runners and asked by the sweep for its groups in the order it deals them; or
  // null: the runner's own, asked by prefetch() (and for `first` here).
  // `starts`: which methods' first start the sweep's own thread is making (first_starts.h), shared
  // by its workers; null: the runner's own (it defers nothing).
  Runner(const DeviceInfo& dev, RunOptions opt, const std::vector<Point>& first = {},
         std::shared_ptr<HostSideMaker> maker = nullptr, std::shared_ptr<FirstStarts> starts = nullptr);
  ~Runner();
  Record run(const Point& point);  // never throws for a failing point
  Record run(const Point& point, const Timer& timer);
  // Asks the maker to make, on the host's cores while the GPU runs the current points, the checked
  // rows, inputs and float64 reference of the problem of `points` (one problem group: their
  // gradients' too when one of them is a backward pass), which run() then takes instead of making
  // them. Nothing when no point of the group will run here (unsupported). Problems are made in
  // the order asked, each held until run() takes it.
  void prefetch(const std::vector<Point>& points);
  // True after a sticky CUDA error (an illegal address, a launch failure): the context is
  // unusable, and every later run() returns an error record without touching the GPU.
  bool poisoned() const;
  // Where the constructor's time went: "context 0.001 s, L2 flusher 0.004 s, counters 0.000 s,
  // warm-up of standard/fwd 0.150 s, ..." (--verbose prints it).
  std::string start_description() const;
  // Methods of `first` whose warm-up was left for later because the sweep's own thread was making
  // their first start in the process (cuBLAS's, for `standard`: first_starts.h): run() warms each
  // up before its first point, after waiting for that start. A sweep runs the first group's other
  // points first.
  std::set<std::string> deferred_methods() const;
  // "counters: full set on GH100 (hopper), 8 metrics, 1 replay pass…" or why there are none.
  std::string counters_description() const;
  std::vector<Record> run_all(const std::vector<Point>& points,
                              const std::function<void(const Record&, size_t index, size_t total)>& on_record = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace flashio
