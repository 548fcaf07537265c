#include "bench/sweep_runner.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "bench/shard.h"

namespace flashio {

SweepOutcome run_sweep(const SweepJob& job) {
  const std::vector<Point>& points = *job.points;
  // Problem groups of the todo list: positions [begin, end) in job.todo.
  std::vector<Point> todo_points;
  for (size_t i : job.todo) todo_points.push_back(points[i]);
  const auto groups = problem_groups(todo_points);

  std::mutex mu;  // guards next_group, outcome and the callbacks
  size_t next_group = 0;
  size_t healthy = job.devices.size();
  SweepOutcome outcome;
  auto stopping = [&] { return job.stop && job.stop->load() != 0; };

  auto worker = [&](const DeviceInfo& dev) {
    std::unique_ptr<Runner> runner;
    try {
      RunOptions opt = job.options;
      opt.device = dev.index;
      runner = std::make_unique<Runner>(dev, opt);  // sets this thread's current device
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu);
      outcome.errors.push_back(fmt::format("GPU {}: {}", dev.index, e.what()));
      --healthy;
      return;
    }
    for (;;) {
      std::pair<size_t, size_t> group;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next_group >= groups.size()) return;
        // A poisoned worker leaves the rest to healthy ones; the last one runs everything
        // (its run() then records each point as not run, without touching the GPU).
        if (runner->poisoned() && healthy > 1) {
          --healthy;
          return;
        }
        group = groups[next_group++];
      }
      for (size_t pos = group.first; pos < group.second; ++pos) {
        if (stopping()) return;
        const size_t index = job.todo[pos];
        if (job.on_start) {
          std::lock_guard<std::mutex> lock(mu);
          job.on_start(index);
        }
        Record rec = runner->run(points[index]);
        rec.point_index = int64_t(index);
        std::lock_guard<std::mutex> lock(mu);
        if (job.on_record) job.on_record(rec);
        outcome.records.push_back(std::move(rec));
      }
    }
  };

  std::vector<std::thread> threads;
  for (const auto& dev : job.devices) threads.emplace_back(worker, std::cref(dev));
  for (auto& t : threads) t.join();
  std::sort(outcome.records.begin(), outcome.records.end(),
            [](const Record& a, const Record& b) { return a.point_index < b.point_index; });
  outcome.stopped = outcome.records.size() < job.todo.size() && stopping();
  return outcome;
}

}  // namespace flashio
