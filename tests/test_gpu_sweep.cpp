// The several-GPU sweep runner on the GPUs present: every point once, in sweep order, tagged
// with the GPU that ran it; a stop request ends the sweep after the points in flight; a
// Google Benchmark-style timer sees the launches of a checked point. Skips without a GPU.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "baselines/common/cublas_handle.h"
#include "bench/cuda/cuda_check.h"
#include "bench/measure/first_starts.h"
#include "bench/measure/runner.h"
#include "bench/sweep/shard.h"
#include "bench/measure/sweep_runner.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using testing_util::gpu;
using testing_util::GpuTest;

namespace {

std::vector<DeviceInfo> all_gpus() {
  std::vector<DeviceInfo> out;
  for (int d = 0; d < device_count(nullptr); ++d) out.push_back(*query_device(d, nullptr));
  return out;
}

std::vector<Point> small_sweep() {
  SweepSpec s;
  s.methods = {"standard", "flash2"};
  s.batch = {2};
  s.heads = {4};
  s.seqlen = {17, 128, 256, 1013};
  s.causal = {false, true};
  return expand(s);  // 8 problems, 16 points
}

SweepJob job_for(const std::vector<Point>& points) {
  SweepJob job;
  job.points = &points;
  for (size_t i = 0; i < points.size(); ++i) job.todo.push_back(i);
  job.devices = all_gpus();
  job.options.reps = 3;
  job.options.warmup = 1;
  return job;
}

}  // namespace

class SweepRunnerGpu : public GpuTest {};

TEST_F(SweepRunnerGpu, EveryPointOnceInSweepOrderOnEveryGpu) {
  const auto points = small_sweep();
  SweepJob job = job_for(points);
  size_t callbacks = 0;
  job.on_record = [&](const Record&) { ++callbacks; };
  const SweepOutcome out = run_sweep(job);
  EXPECT_TRUE(out.errors.empty()) << out.errors.front();
  EXPECT_FALSE(out.stopped);
  ASSERT_EQ(out.records.size(), points.size());
  EXPECT_EQ(callbacks, points.size());
  std::set<int> gpus;
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(out.records[i].point_index, int64_t(i));
    EXPECT_EQ(out.records[i].name(), points[i].name());
    EXPECT_EQ(out.records[i].status, Status::Ok) << out.records[i].name() << ": " << out.records[i].reason;
    gpus.insert(out.records[i].device_index);
    // Every timed repetition is kept (time.samples_s), and the statistics are theirs.
    const auto& t = out.records[i].time;
    ASSERT_TRUE(t.has_value()) << out.records[i].name();
    ASSERT_EQ(t->samples_s.size(), size_t(job.options.reps)) << out.records[i].name();
    EXPECT_EQ(*std::min_element(t->samples_s.begin(), t->samples_s.end()), t->min_s);
    EXPECT_EQ(*std::max_element(t->samples_s.begin(), t->samples_s.end()), t->max_s);
  }
  for (int d : gpus) EXPECT_LT(d, int(job.devices.size()));
}

TEST_F(SweepRunnerGpu, EachWorkerSaysWhereItsStartWent) {
  const auto points = small_sweep();
  SweepJob job = job_for(points);
  std::vector<std::string> starts;
  job.on_worker_ready = [&](const DeviceInfo&, const std::string&, const std::string& start) { starts.push_back(start); };
  const SweepOutcome out = run_sweep(job);
  ASSERT_TRUE(out.errors.empty()) << out.errors.front();
  ASSERT_EQ(starts.size(), job.devices.size());
  // The steps in order, each with its seconds; each of the first group's methods warmed up, or
  // left for later while the sweep's own thread was making its first start (first_starts.h):
  // `standard`, which calls cuBLAS, always; flash2 by every worker whose first group holds it.
  std::map<std::string, int> warmed;
  for (const auto& s : starts) {
    EXPECT_EQ(s.find("context "), 0u) << s;
    EXPECT_NE(s.find("L2 flusher "), std::string::npos) << s;
    EXPECT_NE(s.find("counters "), std::string::npos) << s;
    for (const std::string m : {"standard", "flash2"}) {
      const bool here = s.find("warm-up of " + m + "/fwd ") != std::string::npos;
      const bool later = s.find("warm-up of " + m + " left for later") != std::string::npos;
      EXPECT_NE(here, later) << s;
      warmed[m] += here;
    }
    EXPECT_EQ(s.find("warm-up of standard/fwdbwd"), std::string::npos) << s;  // no backward point in this sweep
  }
  EXPECT_EQ(warmed["standard"], 0);
  EXPECT_EQ(warmed["flash2"], int(starts.size()));
}

// cuBLAS's start as the sweep's thread makes it (start_cublas): no device memory kept (its handle
// and operands are freed), the thread's device as it was, and a `standard` point after it runs and
// passes its check.
TEST_F(SweepRunnerGpu, CublasStartKeepsNothingOnTheGpu) {
  FLASHIO_CUDA_CHECK(cudaSetDevice(gpu()->index));
  FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
  size_t free_before = 0, free_after = 0, total = 0;
  FLASHIO_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  start_cublas(gpu()->index);
  FLASHIO_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  EXPECT_EQ(free_after, free_before);
  int device = -1;
  FLASHIO_CUDA_CHECK(cudaGetDevice(&device));
  EXPECT_EQ(device, gpu()->index);
  const auto points = small_sweep();
  RunOptions opt;
  opt.reps = 2;
  opt.warmup = 1;
  Runner runner(*gpu(), opt, {points[0]});
  const Record r = runner.run(points[0]);
  ASSERT_EQ(r.status, Status::Ok) << r.reason;
}

TEST_F(SweepRunnerGpu, AStopRequestEndsTheSweepAfterThePointsInFlight) {
  const auto points = small_sweep();
  SweepJob job = job_for(points);
  std::atomic<int> stop{0};
  job.stop = &stop;
  job.on_record = [&](const Record&) { stop.store(2); };  // as the SIGINT handler does
  const SweepOutcome out = run_sweep(job);
  EXPECT_TRUE(out.stopped);
  EXPECT_GE(out.records.size(), 1u);
  EXPECT_LE(out.records.size(), job.devices.size());  // each worker finishes at most its current point
}

TEST_F(SweepRunnerGpu, ACallersTimerTimesTheCheckedLaunches) {
  RunOptions opt;
  opt.reps = 2;
  Runner runner(*gpu(), opt);
  const Point pt = small_sweep()[1];  // flash2, N = 17
  int calls = 0;
  const Record r = runner.run(pt, [&](const std::function<void()>& launch, cudaStream_t, const L2Flusher* flusher) {
    ++calls;
    EXPECT_NE(flusher, nullptr);
    launch();
    TimeStats t;
    t.median_s = 1.0;
    t.reps = 1;
    return t;
  });
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(r.status, Status::Ok) << r.reason;
  EXPECT_EQ(r.time->median_s, 1.0);  // the caller's timing is the record's
}

// A runner whose first group holds a method the sweep's thread is starting (first_starts.h) leaves
// that method's warm-up for later, runs its other points without waiting, and before the
// method's first point waits for that start, then runs it as usual.
TEST_F(SweepRunnerGpu, AMethodTheSweepIsStartingWaitsUntilItsFirstPoint) {
  const auto points = small_sweep();  // points 0, 1: standard, flash2 at N = 17
  const std::vector<Point> first = {points[0], points[1]};
  const auto starts = std::make_shared<FirstStarts>();
  starts->begin("standard", gpu()->index + 1);  // as the sweep's cuBLAS thread does, on another GPU
  RunOptions opt;
  opt.reps = 2;
  opt.warmup = 1;
  Runner runner(*gpu(), opt, first, nullptr, starts);
  EXPECT_EQ(runner.deferred_methods(), std::set<std::string>{"standard"});
  const Record other = runner.run(points[1]);  // flash2: no wait
  ASSERT_EQ(other.status, Status::Ok) << other.reason;
  std::atomic<bool> finished{false};
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    finished = true;
    starts->finish("standard");
  });
  const Record r = runner.run(points[0]);  // standard: waits for the start above
  EXPECT_TRUE(finished);
  starter.join();
  ASSERT_EQ(r.status, Status::Ok) << r.reason;
  EXPECT_TRUE(runner.deferred_methods().empty());
}

TEST(SweepRunnerNoGpu, AWorkerThatCannotStartIsReportedNotACrash) {
  if (gpu()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable here";
  const auto points = small_sweep();
  SweepJob job;
  job.points = &points;
  job.todo = {0, 1, 2};
  DeviceInfo fake;
  fake.name = "no such GPU";
  job.devices = {fake};
  const SweepOutcome out = run_sweep(job);
  EXPECT_TRUE(out.records.empty());
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].rfind("GPU 0: ", 0), 0u) << out.errors[0];
  EXPECT_FALSE(out.stopped);
}
