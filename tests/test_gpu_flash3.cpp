// flash3 (kernels/flash3/) against the float64 reference on every row, through the runner a
// sweep uses (poisoned outputs, check before timing): odd lengths, every head dim and dtype,
// causal, key padding, GQA, Nq ≠ Nk both ways, and more work items than SMs (the persistent
// loop). Skips without a Hopper GPU or without the flash3 kernels in this build.
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

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (int64_t n : {1, 17, 1013, 4097})
    for (int64_t d : {64, 128, 256})
      for (DType t : {DType::F16, DType::BF16})
        for (bool causal : {false, true}) out.push_back({n, d, t, causal});
  return out;
}

class Flash3Test : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (!IsSkipped() && !flash3_here()) GTEST_SKIP() << "no flash3 kernels on this GPU / in this build";
  }
  static Record run_ok(const Problem& p) {
    const Record r = expect_ok({"flash3", Pass::Fwd, p});
    if (r.status == Status::Ok) {
      EXPECT_TRUE(r.tiles.has_value());
      if (r.tiles) {
        EXPECT_EQ(r.tiles->mma, "wgmma");
        EXPECT_EQ(r.tiles->smem_layout, "swizzle128");
      }
    }
    return r;
  }
};

class Flash3Forward : public Flash3Test, public testing::WithParamInterface<Case> {};

}  // namespace

TEST_P(Flash3Forward, MatchesReferenceOnEveryRow) {
  const Case& c = GetParam();
  Problem p;
  p.batch = c.n > 1000 ? 1 : 2;
  p.heads = 2;
  p.seqlen_q = c.n;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  run_ok(p);
}

INSTANTIATE_TEST_SUITE_P(Odd, Flash3Forward, testing::ValuesIn(all_cases()), case_name);

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
  for (const char* method : {"flash3_no_pingpong", "flash3_no_overlap"})
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
