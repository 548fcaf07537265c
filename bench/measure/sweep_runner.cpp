#include "bench/measure/sweep_runner.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "bench/sweep/shard.h"

namespace flashio {

SweepOutcome run_sweep(const SweepJob& job) {
  const std::vector<Point>& points = *job.points;
  // Problem groups of the todo list: positions [begin, end) in job.todo.
  std::vector<Point> todo_points;
  for (size_t i : job.todo) todo_points.push_back(points[i]);
  const auto all_groups = problem_groups(todo_points);
  std::deque<std::pair<size_t, size_t>> groups(all_groups.begin(), all_groups.end());  // positions in job.todo

  std::mutex mu;  // guards groups, healthy, outcome and the callbacks
  size_t healthy = job.devices.size();
  std::atomic<bool> failed{false};  // a callback threw (the journal could not be written): all stop
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
    if (job.on_worker_ready) {
      std::lock_guard<std::mutex> lock(mu);
      job.on_worker_ready(dev, runner->counters_description());
    }
    for (;;) {
      std::pair<size_t, size_t> group;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (groups.empty()) return;
        group = groups.front();
        groups.pop_front();
      }
      for (size_t pos = group.first; pos < group.second; ++pos) {
        if (stopping() || failed) return;
        {
          // A poisoned worker hands the rest of its group back and leaves the remaining
          // points to healthy GPUs; the last worker runs everything (a poisoned runner then
          // records each point as not run, without touching the GPU).
          std::lock_guard<std::mutex> lock(mu);
          if (runner->poisoned() && healthy > 1) {
            groups.push_front({pos, group.second});
            --healthy;
            return;
          }
        }
        const size_t index = job.todo[pos];
        try {
          if (job.on_start) {
            std::lock_guard<std::mutex> lock(mu);
            job.on_start(index);
          }
          Record rec = runner->run(points[index]);  // never throws for a failing point
          rec.point_index = int64_t(index);
          std::lock_guard<std::mutex> lock(mu);
          if (job.on_record) job.on_record(rec);  // appends to the journal: if that fails, stop
          outcome.records.push_back(std::move(rec));
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mu);
          outcome.errors.push_back(fmt::format("GPU {}: {}", dev.index, e.what()));
          failed = true;
          return;
        }
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
