// The several-GPU sweep runner on the GPUs present: every point once, in sweep order, tagged
// with the GPU that ran it; a stop request ends the sweep after the points in flight; a
// Google Benchmark-style timer sees the launches of a checked point. Skips without a GPU.
#include <algorithm>
#include <atomic>
#include <set>

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
  EXPECT_TRUE(out.errors.empty());
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
  ASSERT_TRUE(out.errors.empty());
  ASSERT_EQ(starts.size(), job.devices.size());
  for (const auto& s : starts) {  // the steps in order, each with its seconds; the first group's methods warmed
    EXPECT_EQ(s.find("context "), 0u) << s;
    EXPECT_NE(s.find("L2 flusher "), std::string::npos) << s;
    EXPECT_NE(s.find("counters "), std::string::npos) << s;
    EXPECT_NE(s.find("warm-up of standard/fwd "), std::string::npos) << s;
    EXPECT_NE(s.find("warm-up of flash2/fwd "), std::string::npos) << s;
    EXPECT_EQ(s.find("warm-up of standard/fwdbwd"), std::string::npos) << s;  // no backward point in this sweep
  }
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
