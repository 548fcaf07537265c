// The flash3 method's description on the CPU: its tiles from the one table, and the points it
// refuses, each with its reason (no GPU needed: a DeviceInfo stands in for one).
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "bench/core/method.h"
#include "kernels/flash3/flash3_method.h"
#include "kernels/flash3/flash3_dq_layout.h"
#include "kernels/flash3/flash3_params.h"
#include "tests/device_test_util.h"

using namespace flashio;

namespace {

DeviceInfo hopper() { return testing_util::test_h100(); }

Problem small(int64_t d) {
  Problem p;
  p.batch = 1;
  p.heads = 2;
  p.seqlen_q = 300;
  p.head_dim = d;
  return p;
}

}  // namespace

TEST(Flash3Method, TilesComeFromTheOneTableAndFitHopper) {
  int total = 0;
#define FLASH3_EACH_D(D)                                                                         \
  {                                                                                              \
    kernels::KernelTile t[8];                                                                    \
    const int n = kernels::flash3_fwd_tiles(D, t, 8);                                            \
    ASSERT_EQ(n, int(sizeof(kernels::Flash3FwdConfigs<D>::list) / sizeof(TileShape))) << D;      \
    for (int i = 0; i < n; ++i) {                                                                \
      EXPECT_EQ(t[i].block_r % 64, 0) << D;                                                      \
      EXPECT_EQ(t[i].warps, 4 * (t[i].block_r / 64 + 1)) << D << ": consumers plus the producer"; \
      EXPECT_TRUE(t[i].wgmma);                                                                   \
      EXPECT_LE(t[i].smem_bytes, hopper().smem_per_block_optin) << D;                            \
    }                                                                                            \
    total += n;                                                                                  \
  }
  FLASH3_HEAD_DIMS(FLASH3_EACH_D)
#undef FLASH3_EACH_D
  EXPECT_GT(total, 0);
  kernels::KernelTile none[1];
  EXPECT_EQ(kernels::flash3_fwd_tiles(96, none, 1), 0);
}

TEST(Flash3Method, RefusesWhatItDoesNotHaveInWords) {
  const Method* m = builtin_registry().find("flash3");
  ASSERT_NE(m, nullptr) << "flash3 is not registered";
  const DeviceInfo dev = hopper();
  // d 256 has no backward (dK, dV of 64 keys would not fit a consumer's registers).
  for (Pass pass : {Pass::Bwd, Pass::FwdBwd}) {
    const Support bwd = m->supports(small(256), pass, dev);
    EXPECT_FALSE(bwd.ok);
    EXPECT_NE(bwd.reason.find("no backward for d=256 (d 64, 128 only"), std::string::npos) << bwd.reason;
  }
  Problem det = small(128);
  det.deterministic = true;
  const Support d = m->supports(det, Pass::Bwd, dev);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.reason.find("deterministic"), std::string::npos) << d.reason;
  EXPECT_TRUE(m->supports(det, Pass::Fwd, dev).ok || !kernels::flash3_compiled());
  Problem drop = small(128);
  drop.dropout = 0.1;
  EXPECT_NE(m->supports(drop, Pass::Fwd, dev).reason.find("dropout"), std::string::npos);
  const Support d96 = m->supports(small(96), Pass::Fwd, dev);
  EXPECT_FALSE(d96.ok);
  EXPECT_NE(d96.reason.find("64, 128, 256"), std::string::npos) << d96.reason;
  DeviceInfo ampere = dev;
  ampere.cc_major = 8;
  const Support old = m->supports(small(128), Pass::Fwd, ampere);
  EXPECT_FALSE(old.ok);
  if (kernels::flash3_compiled()) {
    EXPECT_NE(old.reason.find("9.0"), std::string::npos) << old.reason;
    EXPECT_TRUE(m->supports(small(128), Pass::Fwd, dev).ok) << m->supports(small(128), Pass::Fwd, dev).reason;
    for (int64_t dim : {64, 128})
      for (Pass pass : {Pass::Bwd, Pass::FwdBwd})
        EXPECT_TRUE(m->supports(small(dim), pass, dev).ok) << dim << ": " << m->supports(small(dim), pass, dev).reason;
    Problem forced = small(64);
    forced.block_r = 64;
    const Support f = m->supports(forced, Pass::Fwd, dev);
    EXPECT_FALSE(f.ok);
    EXPECT_NE(f.reason.find("compiled: 192x128, 128x128"), std::string::npos) << f.reason;
  } else {
    EXPECT_NE(old.reason.find("no flash3 kernels"), std::string::npos) << old.reason;
  }
}

// The backward's one tile (kFlash3BwdTile) for each head dim of FLASH3_BWD_HEAD_DIMS: three
// warpgroups (producer + two consumers of 64 keys), its shared memory as the kernel lays it out,
// within Hopper's; none for d 256 or an uncompiled head dim.
TEST(Flash3Method, BackwardTileComesFromTheOneTableAndFitsHopper) {
  int total = 0;
#define FLASH3_EACH_BWD_D(D)                                                                             \
  {                                                                                                      \
    kernels::KernelTile t{};                                                                             \
    ASSERT_TRUE(kernels::flash3_bwd_tile(D, &t)) << D;                                                   \
    EXPECT_EQ(t.block_r, 64) << D << ": dSᵀ is one 64-column panel";                                   \
    EXPECT_EQ(t.block_c, 128) << D << ": two consumer warpgroups of 64 keys";                          \
    EXPECT_EQ(t.warps, 12) << D << ": consumers plus the producer";                                    \
    EXPECT_TRUE(t.wgmma);                                                                                \
    EXPECT_EQ(t.smem_bytes, 2 * 128 * D * 2 + t.stages * 2 * 64 * D * 2 + 2 * 128 * 64 * 2 +             \
                                t.stages * 2 * 64 * 4 + 2 * 64 * D * 4 + 1024)                           \
        << D;                                                                                            \
    EXPECT_LE(t.smem_bytes, hopper().smem_per_block_optin) << D;                                         \
    ++total;                                                                                             \
  }
  FLASH3_BWD_HEAD_DIMS(FLASH3_EACH_BWD_D)
#undef FLASH3_EACH_BWD_D
  EXPECT_EQ(total, 2);
  kernels::KernelTile none{};
  EXPECT_FALSE(kernels::flash3_bwd_tile(256, &none));
  EXPECT_FALSE(kernels::flash3_bwd_tile(96, &none));
  // setmaxnreg: the three warpgroups' budgets within the 168 registers per thread of the launch.
  EXPECT_LE(kernels::kFlash3BwdProducerRegisters + 2 * kernels::kFlash3BwdConsumerRegisters, 3 * 168);
}

TEST(Flash3Method, AblationsAreRegisteredForTheirHeadDimOnly) {
  for (const char* name : {"flash3_no_pingpong", "flash3_no_overlap", "flash3_no_warpspec"}) {
    const Method* m = builtin_registry().find(name);
    ASSERT_NE(m, nullptr) << name << " is not registered";
    const MethodInfo i = m->info();
    ASSERT_FALSE(i.head_dims.empty()) << name;
    for (int d : i.head_dims) EXPECT_TRUE(kernels::flash3_has_ablations(d)) << name << " d " << d;
    const Support s = m->supports(small(64), Pass::Fwd, hopper());
    EXPECT_FALSE(s.ok) << name;
    EXPECT_NE(s.reason.find("head dims 128"), std::string::npos) << s.reason;
    const Support b = m->supports(small(128), Pass::Bwd, hopper());
    EXPECT_FALSE(b.ok) << name << ": the ablations are forward schedules";
    EXPECT_NE(b.reason.find("no bwd pass"), std::string::npos) << b.reason;
  }
}

// The forward tile a point gets follows its length and mask (each tile's `from`), the same
// pick `flashio predict` makes (IoModel.Flash3PredictsTheForwardTileOfTheLength); a forced tile
// is taken whatever the length.
TEST(Flash3Method, LargerTilesFromTheLengthsTheTableNames) {
  if (!kernels::flash3_compiled()) GTEST_SKIP() << "no flash3 kernels in this build";
  auto tile = [](int64_t d, int64_t n, bool causal, int64_t block_c = 0) {
    Problem p = small(d);
    p.seqlen_q = n;
    p.causal = causal;
    p.block_c = block_c;
    kernels::KernelTile t{};
    const Support s = flash3_choose_tile(p, hopper(), &t);
    return s.ok ? std::to_string(t.block_r) + "x" + std::to_string(t.block_c) : s.reason;
  };
  EXPECT_EQ(tile(64, 1024, false), "128x128");
  EXPECT_EQ(tile(64, 2048, false), "192x128");
  EXPECT_EQ(tile(64, 4096, true), "128x128");
  EXPECT_EQ(tile(64, 8192, true), "192x128");
  EXPECT_EQ(tile(128, 300, false), "128x128");
  EXPECT_EQ(tile(128, 2048, false), "128x176");
  EXPECT_EQ(tile(128, 300, false, 176), "128x176");
  EXPECT_EQ(tile(128, 16384, false, 128), "128x128");
  EXPECT_EQ(tile(256, 16384, false), "128x80");
  EXPECT_EQ(tile(256, 512, false), "128x64");
  EXPECT_EQ(tile(256, 1024, false), "128x80");
  EXPECT_EQ(tile(256, 1024, true), "128x64");
  EXPECT_EQ(tile(256, 1024, false, 80), "128x80");
}

// The backward's dQ accumulator order (flash3_dq_layout.h): where a consumer thread stores its
// accumulator element 4j + e — float ((j·4 + warp)·32 + lane)·4 + e of its warpgroup's part — is
// where flash3_dq_tile_offset says that element's row and column are, for every element of a
// tile, and every float of the tile is some element's (the conversion reads each dQ once).
TEST(Flash3Method, DqTileOffsetInvertsTheConsumersStores) {
  for (int d : {64, 128}) {
    const int columns = d / 2;  // a consumer warpgroup's part
    std::vector<int> seen(size_t(kernels::kFlash3DqTileRows * d), 0);
    for (int part = 0; part < 2; ++part)
      for (int warp = 0; warp < 4; ++warp)
        for (int lane = 0; lane < 32; ++lane)
          for (int j = 0; j < columns / 8; ++j)
            for (int e = 0; e < 4; ++e) {
              const int g = lane / 4, t = lane % 4;
              const int row = 16 * warp + g + (e >= 2 ? 8 : 0), col = part * columns + 8 * j + 2 * t + (e & 1);
              const int stored = part * kernels::kFlash3DqTileRows * columns + ((j * 4 + warp) * 32 + lane) * 4 + e;
              ASSERT_EQ(kernels::flash3_dq_tile_offset(row, col, columns), stored)
                  << "d " << d << " row " << row << " column " << col;
              ++seen[size_t(stored)];
            }
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "d " << d << " float " << i;
  }
  EXPECT_EQ(kernels::flash3_dq_tiles(1), 1);
  EXPECT_EQ(kernels::flash3_dq_tiles(64), 1);
  EXPECT_EQ(kernels::flash3_dq_tiles(65), 2);
  EXPECT_EQ(kernels::flash3_dq_accum_floats(2, 3, 65, 128), 2 * 3 * 2 * 64 * 128);
}

// The backward's causal block order (flash3_configs.h): every block of the grid once, each
// group's planes tile-major (every plane's tile 0 before any plane's tile 1), groups in plane
// order, the last group the planes left; the group from the SMs and the key tiles.
TEST(Flash3Method, CausalBackwardDealsEachGroupsHeaviestTilesFirst) {
  EXPECT_EQ(kernels::flash3_bwd_plane_group(16, 132), 8);  // at most 8
  EXPECT_EQ(kernels::flash3_bwd_plane_group(32, 132), 8);
  EXPECT_EQ(kernels::flash3_bwd_plane_group(64, 132), 4);
  EXPECT_EQ(kernels::flash3_bwd_plane_group(128, 132), 2);
  EXPECT_EQ(kernels::flash3_bwd_plane_group(1024, 132), 1);
  for (auto [tiles, planes, group] : {std::tuple{5, 7, 3}, std::tuple{1, 4, 8}, std::tuple{32, 64, 8}}) {
    std::vector<int> seen(size_t(tiles * planes), 0);
    std::vector<int> last_tile(size_t(planes), -1);
    for (int linear = 0; linear < tiles * planes; ++linear) {
      const kernels::Flash3BwdBlock b = kernels::flash3_bwd_block(linear, tiles, planes, group);
      ASSERT_TRUE(b.tile >= 0 && b.tile < tiles && b.plane >= 0 && b.plane < planes) << linear;
      ++seen[size_t(b.plane * tiles + b.tile)];
      EXPECT_EQ(b.tile, last_tile[size_t(b.plane)] + 1) << "a plane's tiles in order, linear " << linear;
      last_tile[size_t(b.plane)] = b.tile;
      const int first = b.plane / group * group;  // the group: its planes' blocks are consecutive
      EXPECT_GE(linear, first * tiles);
      EXPECT_LT(linear, std::min(first + group, planes) * tiles);
    }
    for (int s : seen) EXPECT_EQ(s, 1);
  }
  // Within a group, tile-major: 3 planes of group 0, then their tile 1.
  EXPECT_EQ(kernels::flash3_bwd_block(3, 5, 7, 3).tile, 1);
  EXPECT_EQ(kernels::flash3_bwd_block(3, 5, 7, 3).plane, 0);
  EXPECT_EQ(kernels::flash3_bwd_block(31, 5, 7, 3).plane, 6);  // the last group: plane 6 alone
}

// The causal forward's work items (flash3_item, flash3_configs.h): the backward's grouping over Q
// tiles from 16 of them, one plane at a time below (every item short there: grouping measured
// slower); so at N 2048 (16 Q tiles of 128 rows) on 132 SMs the first 8 planes' longest tiles
// come first, and at N 1024 a plane's tiles stay consecutive.
TEST(Flash3Method, CausalForwardGroupsPlanesFromSixteenQTiles) {
  EXPECT_EQ(kernels::flash3_fwd_plane_group(4, 132, true), 1);
  EXPECT_EQ(kernels::flash3_fwd_plane_group(15, 132, true), 1);
  EXPECT_EQ(kernels::flash3_fwd_plane_group(16, 132, true), 8);
  EXPECT_EQ(kernels::flash3_fwd_plane_group(32, 132, true), 8);
  EXPECT_EQ(kernels::flash3_fwd_plane_group(64, 132, true), 4);
  EXPECT_EQ(kernels::flash3_fwd_plane_group(128, 132, true), 2);
  EXPECT_EQ(kernels::flash3_fwd_plane_group(16, 132, false), 1);  // no mask: one plane at a time
  const int g16 = kernels::flash3_fwd_plane_group(16, 132, true);
  for (int linear = 0; linear < 8; ++linear) {  // tile 0 (the longest) of planes 0..7
    EXPECT_EQ(kernels::flash3_bwd_block(linear, 16, 256, g16).tile, 0);
    EXPECT_EQ(kernels::flash3_bwd_block(linear, 16, 256, g16).plane, linear);
  }
  const int g8 = kernels::flash3_fwd_plane_group(8, 132, true);
  for (int linear = 0; linear < 8; ++linear) {  // plane 0's tiles, then plane 1's
    EXPECT_EQ(kernels::flash3_bwd_block(linear, 8, 256, g8).tile, linear);
    EXPECT_EQ(kernels::flash3_bwd_block(linear, 8, 256, g8).plane, 0);
  }
}
