// Runs the points of a sweep on one or several GPUs: one worker thread per GPU, each with
// its own Runner (and CUDA context), taking problem groups — consecutive points that share
// a problem, so inputs and reference are made once — from one queue (with several GPUs, the
// longest groups first) as it finishes the one before. Within a group the forward points run
// first. The workers share one maker of the problems' host halves (host_side.h), asked for the
// groups in the order they are dealt: it makes up to one part per worker at a time, each on every
// core, the one needed first first. Every record is handed to `on_record` as soon as it exists
// (the CLI appends it to the journal there).
//
// Stopping: when `*stop` becomes non-zero (SIGINT/SIGTERM), each worker finishes the point
// it is running and takes no more. A worker whose CUDA context is poisoned by a sticky error
// stops taking work, so the other GPUs run the rest; if every worker is poisoned, the
// points left are recorded as errors without touching a GPU.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/core/device_info.h"
#include "bench/core/record.h"
#include "bench/measure/runner.h"

namespace flashio {

struct SweepJob {
  const std::vector<Point>* points = nullptr;  // the whole sweep: record.point_index indexes it
  std::vector<size_t> todo;                    // indices of the points to run, in sweep order
  std::vector<DeviceInfo> devices;             // one worker each
  RunOptions options;                          // `device` is set per worker
  const std::atomic<int>* stop = nullptr;
  // The sweep's start: records' phases_s.started count from it (run_sweep's entry if unset).
  std::optional<std::chrono::steady_clock::time_point> start;
  // Called from the workers, one at a time (under a lock), in completion order.
  std::function<void(size_t index)> on_start;
  // A worker's runner started: its counter set, and where its start's time went.
  std::function<void(const DeviceInfo&, const std::string& counters, const std::string& start)> on_worker_ready;
  std::function<void(const Record&)> on_record;
};

struct SweepOutcome {
  std::vector<Record> records;      // the points run, sorted by point_index
  std::vector<std::string> errors;  // workers that could not start (one line each)
  bool stopped = false;             // *stop was seen before every point had run
};

SweepOutcome run_sweep(const SweepJob& job);

}  // namespace flashio
