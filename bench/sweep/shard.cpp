#include "bench/sweep/shard.h"

#include <fmt/format.h>

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
  auto key = [&](size_t i) { return fmt::format("{}/seed:{}", points[i].problem.name(), points[i].problem.seed); };
  for (size_t i = 0; i < points.size();) {
    size_t j = i + 1;
    const std::string k = key(i);
    while (j < points.size() && key(j) == k) ++j;
    groups.push_back({i, j});
    i = j;
  }
  return groups;
}

std::vector<size_t> shard_indices(const std::vector<Point>& points, Shard shard) {
  std::vector<size_t> out;
  const auto groups = problem_groups(points);
  for (size_t g = 0; g < groups.size(); ++g)
    if (int(g % size_t(shard.count)) == shard.index)
      for (size_t i = groups[g].first; i < groups[g].second; ++i) out.push_back(i);
  return out;
}

}  // namespace flashio
