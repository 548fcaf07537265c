// flash3 (kernels/flash3/) against the float64 reference on every row, through the runner a
// sweep uses (poisoned outputs, check before timing): odd lengths, every head dim and dtype,
// causal, key padding, GQA, Nq ≠ Nk both ways, and more work items than SMs (the persistent
// loop); the backward (d 64, 128: dQ on every row, dK and dV on every K/V head) likewise, and d
// 256's backward skipped in words. Skips without a Hopper GPU or without the flash3 kernels in
// this build.
#include <fmt/format.h>

#include "kernels/flash3/flash3_params.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

bool flash3_here() { return gpu() && gpu()->compute_capability() == 90 && kernels::flash3_compiled(); }

struct Case {
  int64_t n;
  int64_t d;
  DType dtype;
  bool causal;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("n{}_d{}_{}{}", c.n, c.d, to_string(c.dtype), c.causal ? "_causal" : "");
}

// The odd sizes (N = 1, 17, 1013, 4097) × the head dims given × fp16/bf16 × causal off/on.
std::vector<Case> cases(std::initializer_list<int64_t> head_dims) {
  std::vector<Case> out;
  for (int64_t n : {1, 17, 1013, 4097})
    for (int64_t d : head_dims)
      for (DType t : {DType::F16, DType::BF16})
        for (bool causal : {false, true}) out.push_back({n, d, t, causal});
  return out;
}

Problem problem_of(const Case& c) {
  Problem p;
  p.batch = c.n > 1000 ? 1 : 2;
  p.heads = 2;
  p.seqlen_q = c.n;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  return p;
}

class Flash3Test : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (!IsSkipped() && !flash3_here()) GTEST_SKIP() << "no flash3 kernels on this GPU / in this build";
  }
  static Record run_ok(const Problem& p, Pass pass = Pass::Fwd) {
    const Record r = expect_ok({"flash3", pass, p});
    if (r.status == Status::Ok) {
      EXPECT_TRUE(r.tiles.has_value());
      if (r.tiles) {
        EXPECT_EQ(r.tiles->mma, "wgmma");
        EXPECT_EQ(r.tiles->smem_layout, "swizzle128");
      }
      if (pass != Pass::Fwd) {  // the backward's own tile, for `flashio analyze`
        EXPECT_TRUE(r.tiles_bwd.has_value());
        if (r.tiles_bwd) {
          EXPECT_EQ(r.tiles_bwd->block_r, kernels::kFlash3BwdTile.block_r);
          EXPECT_EQ(r.tiles_bwd->block_c, kernels::kFlash3BwdTile.block_c);
          EXPECT_EQ(r.tiles_bwd->warps, kernels::kFlash3BwdTile.warps);
          EXPECT_EQ(r.tiles_bwd->mma, "wgmma");
          EXPECT_EQ(r.tiles_bwd->dq_adds, "tiles");
        }
      }
    }
    return r;
  }
};

class Flash3Forward : public Flash3Test, public testing::WithParamInterface<Case> {};

}  // namespace

TEST_P(Flash3Forward, MatchesReferenceOnEveryRow) {
  run_ok(problem_of(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Odd, Flash3Forward, testing::ValuesIn(cases({64, 128, 256})), case_name);

TEST_F(Flash3Test, KeyPaddingGqaAndUnequalLengths) {
  for (int64_t d : {64, 128, 256})
    for (const auto& [nq, nk] : {std::pair<int64_t, int64_t>{300, 517}, {517, 300}, {129, 1}}) {
      Problem p;
      p.batch = 3;
      p.heads = 8;
      p.kv_heads = 2;
      p.seqlen_q = nq;
      p.seqlen_k = nk;
      p.head_dim = d;
      p.padding = Padding::Random;
      run_ok(p);
      p.causal = true;
      p.dtype = DType::BF16;
      p.kv_heads = 1;
      run_ok(p);
    }
}

// Every compiled forward tile, forced (a wide tile runs by default only on long sequences,
// each tile's `from` in flash3_configs.h): odd lengths, causal and not, key padding with GQA, fp16 and bf16.
TEST_F(Flash3Test, EveryCompiledTileMatchesReference) {
  for (int64_t d : {64, 128, 256}) {
    kernels::KernelTile tiles[8];
    const int n = kernels::flash3_fwd_tiles(int(d), tiles, 8);
    for (int i = 0; i < n; ++i)
      for (bool causal : {false, true}) {
        Problem p;
        p.batch = 2;
        p.heads = 4;
        p.kv_heads = 2;
        p.seqlen_q = 1013;
        p.seqlen_k = causal ? 1013 : 777;
        p.head_dim = d;
        p.causal = causal;
        p.padding = causal ? Padding::None : Padding::Random;
        p.dtype = causal ? DType::BF16 : DType::F16;
        p.block_r = tiles[i].block_r;
        p.block_c = tiles[i].block_c;
        const Record r = run_ok(p);
        if (r.tiles) EXPECT_EQ(r.tiles->block_c, tiles[i].block_c) << d;
      }
  }
}

// More (Q tile, head, batch) items than SMs: every thread block loops over several, the producer
// loading the next item's K/V and Q while the consumers write the last one out.
TEST_F(Flash3Test, PersistentLoopOverManyItems) {
  for (bool causal : {false, true}) {
    Problem p;
    p.batch = 3;
    p.heads = 20;
    p.seqlen_q = 1500;
    p.head_dim = 128;
    p.causal = causal;
    run_ok(p);
  }
}

// The ablations (FA-3 Table 2) compute the same function: every row against the reference, odd
// lengths, causal and not, key padding with GQA.
TEST_F(Flash3Test, AblationsMatchReference) {
  for (const char* method : {"flash3_no_pingpong", "flash3_no_overlap", "flash3_no_warpspec"})
    for (int64_t n : {17, 1013})
      for (bool causal : {false, true}) {
        Problem p;
        p.batch = 2;
        p.heads = 4;
        p.kv_heads = causal ? 2 : 4;
        p.seqlen_q = n;
        p.head_dim = 128;
        p.causal = causal;
        p.padding = causal ? Padding::Random : Padding::None;
        p.dtype = causal ? DType::BF16 : DType::F16;
        const Record r = expect_ok({method, Pass::Fwd, p});
        if (r.tiles) EXPECT_EQ(r.tiles->mma, "wgmma") << method;
      }
}

// Without warp specialisation a consumer thread issues the loads itself, across work items: every
// d 128 tile (128 × 176 is picked from 2048 keys), several items per thread block (2 · 10 heads ·
// 17 Q tiles = 340 items on one block per SM), a causal mask whose items differ in length, GQA,
// Nq ≠ Nk, and items of one K/V tile under key padding.
TEST_F(Flash3Test, WithoutWarpSpecialisationEveryTileAndManyItemsMatchReference) {
  kernels::KernelTile tiles[8];
  const int n = kernels::flash3_fwd_tiles(128, tiles, 8);
  for (int i = 0; i < n; ++i)
    for (bool causal : {false, true}) {
      Problem p;
      p.batch = 2;
      p.heads = 10;
      p.kv_heads = causal ? 10 : 2;
      p.seqlen_q = 2100;
      p.seqlen_k = causal ? 2100 : 1777;
      p.head_dim = 128;
      p.causal = causal;
      p.dtype = causal ? DType::BF16 : DType::F16;
      p.block_r = tiles[i].block_r;
      p.block_c = tiles[i].block_c;
      const Record r = expect_ok({"flash3_no_warpspec", Pass::Fwd, p});
      if (r.tiles) {
        EXPECT_EQ(r.tiles->block_c, tiles[i].block_c);
        EXPECT_EQ(r.tiles->warps, 8) << "two consumer warpgroups, no producer";
      }
    }
  Problem one;  // one K/V tile per item (at most 100 keys, key padding)
  one.batch = 4;
  one.heads = 3;
  one.seqlen_q = 300;
  one.seqlen_k = 100;
  one.head_dim = 128;
  one.padding = Padding::Random;
  expect_ok({"flash3_no_warpspec", Pass::Fwd, one});
}

// ---- Backward (kernels/flash3/flash3_bwd_kernel.cuh) -----------------------------------------

namespace {

class Flash3Backward : public Flash3Test, public testing::WithParamInterface<Case> {};

}  // namespace

// dQ on every row, dK and dV on every K/V head against the float64 reference, for the backward
// alone (the check's forward, then backward()) and fwd+bwd. n 1: one Q tile with 63 zero-filled
// rows; 17: one K/V tile mostly past Nk; 1013, 4097: several K/V tiles, the last one partial, and
// more Q tiles than the ring's slots (the producer waits on the empty barriers).
TEST_P(Flash3Backward, MatchesReferenceOnEveryRow) {
  for (Pass pass : {Pass::Bwd, Pass::FwdBwd}) run_ok(problem_of(GetParam()), pass);
}

INSTANTIATE_TEST_SUITE_P(Odd, Flash3Backward, testing::ValuesIn(cases({64, 128})), case_name);

// GQA and MQA (the block walks every query head of its group: dK, dV summed over the group in
// registers), key padding (blocks past a batch's key length write dK = dV = 0; the diagonal and
// the tail masked), Nq ≠ Nk both ways (causal with Nq < Nk: key tiles no query sees write zeros).
TEST_F(Flash3Test, BackwardKeyPaddingGqaAndUnequalLengths) {
  for (int64_t d : {64, 128})
    for (const auto& [nq, nk] : {std::pair<int64_t, int64_t>{300, 517}, {517, 300}, {129, 1}, {1, 200}}) {
      Problem p;
      p.batch = 3;
      p.heads = 8;
      p.kv_heads = 2;
      p.seqlen_q = nq;
      p.seqlen_k = nk;
      p.head_dim = d;
      p.padding = Padding::Random;
      run_ok(p, Pass::Bwd);
      p.causal = true;
      p.dtype = DType::BF16;
      p.kv_heads = 1;
      run_ok(p, Pass::FwdBwd);
    }
}

// Many iterations per block (a GQA group of 5 heads × 16 Q tiles) through the two-slot ring, with
// the causal skipping of the Q tiles above each key tile's diagonal.
TEST_F(Flash3Test, BackwardStreamsManyQTilesPerBlock) {
  for (bool causal : {false, true}) {
    Problem p;
    p.batch = 1;
    p.heads = 10;
    p.kv_heads = 2;
    p.seqlen_q = 1000;
    p.seqlen_k = 700;
    p.head_dim = 128;
    p.causal = causal;
    p.dtype = causal ? DType::BF16 : DType::F16;
    run_ok(p, Pass::Bwd);
  }
}

// What the backward does not have is refused in words: d 256 (dK, dV would not fit a consumer's
// registers), the deterministic mode, and the ablations' backward (they are forward schedules).
TEST_F(Flash3Test, BackwardRefusalsAreSkippedRecordsWithReasons) {
  Problem p;
  p.batch = 1;
  p.heads = 2;
  p.seqlen_q = 100;
  p.head_dim = 256;
  const Record d256 = full_check_runner().run({"flash3", Pass::Bwd, p});
  EXPECT_EQ(d256.status, Status::Skipped);
  EXPECT_NE(d256.reason.find("d 64, 128 only"), std::string::npos) << d256.reason;
  p.head_dim = 128;
  p.deterministic = true;
  const Record det = full_check_runner().run({"flash3", Pass::FwdBwd, p});
  EXPECT_EQ(det.status, Status::Skipped);
  EXPECT_NE(det.reason.find("deterministic"), std::string::npos) << det.reason;
  p.deterministic = false;
  const Record abl = full_check_runner().run({"flash3_no_pingpong", Pass::Bwd, p});
  EXPECT_EQ(abl.status, Status::Skipped);
  EXPECT_NE(abl.reason.find("no bwd pass"), std::string::npos) << abl.reason;
}
