// Runner: turns points into records. For each point: supports()? → inputs (shared by
// the points of one problem) → plan → check against the float64 reference → time.
// A failing point becomes a record (skipped / oom / error) and the sweep goes on.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/device_info.h"
#include "bench/record.h"
#include "bench/sweep.h"

namespace flashio {

struct RunOptions {
  int device = 0;
  int reps = 30;
  int warmup = 5;
  bool flush_l2 = true;
  double check_budget_macs = 4e9;  // reference work per problem before rows are sampled
  CounterSet counters = CounterSet::Off;  // the hardware-counter pass after timing
  std::string cupti_library;              // empty: CounterSession::default_library()
};

class Runner {
 public:
  Runner(const DeviceInfo& dev, RunOptions opt);
  ~Runner();
  Record run(const Point& point);  // never throws for a failing point
  // "counters: full set on GH100 (hopper), 8 metrics, 1 replay pass…" or why there are none.
  std::string counters_description() const;
  std::vector<Record> run_all(const std::vector<Point>& points,
                              const std::function<void(const Record&, size_t index, size_t total)>& on_record = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace flashio
