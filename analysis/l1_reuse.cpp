#include "analysis/l1_reuse.h"

#include <cmath>
#include <cstdlib>
#include <iterator>

#include "analysis/dram_model.h"
#include "bench/core/smem.h"

namespace flashio::analysis {

namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kGh100L1SmemBytes = 256 * kKiB;  // an SM's unified L1 / shared memory
constexpr int kGh100SmemCarveouts[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};  // KiB

// The L1 probe's curves (scripts/l1_probe.sh on an H200, 4 passes): the resident blocks' stream
// over the L1 beside the carve-out, and the share of a slice's re-reads served (probe hits / 0.75).
struct KeptPoint {
  double stream_over_l1, kept;
};
struct KeptCurve {
  int64_t l1_bytes;
  KeptPoint points[8];
};
// 60 KiB: two blocks of 92,160 B, 24–64 KiB each (results/crosscheck/issue19-flash1-l1/
// nvidia-h200-l1-probe.txt); 92 KiB: one block of 139,264 B, 80–224 KiB (-one-block.txt).
constexpr KeptCurve kL1KeptCurves[] = {
    {60 * kKiB,
     {{48.0 / 60, 1.0},
      {56.0 / 60, 0.661 / 0.75},
      {64.0 / 60, 0.468 / 0.75},
      {80.0 / 60, 0.189 / 0.75},
      {96.0 / 60, 0.047 / 0.75},
      {128.0 / 60, 0.005 / 0.75},
      {192.0 / 60, 0.0},
      {256.0 / 60, 0.0}}},
    {92 * kKiB,
     {{80.0 / 92, 1.0},
      {96.0 / 92, 0.527 / 0.75},
      {112.0 / 92, 0.216 / 0.75},
      {128.0 / 92, 0.023 / 0.75},
      {144.0 / 92, 0.056 / 0.75},
      {160.0 / 92, 0.015 / 0.75},
      {192.0 / 92, 0.003 / 0.75},
      {224.0 / 92, 0.0}}},
};

double kept_share(double x, const KeptCurve& c) {
  if (x <= c.points[0].stream_over_l1) return 1.0;
  for (auto p = std::begin(c.points) + 1; p != std::end(c.points); ++p)
    if (x <= p->stream_over_l1) {
      const KeptPoint& a = *(p - 1);
      return a.kept + (p->kept - a.kept) * (x - a.stream_over_l1) / (p->stream_over_l1 - a.stream_over_l1);
    }
  return 0.0;
}

}  // namespace

L1Reuse l1_reuse_of(const std::string& device_name, int64_t smem_per_block, int blocks_per_sm) {
  if (!is_gh100(device_name) || blocks_per_sm <= 0 || smem_per_block < 0) return {};
  const int64_t need = blocks_per_sm * (smem_per_block + kSmemReservedPerBlock);
  for (int carveout : kGh100SmemCarveouts)
    if (carveout * kKiB >= need) return {kGh100L1SmemBytes - carveout * kKiB, blocks_per_sm};
  return {};
}

int64_t l1_missed_sectors(int64_t sectors, int64_t window_bytes, const L1Reuse& l1) {
  if (l1.l1_bytes <= 0 || sectors <= 0) return sectors;
  const KeptCurve* nearest = &kL1KeptCurves[0];
  for (const KeptCurve& c : kL1KeptCurves)
    if (std::llabs(c.l1_bytes - l1.l1_bytes) < std::llabs(nearest->l1_bytes - l1.l1_bytes)) nearest = &c;
  const double x = double(l1.blocks_per_sm) * double(window_bytes) / double(l1.l1_bytes);
  return sectors - std::llround(kept_share(x, *nearest) * double(sectors));
}

}  // namespace flashio::analysis
