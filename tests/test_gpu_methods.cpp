// GPU methods against the float64 reference, every row checked, through the same runner
// path a sweep uses (poisoned outputs, check before timing). Skips without a GPU.
#include <fmt/format.h>

#include <cstdio>

#include "kernels/flash2/flash2_params.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

struct Case {
  std::string method;
  int64_t n;
  int64_t d;
  DType dtype;
  bool causal;
  std::string mma;  // Problem::mma: "" (the method's choice), "mma.sync", "wgmma"
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string mma = c.mma;
  for (char& ch : mma)
    if (ch == '.') ch = '_';
  return fmt::format("{}{}_n{}_d{}_{}{}", c.method, mma.empty() ? "" : "_" + mma, c.n, c.d, to_string(c.dtype),
                     c.causal ? "_causal" : "");
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const char* m : {"standard", "flash2", "flash2_mma_sync", "flash2_wgmma"})
    for (int64_t n : {1, 17, 1013, 4097})
      for (int64_t d : {64, 128})
        for (DType t : {DType::F16, DType::BF16})
          for (bool causal : {false, true}) {
            const std::string name = m;
            if (name == "flash2_mma_sync") {
              out.push_back({"flash2", n, d, t, causal, "mma.sync"});
            } else if (name == "flash2_wgmma") {
              out.push_back({"flash2", n, d, t, causal, "wgmma"});
            } else {
              out.push_back({name, n, d, t, causal, ""});
            }
          }
  return out;
}

}  // namespace

class GpuMethod : public GpuParamTest<Case> {};

TEST_P(GpuMethod, MatchesReferenceOnEveryRow) {
  const Case& c = GetParam();
  if (is_fused_method(c.method)) FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(c.dtype);
  if (c.mma == "wgmma" && !wgmma_here()) GTEST_SKIP() << "no wgmma kernels on this GPU / in this build";
  Problem p;
  p.batch = c.n > 1000 ? 1 : 2;
  p.heads = 2;
  p.seqlen_q = c.n;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.mma = c.mma;
  const Record r = expect_ok({c.method, Pass::Fwd, p});
  if (r.status == Status::Ok && c.method == "flash2") {
    // The method's choice on a Hopper GPU is the wgmma kernel: a silent fallback fails here.
    const std::string expected = c.mma.empty() ? (wgmma_here() ? "wgmma" : "mma.sync") : c.mma;
    ASSERT_TRUE(r.tiles.has_value());
    EXPECT_EQ(r.tiles->mma, expected);
    EXPECT_EQ(r.tiles->smem_layout, expected == "wgmma" ? "swizzle128" : "padded");
  }
}

INSTANTIATE_TEST_SUITE_P(Forward, GpuMethod, testing::ValuesIn(all_cases()), case_name);

class GpuFeatures : public GpuTest {};

TEST_F(GpuFeatures, KeyPaddingGqaAndUnequalLengths) {
  const std::pair<const char*, const char*> methods[] = {{"standard", ""}, {"flash2", ""}, {"flash2", "mma.sync"}};
  for (const auto& [m, mma] : methods) {
    Problem p;
    p.mma = mma;
    p.batch = 3;
    p.heads = 8;
    p.kv_heads = 2;
    p.seqlen_q = 300;
    p.seqlen_k = 517;
    p.head_dim = 64;
    p.padding = Padding::Random;
    expect_ok({m, Pass::Fwd, p});
    p.causal = true;
    p.dtype = DType::BF16;
    expect_ok({m, Pass::Fwd, p});
  }
}

TEST_F(GpuFeatures, EveryFlash2TileAndHeadDim) {
  for (int d : {32, 64, 96, 128, 256}) {
    kernels::Flash2Tile tiles[16];
    int n = kernels::flash2_fwd_tiles(d, tiles, 8);
    ASSERT_GT(n, 0) << d;
    if (wgmma_here()) n += kernels::flash2_fwd_wgmma_tiles(d, tiles + n, 8);
    for (int i = 0; i < n; ++i) {
      if (tiles[i].smem_bytes > gpu()->smem_per_block_optin) continue;
      for (bool causal : {false, true}) {
        Problem p;
        p.batch = 2;
        p.heads = 3;
        p.seqlen_q = 333;
        p.head_dim = d;
        p.causal = causal;
        p.block_r = tiles[i].block_m;
        p.block_c = tiles[i].block_n;
        p.mma = tiles[i].wgmma ? "wgmma" : "mma.sync";
        const Record r = expect_ok({"flash2", Pass::Fwd, p});
        if (r.tiles) EXPECT_EQ(r.tiles->mma, p.mma);
      }
    }
  }
}

// What scripts/ptx_paths.sh reads: the fused kernels' code as loaded here. A PTX-only build
// (CMAKE_CUDA_ARCHITECTURES=75-virtual) shows compute_75 code running as this GPU's sm_XY.
TEST_F(GpuFeatures, FusedKernelArchIsReported) {
  const DeviceInfo& d = *gpu();
  std::printf("fused kernels: compute_%d code running as sm_%d on sm_%d\n", d.kernel_ptx_arch, d.kernel_binary_arch,
              d.compute_capability());
  EXPECT_GE(d.kernel_ptx_arch, 75);
  EXPECT_LE(d.kernel_ptx_arch, d.compute_capability());
  EXPECT_EQ(d.kernel_binary_arch, d.compute_capability());
}

TEST_F(GpuFeatures, ReferenceMethodAgreesWithItself) {
  Problem p;
  p.seqlen_q = 64;
  p.head_dim = 32;
  expect_ok({"reference", Pass::Fwd, p});
}

// The standard method's backward (Algorithm 3) and dropout against the float64 reference:
// O, dQ on every row and dK, dV on every K/V head, for each pass (bwd times backward() again
// from the forward that the check ran, so a backward that destroys its inputs fails there).
TEST_F(GpuFeatures, StandardBackwardAndDropout) {
  const Pass passes[] = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
  for (int64_t n : {1, 17, 1013})
    for (int64_t d : {64, 128})
      for (DType t : {DType::F16, DType::BF16})
        for (bool causal : {false, true})
          for (double dropout : {0.0, 0.17}) {
            Problem p;
            p.batch = n > 1000 ? 1 : 2;
            p.heads = 2;
            p.seqlen_q = n;
            p.head_dim = d;
            p.dtype = t;
            p.causal = causal;
            p.dropout = dropout;
            for (Pass pass : passes) expect_ok({"standard", pass, p});  // innermost: one reference per problem
          }
  // GQA (4 query heads per K/V head), key padding, Nq != Nk.
  for (DType t : {DType::F16, DType::BF16})
    for (bool causal : {false, true}) {
      Problem p;
      p.batch = 3;
      p.heads = 8;
      p.kv_heads = 2;
      p.seqlen_q = 300;
      p.seqlen_k = 517;
      p.head_dim = 64;
      p.dtype = t;
      p.causal = causal;
      p.padding = Padding::Random;
      p.dropout = 0.17;
      for (Pass pass : passes) expect_ok({"standard", pass, p});
    }
}
