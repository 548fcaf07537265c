// Runner: turns points into records. For each point: supports()? → inputs (shared by
// the points of one problem) → plan → check against the float64 reference → time.
// A failing point becomes a record (skipped / oom / error) and the sweep goes on.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
};

class Runner {
 public:
  Runner(const DeviceInfo& dev, RunOptions opt);
  ~Runner();
  Record run(const Point& point);  // never throws for a failing point
  // True after a sticky CUDA error (an illegal address, a launch failure): the context is
  // unusable, and every later run() returns an error record without touching the GPU.
  bool poisoned() const;
  std::vector<Record> run_all(const std::vector<Point>& points,
                              const std::function<void(const Record&, size_t index, size_t total)>& on_record = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace flashio
