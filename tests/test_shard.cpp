// Shards: n slices of a sweep cover it exactly once, deterministically, keeping the points
// of one problem together.
#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "bench/sweep/presets.h"
#include "bench/sweep/progress.h"
#include "bench/sweep/shard.h"

using namespace flashio;

TEST(Shard, ParsesIOverN) {
  std::string why;
  auto s = parse_shard("2/5", &why);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 5);
  for (const char* bad : {"5/5", "1/0", "-1/3", "a/3", "1", "1/", "/3", "1/3/4", "1 /3", ""}) {
    EXPECT_FALSE(parse_shard(bad, &why)) << bad;
    EXPECT_NE(why.find(bad), std::string::npos) << why;
  }
}

TEST(Shard, ShardsOfEveryPresetCoverItExactlyOnce) {
  for (const auto& preset : all_presets()) {
    const auto points = expand_all(preset.sweep().sweeps);
    for (int n : {1, 2, 3, 4, 7, 64}) {
      std::map<size_t, int> seen;
      for (int i = 0; i < n; ++i) {
        const auto idx = shard_indices(points, {i, n}, 5, 2);
        EXPECT_TRUE(std::is_sorted(idx.begin(), idx.end()));
        for (size_t k : idx) ++seen[k];
        EXPECT_EQ(idx, shard_indices(points, {i, n}, 5, 2)) << "not deterministic";
      }
      ASSERT_EQ(seen.size(), points.size()) << preset.name << " n=" << n;
      for (const auto& [k, count] : seen) EXPECT_EQ(count, 1) << preset.name << " point " << k;
    }
  }
}

TEST(Shard, PointsOfOneProblemStayInOneShard) {
  const auto points = expand_all(find_preset("fa1-tables")->sweep().sweeps);
  std::map<std::string, int> shard_of;
  for (int i = 0; i < 4; ++i)
    for (size_t k : shard_indices(points, {i, 4}, 5, 2)) {
      auto [it, fresh] = shard_of.emplace(points[k].problem.name(), i);
      EXPECT_EQ(it->second, i) << points[k].problem.name() << " split between shards";
    }
}

TEST(Shard, TheSplitBalancesTheEstimatedCost) {
  SweepSpec s;
  s.methods = {"standard", "flash2"};
  s.seqlen = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  s.passes = {Pass::FwdBwd};
  const auto points = expand(s);
  const auto cost = estimate_sweep_seconds(points, 30, 5, kShardHostCores);
  double total = 0, longest_group = 0;
  for (auto [b, e] : problem_groups(points)) {
    double c = 0;
    for (size_t i = b; i < e; ++i) c += cost[i];
    total += c;
    longest_group = std::max(longest_group, c);
  }
  for (int n : {2, 3, 4}) {
    double worst = 0;
    for (int i = 0; i < n; ++i) {
      double c = 0;
      for (size_t k : shard_indices(points, {i, n}, 30, 5)) c += cost[k];
      worst = std::max(worst, c);
    }
    // Greedy longest-first: no shard exceeds the mean by more than the longest group.
    EXPECT_LE(worst, total / n + longest_group) << n << " shards";
    EXPECT_LT(worst, 0.8 * total) << n << " shards: one shard holds most of the work";
  }
  // The longest problem (N 16384) and the next (N 8192) go to different shards of two.
  const auto first = shard_indices(points, {0, 2}, 30, 5);
  const bool has_16k = std::any_of(first.begin(), first.end(), [&](size_t k) { return points[k].problem.seqlen_q == 16384; });
  const bool has_8k = std::any_of(first.begin(), first.end(), [&](size_t k) { return points[k].problem.seqlen_q == 8192; });
  EXPECT_NE(has_16k, has_8k);
}
