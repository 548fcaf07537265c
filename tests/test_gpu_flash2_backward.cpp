// flash2 forward + backward (and dropout) against the float64 reference: O, LSE, dQ, dK, dV
// on every row and every K/V head. Skips without a GPU.
#include <fmt/format.h>

#include "kernels/flash2/flash2_params.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

struct Case {
  int64_t n, d;
  DType dtype;
  bool causal;
  double dropout;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t n : {1, 17, 1013})
    for (int64_t d : {64, 128})
      for (DType t : {DType::F16, DType::BF16})
        for (bool causal : {false, true})
          for (double drop : {0.0, 0.17}) out.push_back({n, d, t, causal, drop});
  return out;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("n{}_d{}_{}{}{}", c.n, c.d, to_string(c.dtype), c.causal ? "_causal" : "", c.dropout > 0 ? "_dropout" : "");
}

}  // namespace

class Flash2Backward : public GpuParamTest<Case> {};

TEST_P(Flash2Backward, GradientsMatchReference) {
  const Case& c = GetParam();
  Problem p;
  p.batch = 2;
  p.heads = 2;
  p.seqlen_q = c.n;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.dropout = c.dropout;
  const Record r = expect_ok({"flash2", Pass::FwdBwd, p});
  if (r.check) {
    EXPECT_EQ(r.check->tensors.size(), 5u) << "o, lse, dq, dk, dv all checked";
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, Flash2Backward, testing::ValuesIn(cases()), case_name);

class Flash2BackwardFeatures : public GpuTest {};

TEST_F(Flash2BackwardFeatures, EveryHeadDimAndBothBackwardPasses) {
  for (int d : {32, 64, 96, 128}) {
    Problem p;
    p.batch = 1;
    p.heads = 3;
    p.seqlen_q = 200;
    p.head_dim = d;
    for (Pass pass : {Pass::Bwd, Pass::FwdBwd}) expect_ok({"flash2", pass, p});
  }
}

TEST_F(Flash2BackwardFeatures, GqaPaddingUnequalLengthsDropout) {
  for (bool causal : {false, true}) {
    Problem p;
    p.batch = 3;
    p.heads = 8;
    p.kv_heads = 2;
    p.seqlen_q = 300;
    p.seqlen_k = 517;
    p.head_dim = 64;
    p.padding = Padding::Random;
    p.causal = causal;
    p.dropout = 0.1;
    expect_ok({"flash2", Pass::FwdBwd, p});
    p.kv_heads = 1;  // MQA
    p.dtype = DType::BF16;
    expect_ok({"flash2", Pass::FwdBwd, p});
  }
}

TEST_F(Flash2BackwardFeatures, LongSequenceOddLength) {
  for (bool causal : {false, true}) {
    Problem p;
    p.batch = 1;
    p.heads = 1;
    p.seqlen_q = 4097;
    p.head_dim = 128;
    p.causal = causal;
    expect_ok({"flash2", Pass::FwdBwd, p});
  }
}
