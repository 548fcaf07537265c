#include "bench/sweep/shard.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/sweep/progress.h"

namespace flashio {

std::optional<Shard> parse_shard(const std::string& s, std::string* why) {
  const size_t slash = s.find('/');
  auto number = [](const std::string& t, int* out) {
    if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    *out = std::stoi(t);
    return true;
  };
  Shard sh;
  if (slash == std::string::npos || !number(s.substr(0, slash), &sh.index) || !number(s.substr(slash + 1), &sh.count)) {
    if (why) *why = fmt::format("'{}' is not i/n (e.g. 0/4: the first of four shards)", s);
    return std::nullopt;
  }
  if (sh.count < 1 || sh.index >= sh.count) {
    if (why) *why = fmt::format("'{}': need 0 <= i < n", s);
    return std::nullopt;
  }
  return sh;
}

std::vector<std::pair<size_t, size_t>> problem_groups(const std::vector<Point>& points) {
  std::vector<std::pair<size_t, size_t>> groups;
  auto key = [&](size_t i) { return problem_key(points[i].problem); };
  for (size_t i = 0; i < points.size();) {
    size_t j = i + 1;
    const std::string k = key(i);
    while (j < points.size() && key(j) == k) ++j;
    groups.push_back({i, j});
    i = j;
  }
  return groups;
}

std::vector<size_t> shard_indices(const std::vector<Point>& points, Shard shard, int reps, int warmup) {
  const auto groups = problem_groups(points);
  const std::vector<double> cost = estimate_sweep_seconds(points, reps, warmup, kShardHostCores);
  // Whole milliseconds, so that a last-bit difference between two builds cannot flip a choice.
  std::vector<int64_t> group_ms(groups.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    double c = 0;
    for (size_t i = groups[g].first; i < groups[g].second; ++i) c += cost[i];
    group_ms[g] = int64_t(std::llround(c * 1000.0));
  }
  std::vector<size_t> order(groups.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return group_ms[x] > group_ms[y]; });
  std::vector<int64_t> load(size_t(shard.count), 0);
  std::vector<char> mine(groups.size(), 0);
  for (size_t g : order) {
    const size_t least = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    load[least] += group_ms[g];
    mine[g] = int(least) == shard.index;
  }
  std::vector<size_t> out;
  for (size_t g = 0; g < groups.size(); ++g)
    if (mine[g])
      for (size_t i = groups[g].first; i < groups[g].second; ++i) out.push_back(i);
  return out;
}

}  // namespace flashio
