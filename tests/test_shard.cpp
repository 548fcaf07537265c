// Shards: n slices of a sweep cover it exactly once, deterministically, keeping the points
// of one problem together.
#include <map>

#include <gtest/gtest.h>

#include "bench/sweep/presets.h"
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
        const auto idx = shard_indices(points, {i, n});
        EXPECT_TRUE(std::is_sorted(idx.begin(), idx.end()));
        for (size_t k : idx) ++seen[k];
        EXPECT_EQ(idx, shard_indices(points, {i, n})) << "not deterministic";
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
    for (size_t k : shard_indices(points, {i, 4})) {
      auto [it, fresh] = shard_of.emplace(points[k].problem.name(), i);
      EXPECT_EQ(it->second, i) << points[k].problem.name() << " split between shards";
    }
}

TEST(Shard, RoundRobinBalancesGroups) {
  SweepSpec s;
  s.methods = {"standard", "flash2"};
  s.seqlen = {128, 256, 512, 1024, 2048, 4096, 8192};
  const auto points = expand(s);
  ASSERT_EQ(problem_groups(points).size(), 7u);
  EXPECT_EQ(shard_indices(points, {0, 3}), (std::vector<size_t>{0, 1, 6, 7, 12, 13}));  // N 128, 1024, 8192
  EXPECT_EQ(shard_indices(points, {2, 3}), (std::vector<size_t>{4, 5, 10, 11}));        // N 512, 4096
}
