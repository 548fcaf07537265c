// flash1 against the float64 reference: every mask × dropout on/off × dtype × head dim ×
// N ∈ {1, 17, 1013, 4097}, forward and gradients (the fwdbwd pass checks O, L, dQ, dK, dV on
// every row and head), and every compiled tile. Skips without a GPU.
#include <fmt/format.h>

#include "kernels/flash1/flash1_params.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

enum class Mask { None, Causal, Padding };

struct Case {
  int64_t n, d;
  DType dtype;
  Mask mask;
  bool dropout;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t n : {1, 17, 1013, 4097})
    for (int64_t d : {32, 64, 96, 128})
      for (DType t : {DType::F16, DType::BF16})
        for (Mask m : {Mask::None, Mask::Causal, Mask::Padding})
          for (bool drop : {false, true}) out.push_back({n, d, t, m, drop});
  return out;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  const char* mask = c.mask == Mask::None ? "" : c.mask == Mask::Causal ? "_causal" : "_padding";
  return fmt::format("n{}_d{}_{}{}{}", c.n, c.d, to_string(c.dtype), mask, c.dropout ? "_dropout" : "");
}

}  // namespace

class Flash1Gpu : public GpuParamTest<Case> {};

TEST_P(Flash1Gpu, ForwardAndGradientsMatchReference) {
  const Case& c = GetParam();
  FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(c.dtype);
  Problem p;
  p.batch = c.n > 1000 ? 1 : 2;
  p.heads = c.n > 1000 ? 1 : 2;
  p.seqlen_q = c.n;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.mask == Mask::Causal;
  p.padding = c.mask == Mask::Padding ? Padding::Random : Padding::None;
  p.dropout = c.dropout ? 0.1 : 0.0;
  expect_ok({"flash1", Pass::FwdBwd, p});
}

INSTANTIATE_TEST_SUITE_P(Grid, Flash1Gpu, testing::ValuesIn(cases()), case_name);

class Flash1Features : public GpuTest {};

TEST_F(Flash1Features, EveryCompiledTileForwardAndBackward) {
  for (int d : {32, 64, 96, 128}) {
    kernels::KernelTile tiles[16];
    const int n = kernels::flash1_fwd_tiles(d, tiles, 16);
    ASSERT_GT(n, 0);
    for (int i = 0; i < n; ++i) {
      if (tiles[i].smem_bytes > gpu()->smem_per_block_optin) continue;
      Problem p;
      p.batch = 2;
      p.heads = 2;
      p.seqlen_q = 300;
      p.seqlen_k = 333;
      p.head_dim = d;
      p.causal = i % 2 == 1;
      p.block_r = tiles[i].block_r;
      p.block_c = tiles[i].block_c;
      expect_ok({"flash1", Pass::FwdBwd, p});
      expect_ok({"flash1", Pass::Bwd, p});
    }
  }
}

// The grid split: a few heads spread over many thread blocks (forward over Q tiles,
// backward over K/V tiles with dQ atomics), many heads one block each (dQ read-modify-write,
// Algorithm 4 as published). Both against the reference, causal and padded included.
TEST_F(Flash1Features, SplitsFillTheGpuAndMatchTheReference) {
  for (const bool many_heads : {false, true})
    for (const bool causal : {false, true}) {
      Problem p;
      p.batch = many_heads ? 64 : 1;
      p.heads = many_heads ? 8 : 3;
      p.seqlen_q = many_heads ? 200 : 1500;
      p.seqlen_k = many_heads ? 260 : 1300;
      p.head_dim = 64;
      p.causal = causal;
      p.padding = causal ? Padding::None : Padding::Random;
      p.dropout = 0.1;
      const Record r = expect_ok({"flash1", Pass::FwdBwd, p});
      ASSERT_TRUE(r.tiles.has_value() && r.tiles_bwd.has_value());
      if (many_heads) {
        EXPECT_EQ(r.tiles->splits, 1) << "512 heads fill an H100 wave without splitting";
        EXPECT_EQ(r.tiles_bwd->splits, 1);
      } else {
        EXPECT_GT(r.tiles->splits, 1);
        EXPECT_GT(r.tiles_bwd->splits, 1);
      }
    }
}
