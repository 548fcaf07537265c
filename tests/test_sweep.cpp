#include <gtest/gtest.h>

#include "bench/sweep/sweep.h"

using namespace flashio;

TEST(Sweep, DefaultSweepIsFlashAttention2Setting) {
  const auto points = expand(default_sweep());
  ASSERT_EQ(points.size(), 4u * 2u * 2u);  // N × d × methods
  for (const auto& p : points) {
    EXPECT_EQ(p.problem.batch * p.problem.seqlen_q, 16384);
    EXPECT_EQ(p.problem.heads * p.problem.head_dim, 2048);
  }
}

TEST(Sweep, PointsOfOneProblemAreAdjacent) {
  SweepSpec s;
  s.methods = {"standard", "flash2"};
  s.seqlen = {128, 256};
  s.head_dim = {64};
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].problem.name(), points[1].problem.name());
  EXPECT_EQ(points[2].problem.name(), points[3].problem.name());
  EXPECT_NE(points[0].problem.name(), points[2].problem.name());
}

// A group's forward points run first (they need only the forward part of the host work), each
// kind in sweep order: issue 22's group standard/fwd, standard/fwdbwd, flash2/fwd, flash2/fwdbwd
// runs standard/fwd, flash2/fwd, standard/fwdbwd, flash2/fwdbwd.
TEST(Sweep, AGroupRunsItsForwardPointsFirst) {
  SweepSpec s;
  s.methods = {"standard", "flash2"};
  s.passes = {Pass::Fwd, Pass::FwdBwd};
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(run_order(points), (std::vector<size_t>{0, 2, 1, 3}));
  s.passes = {Pass::Bwd, Pass::Fwd};
  EXPECT_EQ(run_order(expand(s)), (std::vector<size_t>{1, 3, 0, 2}));
  s.passes = {Pass::FwdBwd};
  EXPECT_EQ(run_order(expand(s)), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(run_order({}).empty());
}

TEST(Sweep, TheProblemKeyIgnoresDeterministicOnly) {
  Problem p;
  Problem det = p;
  det.deterministic = true;
  EXPECT_EQ(problem_key(p), problem_key(det));
  Problem seeded = p;
  seeded.seed = p.seed + 1;
  EXPECT_NE(problem_key(p), problem_key(seeded));
  Problem causal = p;
  causal.causal = true;
  EXPECT_NE(problem_key(p), problem_key(causal));
}

TEST(Sweep, CartesianProductOfAxes) {
  SweepSpec s;
  s.methods = {"flash2"};
  s.passes = {Pass::Fwd};
  s.batch = {1, 2, 3};
  s.seqlen = {17, 1013};
  s.causal = {false, true};
  s.dtypes = {DType::F16, DType::BF16};
  EXPECT_EQ(expand(s).size(), 3u * 2u * 2u * 2u);
}

TEST(Sweep, DeterministicAxisAddsDetPointsNextToTheirProblem) {
  SweepSpec s;
  s.methods = {"flash2", "standard"};
  s.passes = {Pass::Bwd};
  s.seqlen = {17, 1013};
  s.deterministic = {false, true};
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 2u * 2u * 2u);
  EXPECT_EQ(points[0].name(), "flash2/bwd/b:1/h:16/n:17/d:64/fp16");
  EXPECT_EQ(points[2].name(), "flash2/bwd/b:1/h:16/n:17/d:64/fp16/det");  // same inputs: adjacent
  EXPECT_TRUE(points[3].problem.deterministic);
  EXPECT_FALSE(points[4].problem.deterministic);
  s.deterministic = {};
  EXPECT_THROW(expand(s), std::invalid_argument);
}

TEST(Problem, DeterministicIsRecordedOnlyWhenSetAndRoundTrips) {
  Problem p;
  p.seqlen_q = 100;
  EXPECT_FALSE(to_json(p).contains("deterministic"));
  p.deterministic = true;
  p.dropout = 0.1;
  EXPECT_EQ(p.name(), "b:1/h:1/n:100/d:64/fp16/drop:0.1/det");
  const nlohmann::json j = to_json(p);
  EXPECT_EQ(j.at("deterministic"), true);
  EXPECT_TRUE(problem_from_json(j).deterministic);
  EXPECT_EQ(problem_from_json(j).name(), p.name());
}

TEST(Sweep, ImpossibleShapesAreRejected) {
  SweepSpec s;
  s.head_dim = {0};
  EXPECT_THROW(expand(s), std::invalid_argument);
  s = SweepSpec{};
  s.heads = {6};
  s.kv_heads = {4};
  EXPECT_THROW(expand(s), std::invalid_argument);
  s = SweepSpec{};
  s.tokens = 1000;
  s.seqlen = {512};
  EXPECT_THROW(expand(s), std::invalid_argument);
  s = SweepSpec{};
  s.dropout = {1.0};
  EXPECT_THROW(expand(s), std::invalid_argument);
  s = SweepSpec{};
  s.seqlen = {};
  EXPECT_THROW(expand(s), std::invalid_argument);
}

TEST(Problem, FlopsFollowTheFlashAttention2Convention) {
  Problem p;
  p.batch = 2; p.heads = 3; p.seqlen_q = 100; p.head_dim = 64;
  const double fwd = 4.0 * 2 * 3 * 100 * 100 * 64;
  EXPECT_DOUBLE_EQ(flops(p, Pass::Fwd), fwd);
  EXPECT_DOUBLE_EQ(flops(p, Pass::Bwd), 2.5 * fwd);
  EXPECT_DOUBLE_EQ(flops(p, Pass::FwdBwd), 3.5 * fwd);
  p.causal = true;
  EXPECT_DOUBLE_EQ(flops(p, Pass::Fwd), fwd / 2);
}

TEST(Problem, RandomPaddingLengthsFollowThePaper) {
  Problem p;
  p.batch = 64; p.seqlen_q = 1000; p.padding = Padding::Random;
  const auto lens = key_lengths(p);
  ASSERT_EQ(lens.size(), 64u);
  int distinct_low = 0;
  for (int32_t l : lens) {
    EXPECT_GE(l, 980);
    EXPECT_LE(l, 1000);
    distinct_low += l < 1000;
  }
  EXPECT_GT(distinct_low, 32);  // really random, not all full length
  EXPECT_EQ(lens, key_lengths(p));  // deterministic in the seed
}
