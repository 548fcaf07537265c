// Sharding: a deterministic slice of a sweep, so that n jobs (Slurm array tasks, machines)
// together run every point exactly once. The unit is a problem group — the consecutive
// points that share a problem (methods × passes) — so each shard generates a problem's
// inputs and reference once. Groups are dealt by estimated cost (estimate_sweep_seconds):
// the longest first, each to the shard with the least estimated work so far, so the shards
// finish together instead of one holding the long sequence lengths. The estimate assumes a
// fixed host (kShardHostCores) and whole milliseconds, so every machine computes the same split.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "bench/sweep/sweep.h"

namespace flashio {

struct Shard {
  int index = 0;  // 0 … count − 1
  int count = 1;
};

// Parses "i/n" (0 <= i < n); nullopt with *why set on anything else.
std::optional<Shard> parse_shard(const std::string& s, std::string* why);

// Index ranges [begin, end) of consecutive points that share a problem's inputs (problem_key).
std::vector<std::pair<size_t, size_t>> problem_groups(const std::vector<Point>& points);

// The host the shard split assumes, whatever machine computes it.
inline constexpr int kShardHostCores = 16;

// The indices into `points` of the shard's points, in sweep order; `reps` and `warmup` as the
// run will use them (they weigh the points).
std::vector<size_t> shard_indices(const std::vector<Point>& points, Shard shard, int reps, int warmup);

}  // namespace flashio
