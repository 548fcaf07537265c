#include "bench/measure/sweep_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "bench/sweep/progress.h"
#include "bench/sweep/shard.h"

namespace flashio {

SweepOutcome run_sweep(const SweepJob& job) {
  const std::vector<Point>& points = *job.points;
  // Problem groups of the todo list: positions [begin, end) in job.todo.
  std::vector<Point> todo_points;
  for (size_t i : job.todo) todo_points.push_back(points[i]);
  auto all_groups = problem_groups(todo_points);
  if (job.devices.size() > 1) {
    // Several workers: the longest groups first (by estimate_sweep_seconds), so that no GPU is left
    // with a long group while the others idle at the end. One GPU keeps the sweep's order.
    const std::vector<double> cost = estimate_sweep_seconds(todo_points, job.options.reps, job.options.warmup);
    auto group_cost = [&](const std::pair<size_t, size_t>& g) {
      double c = 0;
      for (size_t i = g.first; i < g.second; ++i) c += cost[i];
      return c;
    };
    std::stable_sort(all_groups.begin(), all_groups.end(),
                     [&](const auto& x, const auto& y) { return group_cost(x) > group_cost(y); });
    // But each worker starts with one of the shortest groups: its host work is the one not made
    // while a GPU runs (the first), and the long group after it is then made during it.
    const size_t starters = std::min(job.devices.size(), all_groups.size());
    std::rotate(all_groups.begin(), all_groups.end() - long(starters), all_groups.end());
  }
  std::deque<std::pair<size_t, size_t>> groups(all_groups.begin(), all_groups.end());  // positions in job.todo
  // Each worker's reference may use every core: the workers' host work seldom runs at the same time
  // (each prepares its next group while its GPU runs the current one), and when it does the
  // scheduler shares the cores between them. (Splitting the cores made every reference twice as
  // long with two GPUs: 0.4 -> 0.9 s of a 64-point sweep's reference on two H200s, d1ebc73.)
  const int host_threads =
      job.options.host_threads > 0 ? job.options.host_threads : int(std::max(1u, std::thread::hardware_concurrency()));

  std::mutex mu;  // guards groups, held, healthy, outcome and the callbacks
  std::vector<std::optional<std::pair<size_t, size_t>>> held(job.devices.size());  // each worker's next group
  size_t healthy = job.devices.size();
  std::atomic<bool> failed{false};  // a callback threw (the journal could not be written): all stop
  SweepOutcome outcome;
  auto stopping = [&] { return job.stop && job.stop->load() != 0; };

  using Group = std::pair<size_t, size_t>;  // positions [begin, end) in job.todo
  auto group_points = [&](const Group& g) {
    std::vector<Point> out;
    for (size_t pos = g.first; pos < g.second; ++pos) out.push_back(points[job.todo[pos]]);
    return out;
  };

  // Each worker's first group and the one after it (held) are dealt before any starts: the
  // starters (one of the shortest each), then the longest groups in turn. Its runner makes both on
  // the host while its GPU's context starts.
  std::vector<std::optional<Group>> first(job.devices.size());
  for (auto* deal : {&first, &held})
    for (auto& g : *deal)
      if (!groups.empty()) {
        g = groups.front();
        groups.pop_front();
      }

  auto worker = [&](size_t me) {
    const DeviceInfo& dev = job.devices[me];
    // Each worker holds the group after the one it runs (held[me]), and has its runner prepare
    // that group's inputs and reference on the host while the GPU runs this one. A worker that
    // finds no group left takes another worker's held group, which has not started (its prefetch
    // is then wasted), so that no GPU idles at the end while another still has two groups to run.
    auto take = [&](bool steal) -> std::optional<Group> {
      std::lock_guard<std::mutex> lock(mu);
      if (!groups.empty()) {
        auto g = groups.front();
        groups.pop_front();
        return g;
      }
      if (!steal) return std::nullopt;
      for (auto& h : held)
        if (h) {
          auto g = *h;
          h.reset();
          return g;
        }
      return std::nullopt;
    };
    auto take_held = [&]() -> std::optional<Group> {
      std::lock_guard<std::mutex> lock(mu);
      auto g = held[me];
      held[me].reset();
      return g;
    };
    auto take_held_copy = [&]() -> std::optional<Group> {  // held[me], left held (stealable)
      std::lock_guard<std::mutex> lock(mu);
      return held[me];
    };

    std::optional<Group> current = first[me];
    std::unique_ptr<Runner> runner;
    try {
      RunOptions opt = job.options;
      opt.device = dev.index;
      opt.host_threads = host_threads;
      std::optional<Group> next = take_held_copy();
      runner = std::make_unique<Runner>(dev, opt, current ? group_points(*current) : std::vector<Point>{},
                                        next ? group_points(*next) : std::vector<Point>{});
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu);
      outcome.errors.push_back(fmt::format("GPU {}: {}", dev.index, e.what()));
      if (held[me]) groups.push_front(*held[me]);
      held[me].reset();
      if (current) groups.push_front(*current);
      --healthy;
      return;
    }
    if (job.on_worker_ready) {
      std::lock_guard<std::mutex> lock(mu);
      job.on_worker_ready(dev, runner->counters_description());
    }
    for (;;) {
      if (!current) current = take_held();
      if (!current) current = take(true);
      if (!current) return;
      const Group group = *current;
      current.reset();
      if (!take_held_copy())
        if (const auto upcoming = take(false)) {
          {
            std::lock_guard<std::mutex> lock(mu);
            held[me] = upcoming;
          }
          runner->prefetch(group_points(*upcoming));
        }
      for (size_t pos = group.first; pos < group.second; ++pos) {
        if (stopping() || failed) return;
        {
          // A poisoned worker hands the rest of its group back and leaves the remaining
          // points to healthy GPUs; the last worker runs everything (a poisoned runner then
          // records each point as not run, without touching the GPU).
          std::lock_guard<std::mutex> lock(mu);
          if (runner->poisoned() && healthy > 1) {
            if (held[me]) groups.push_front(*held[me]);
            held[me].reset();
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
  for (size_t w = 0; w < job.devices.size(); ++w) threads.emplace_back(worker, w);
  for (auto& t : threads) t.join();
  std::sort(outcome.records.begin(), outcome.records.end(),
            [](const Record& a, const Record& b) { return a.point_index < b.point_index; });
  outcome.stopped = outcome.records.size() < job.todo.size() && stopping();
  return outcome;
}

}  // namespace flashio
