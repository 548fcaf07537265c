#include "bench/measure/sweep_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>

#include "baselines/common/cublas_handle.h"
#include "bench/core/method.h"
#include "bench/measure/first_starts.h"
#include "bench/measure/host_side.h"
#include "bench/sweep/progress.h"
#include "bench/sweep/shard.h"

namespace flashio {

SweepOutcome run_sweep(const SweepJob& job) {
  const auto sweep_start = job.start.value_or(std::chrono::steady_clock::now());
  const std::vector<Point>& points = *job.points;
  const size_t workers = job.devices.size();
  // Problem groups of the todo list: positions [begin, end) in job.todo.
  std::vector<Point> todo_points;
  for (size_t i : job.todo) todo_points.push_back(points[i]);
  auto ranges = problem_groups(todo_points);
  if (workers > 1) {
    // Several workers: the longest groups first (by estimate_sweep_seconds), so that no GPU is left
    // with a long group while the others idle at the end. One GPU keeps the sweep's order.
    const std::vector<double> cost =
        estimate_sweep_seconds(todo_points, job.options.reps, job.options.warmup, 0, job.options.reference_on_gpu);
    auto group_cost = [&](const std::pair<size_t, size_t>& g) {
      double c = 0;
      for (size_t i = g.first; i < g.second; ++i) c += cost[i];
      return c;
    };
    std::stable_sort(ranges.begin(), ranges.end(),
                     [&](const auto& x, const auto& y) { return group_cost(x) > group_cost(y); });
    // But each worker starts with one of the shortest groups: its host work is the one not made
    // while a GPU runs (the first), and the long group after it is then made during it.
    const size_t starters = std::min(workers, ranges.size());
    std::rotate(ranges.begin(), ranges.end() - long(starters), ranges.end());
  }
  // A group: its positions in job.todo in the order its points run (forward points first: they
  // need only the forward part of the problem's host work, so they run while its gradients' part
  // is made).
  using Group = std::vector<size_t>;
  std::deque<Group> groups;  // in the order they are dealt
  for (const auto& [begin, end] : ranges) {
    const std::vector<Point> members(todo_points.begin() + long(begin), todo_points.begin() + long(end));
    Group g;
    for (size_t k : run_order(members)) g.push_back(begin + k);
    groups.push_back(std::move(g));
  }
  auto group_points = [&](const Group& g) {
    std::vector<Point> out;
    for (size_t pos : g) out.push_back(points[job.todo[pos]]);
    return out;
  };

  // The workers share one maker of host halves (host_side.h), with a lane per worker: at most one
  // part per worker is made at a time, each on every core (a share of the cores would make a part
  // alone on the host slower, and change the last bits of dK, dV, which are summed per thread), and a
  // free lane takes the part needed first, a forward part before another problem's gradients'.
  // (One lane for two workers, c3c6e46, could not keep up: a part alone leaves cores idle, and two
  // GPUs' groups needed the parts faster than one at a time came; docs/sweep-time.md.)
  RunOptions host_options = job.options;
  host_options.host_threads =
      job.options.host_threads > 0 ? job.options.host_threads : int(std::max(1u, std::thread::hardware_concurrency()));
  const auto maker = std::make_shared<HostSideMaker>(host_options, int(workers));
  // It is asked for the groups in the order they are dealt, `workers` groups ahead of those
  // started: each worker's next group is made while it runs one (at most two groups' host halves
  // per worker are held, as when each worker made its own).
  std::set<size_t> asked;                 // groups asked for, by their first position
  auto ask_ahead = [&](size_t horizon) {  // the first `horizon` groups not yet started (mu held)
    size_t n = 0;
    for (const Group& g : groups) {
      if (n++ == horizon) break;
      if (!asked.insert(g.front()).second) continue;
      const std::vector<Point> members = group_points(g);
      if (const auto with_grad = host_work_of(members, job.devices.front()))
        maker->ask(members.front().problem, *with_grad);
    }
  };

  // cuBLAS's start, the one first start that is the process's and not each GPU's, is made by a
  // thread of its own on the first GPU (start_cublas: one small GEMM) while every GPU runs its
  // first group's other methods (the first GPU times nothing until it is made); the methods that
  // call cuBLAS are marked as being started before the workers start (first_starts.h).
  const auto starts = std::make_shared<FirstStarts>();
  std::vector<std::string> cublas_methods;
  for (size_t i : job.todo) {
    const Method* m = builtin_registry().find(points[i].method);
    if (m && m->info().cublas &&
        std::find(cublas_methods.begin(), cublas_methods.end(), points[i].method) == cublas_methods.end())
      cublas_methods.push_back(points[i].method);
  }
  for (const std::string& m : cublas_methods) starts->begin(m, job.devices.front().index);
  auto started_cublas = [&] {
    for (const std::string& m : cublas_methods) starts->finish(m);
  };
  std::thread cublas_starter;
  if (!cublas_methods.empty()) {
    try {
      cublas_starter = std::thread([&, device = job.devices.front().index] {
        try {
          start_cublas(device);
        } catch (const std::exception&) {  // best effort: each GPU's first warm-up of the method makes it then
        }
        started_cublas();
      });
    } catch (const std::system_error&) {  // no thread: the workers make it, as the methods' other starts
      started_cublas();
    }
  }
  struct Join {  // before run_sweep returns, however it returns
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join_starter{cublas_starter};

  std::mutex mu;  // guards groups, asked, healthy, outcome and the callbacks
  size_t healthy = workers;
  std::atomic<bool> failed{false};  // a callback threw (the journal could not be written): all stop
  SweepOutcome outcome;
  auto stopping = [&] { return job.stop && job.stop->load() != 0; };

  // Each worker's first group is dealt before any starts (one of the shortest each), and the maker
  // is asked for those: the runners' GPU contexts start and their warm-ups run while the host makes
  // them. A further group is asked for as each worker has started (its runner made): made during
  // the starts, on every core, the next groups slowed the one start no other work hides, cuBLAS's
  // (an H200: 0.12-0.15 s alone, 0.18-0.27 s beside the two lanes' float64 reference;
  // docs/sweep-time.md), and a worker that leaves cuBLAS's start to the sweep's thread
  // (first_starts.h) is ready at once and needs its next group first.
  ask_ahead(workers);
  size_t ready = 0;  // workers whose runner is made, or failed to be (mu held)
  auto started = [&] { ask_ahead(std::min(++ready, workers)); };  // mu held: one more group ahead
  std::vector<Group> first(workers);
  for (auto& g : first) {
    if (groups.empty()) break;
    g = std::move(groups.front());
    groups.pop_front();
  }

  auto worker = [&](size_t me) {
    const DeviceInfo& dev = job.devices[me];
    Group current = std::move(first[me]);
    std::unique_ptr<Runner> runner;
    try {
      RunOptions opt = host_options;
      opt.device = dev.index;
      runner = std::make_unique<Runner>(dev, opt, group_points(current), maker, starts);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu);
      started();
      outcome.errors.push_back(fmt::format("GPU {}: {}", dev.index, e.what()));
      if (!current.empty()) groups.push_front(std::move(current));
      --healthy;
      return;
    }
    // The first group's points of a method whose start the sweep's thread is making (cuBLAS's, for
    // `standard`) run after the group's others, which need not wait for it.
    if (const std::set<std::string> later = runner->deferred_methods(); !later.empty())
      std::stable_partition(current.begin(), current.end(),
                            [&](size_t pos) { return later.count(points[job.todo[pos]].method) == 0; });
    {
      std::lock_guard<std::mutex> lock(mu);
      started();
      if (job.on_worker_ready) job.on_worker_ready(dev, runner->counters_description(), runner->start_description());
    }
    for (;;) {
      if (current.empty()) {  // the next group in the deal, whoever's runner ran the one before
        std::lock_guard<std::mutex> lock(mu);
        if (groups.empty()) return;
        current = std::move(groups.front());
        groups.pop_front();
        ask_ahead(workers);
      }
      for (size_t k = 0; k < current.size(); ++k) {
        if (stopping() || failed) return;
        {
          // A poisoned worker hands the rest of its group back and leaves the remaining
          // points to healthy GPUs; the last worker runs everything (a poisoned runner then
          // records each point as not run, without touching the GPU).
          std::lock_guard<std::mutex> lock(mu);
          if (runner->poisoned() && healthy > 1) {
            groups.push_front(Group(current.begin() + long(k), current.end()));
            --healthy;
            return;
          }
        }
        const size_t index = job.todo[current[k]];
        try {
          if (job.on_start) {
            std::lock_guard<std::mutex> lock(mu);
            job.on_start(index);
          }
          const auto started = std::chrono::steady_clock::now();
          Record rec = runner->run(points[index]);  // never throws for a failing point
          rec.point_index = int64_t(index);
          if (rec.phases) rec.phases->started_s = std::chrono::duration<double>(started - sweep_start).count();
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
      current.clear();
    }
  };

  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) threads.emplace_back(worker, w);
  for (auto& t : threads) t.join();
  std::sort(outcome.records.begin(), outcome.records.end(),
            [](const Record& a, const Record& b) { return a.point_index < b.point_index; });
  outcome.stopped = outcome.records.size() < job.todo.size() && stopping();
  return outcome;
}

}  // namespace flashio
