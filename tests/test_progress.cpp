// Progress lines and the time estimate behind --dry-run and the ETA.
#include <gtest/gtest.h>

#include "bench/core/record.h"
#include "bench/sweep/progress.h"
#include "bench/sweep/sweep_file.h"

using namespace flashio;

TEST(Progress, LineShowsCountNameElapsedAndEta) {
  EXPECT_EQ(Progress::line(3, 40, "flash2/fwd/b:1/h:16/n:1024/d:64/fp16", "ok 1.234 ms", 12.4, 160),
            "[3/40] 7% flash2/fwd/b:1/h:16/n:1024/d:64/fp16 ok 1.234 ms | elapsed 12s, eta 2m40s");
  EXPECT_EQ(Progress::line(0, 0, "x", "", 0, 0), "[0/0] 100% x | elapsed 0s, eta 0s");
}

TEST(Progress, Durations) {
  EXPECT_EQ(format_duration(0.4), "0s");
  EXPECT_EQ(format_duration(59), "59s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7620), "2h07m");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(Progress, PhasesLineAccountsForTheWholePoint) {
  EXPECT_EQ(format_phases(PhaseTimes{0.1, 0.5, 0.01, 0.05, 0.4, 0.12, 1.25}),
            "total 1.250 s: inputs 0.100, reference 0.500, plan 0.010, check 0.050, timed 0.400, counters 0.120, "
            "other 0.070");
  PhaseTimes in_sweep{0.1, 0.5, 0.01, 0.05, 0.4, 0.12, 1.25};
  in_sweep.started_s = 2.5;  // a sweep's point: when it began
  EXPECT_EQ(format_phases(in_sweep),
            "at 2.500 s, total 1.250 s: inputs 0.100, reference 0.500, plan 0.010, check 0.050, timed 0.400, "
            "counters 0.120, other 0.070");
}

TEST(Progress, PlainLinesWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Progress::mode_for(false, f), Progress::Mode::Lines);
  EXPECT_EQ(Progress::mode_for(true, f), Progress::Mode::Quiet);
  Progress p(Progress::Mode::Lines, f, {1.0, 3.0});
  Record r;
  r.method = "flash2";
  r.status = Status::Skipped;
  r.reason = "flash2 supports head dims 32, 64, 96, 128, 256 only (got 80)";
  p.started(0, r.name());
  p.finished(0, r);
  p.close();
  std::rewind(f);
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const std::string out(buf, n);
  EXPECT_EQ(out.rfind("[1/2] 50% flash2/fwd/", 0), 0u) << out;
  EXPECT_NE(out.find("skipped: flash2 supports head dims"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << "no terminal control characters in a log";
}

TEST(Progress, QuietPrintsNothing) {
  std::FILE* f = std::tmpfile();
  Progress p(Progress::Mode::Quiet, f, {1.0});
  Record r;
  p.started(0, "x");
  p.finished(0, r);
  p.close();
  EXPECT_EQ(std::ftell(f), 0L);
  std::fclose(f);
}

TEST(Progress, EstimateGrowsWithWork) {
  SweepSpec s;
  s.methods = {"flash2"};
  s.batch = {16};
  s.seqlen = {1024, 16384};
  const auto points = expand(s);
  const double small = estimate_seconds(points[0], 30, 5), large = estimate_seconds(points[1], 30, 5);
  EXPECT_GT(small, 0.0);
  EXPECT_GT(large, small);
  // Each extra repetition costs one launch: the FLOPs at flash2's assumed 350 TFLOP/s forward.
  const double per_rep = (estimate_seconds(points[1], 100, 5) - large) / 70;
  EXPECT_NEAR(per_rep, flops(points[1].problem, Pass::Fwd) / 350e12, 1e-6);
}

// The sweep estimate against measured sweeps: issue 22's sweep and fa2-figure4 on one H200 of a
// 32-core host (results/crosscheck/issue22-scaling, records in sweep order), host work where the
// runner waits for it (a group's, less the group before's GPU time). The model is rough; it must
// land within 1.5x of the measured total and put the host work on the first point of a problem.
TEST(Progress, SweepEstimateTracksAMeasuredSweep) {
  // In sample (the rates in progress.cpp are these files' medians): a check of the arithmetic.
  for (const char* file : {"sweep-0-1.json", "figure4-0-1.json"}) {
    const ResultFile f =
        read_result_file(std::string(FLASHIO_SOURCE_DIR) + "/results/crosscheck/issue22-scaling/" + file);
    std::vector<Point> points;
    double measured = 0;
    for (const Record& r : f.records) {
      points.push_back({r.method, r.pass, r.problem});
      ASSERT_TRUE(r.phases.has_value());
      measured += r.phases->total_s;
    }
    const auto est = estimate_sweep_seconds(points, f.records.front().time->reps, f.records.front().time->warmup, 32);
    ASSERT_EQ(est.size(), points.size());
    double total = 0;
    for (double e : est) total += e;
    EXPECT_GT(total, measured / 1.5) << file << ": measured " << measured;
    EXPECT_LT(total, measured * 1.5) << file << ": measured " << measured;
  }
  const ResultFile f =
      read_result_file(std::string(FLASHIO_SOURCE_DIR) + "/results/crosscheck/issue22-scaling/sweep-0-1.json");
  std::vector<Point> points;
  for (const Record& r : f.records) points.push_back({r.method, r.pass, r.problem});
  const auto est = estimate_sweep_seconds(points, 5, 2, 32, false);  // the reference on the host
  // Points 0-3 share a problem: the first waits for the forward part of its host half (inputs,
  // forward reference); the gradients' part is made while the forward points run, which covers it
  // at N = 1024 (the others wait for nothing).
  ASSERT_EQ(points[0].problem.name(), points[3].problem.name());
  EXPECT_GT(est[0], estimate_seconds(points[0], 5, 2));
  EXPECT_NEAR(est[1], estimate_seconds(points[1], 5, 2), 1e-12);
  EXPECT_NEAR(est[2], estimate_seconds(points[2], 5, 2), 1e-12);
  // Fewer host cores, longer host work.
  double on_32 = 0, on_two = 0;
  for (double e : est) on_32 += e;
  for (double e : estimate_sweep_seconds(points, 5, 2, 2, false)) on_two += e;
  EXPECT_GT(on_two, on_32);
}

// The reference made on the GPU (run --reference gpu): the host makes only the inputs, so the
// host's cores no longer matter; the group's first point carries the forward reference's GPU time,
// its first backward point the gradients', and a block-sparse problem (the host's reference) waits
// for the host as before.
TEST(Progress, TheGpusReferenceIsGpuTimeOfTheFirstPoints) {
  SweepSpec s;
  s.methods = {"flash2"};
  s.passes = {Pass::Fwd, Pass::FwdBwd};
  s.batch = {2};
  s.heads = {32};
  s.seqlen = {8192};
  const auto points = expand(s);  // fwd, fwdbwd
  const double solo_fwd = estimate_seconds(points[0], 5, 2), solo_bwd = estimate_seconds(points[1], 5, 2);
  const auto one_core = estimate_sweep_seconds(points, 5, 2, 1, true), many = estimate_sweep_seconds(points, 5, 2, 64, true);
  EXPECT_EQ(one_core, many);
  const auto host = estimate_sweep_seconds(points, 5, 2, 1, false);
  const double inputs = 0.01;  // kInputsS
  const double forward_gpu = one_core[0] - solo_fwd - inputs, gradients_gpu = one_core[1] - solo_bwd;
  EXPECT_GT(forward_gpu, 0.0);
  EXPECT_GT(gradients_gpu, forward_gpu);  // dQ's passes over the keys: three forwards' worth here
  EXPECT_LT(one_core[0] + one_core[1], host[0] + host[1]);  // the host's one core was slower
  Point sparse = points[0];
  sparse.problem.pattern = "local";
  EXPECT_EQ(estimate_sweep_seconds({sparse}, 5, 2, 1, true), estimate_sweep_seconds({sparse}, 5, 2, 1, false));
}

// The host half in two parts (bench/measure/host_side.h): a group runs its forward points first,
// which wait for the forward part only; its first other point waits for what of the gradients'
// part (dQ of the same rows: three times the forward's multiply-adds here, no dK/dV within the
// budget) the forward points' GPU time did not cover.
TEST(Progress, ForwardPointsDoNotWaitForTheGradients) {
  SweepSpec s;
  s.methods = {"standard", "flash2"};
  s.passes = {Pass::Fwd, Pass::FwdBwd};
  s.batch = {2};
  s.heads = {32};
  s.seqlen = {8192};
  const auto points = expand(s);  // standard fwd, standard fwdbwd, flash2 fwd, flash2 fwdbwd
  std::vector<double> solo;
  for (const auto& pt : points) solo.push_back(estimate_seconds(pt, 5, 2));
  const auto est = estimate_sweep_seconds(points, 5, 2, 1, false);  // the host's reference on one core: long
  const double forward_wait = est[0] - solo[0], gradients_wait = est[1] - solo[1];
  EXPECT_GT(forward_wait, 0.5);
  EXPECT_NEAR(est[2], solo[2], 1e-12);  // the second forward point: nothing left to wait for
  EXPECT_NEAR(est[3], solo[3], 1e-12);
  const double inputs = 0.01;  // kInputsS
  EXPECT_NEAR(gradients_wait + solo[0] + solo[2], 3 * (forward_wait - inputs), 1e-9);
  // With every point a backward pass, the first waits for both parts.
  s.passes = {Pass::FwdBwd};
  const auto backward = expand(s);
  const auto est_backward = estimate_sweep_seconds(backward, 5, 2, 1, false);
  EXPECT_NEAR(est_backward[0] - estimate_seconds(backward[0], 5, 2), inputs + 4 * (forward_wait - inputs), 1e-9);
}
