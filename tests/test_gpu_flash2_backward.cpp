// flash2 forward + backward (and dropout) against the float64 reference: O, LSE, dQ, dK, dV
// on every row and every K/V head; the deterministic mode against the reference and bitwise
// run to run. Skips without a GPU.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_memory.h"
#include "bench/core/inputs.h"
#include "bench/core/method.h"
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
  bool mma_sync;  // --mma mma.sync: the mma.sync kernels on a Hopper GPU too
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t n : {1, 17, 1013})
    for (int64_t d : {64, 128, 256})
      for (DType t : {DType::F16, DType::BF16})
        for (bool causal : {false, true})
          for (double drop : {0.0, 0.17})
            for (bool sync : {false, true})
              if (d != 256 || !sync) out.push_back({n, d, t, causal, drop, sync});  // d 256: mma.sync only
  return out;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("n{}_d{}_{}{}{}{}", c.n, c.d, to_string(c.dtype), c.causal ? "_causal" : "",
                     c.dropout > 0 ? "_dropout" : "", c.mma_sync ? "_mma_sync" : "");
}

}  // namespace

class Flash2Backward : public GpuParamTest<Case> {};

TEST_P(Flash2Backward, GradientsMatchReference) {
  const Case& c = GetParam();
  FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(c.dtype);
  Problem p;
  p.batch = 2;
  p.heads = 2;
  p.seqlen_q = c.n;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.dropout = c.dropout;
  if (c.mma_sync) p.mma = "mma.sync";
  const Record r = expect_ok({"flash2", Pass::FwdBwd, p});
  if (r.check) {
    EXPECT_EQ(r.check->tensors.size(), 5u) << "o, lse, dq, dk, dv all checked";
  }
  if (r.status == Status::Ok) {  // the backward the method chose: wgmma on Hopper where it can run
    const bool wgmma = !c.mma_sync && wgmma_here() && c.d != 256;
    ASSERT_TRUE(r.tiles_bwd.has_value());
    EXPECT_EQ(r.tiles_bwd->mma, wgmma ? "wgmma" : "mma.sync");
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, Flash2Backward, testing::ValuesIn(cases()), case_name);

class Flash2BackwardFeatures : public GpuTest {};

TEST_F(Flash2BackwardFeatures, EveryHeadDimAndBothBackwardPasses) {
  for (int d : {32, 64, 96, 128, 256}) {
    Problem p;
    p.batch = 1;
    p.heads = 3;
    p.seqlen_q = 200;
    p.head_dim = d;
    for (Pass pass : {Pass::Bwd, Pass::FwdBwd}) {
      const Record r = expect_ok({"flash2", pass, p});
      if (d == 256 && r.status == Status::Ok) {  // the first of kernels/common/mma_bwd_configs.h's tiles that fits
        ASSERT_TRUE(r.tiles_bwd.has_value());
        EXPECT_EQ(r.tiles_bwd->block_r, gpu()->smem_per_block_optin >= 222208 ? 64 : 32);
        EXPECT_EQ(r.tiles_bwd->warps, 8);
      }
    }
    p.mma = "mma.sync";
    for (Pass pass : {Pass::Bwd, Pass::FwdBwd}) expect_ok({"flash2", pass, p});
    p.mma = "";
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
    p.dropout = 0.0;  // the wgmma kernels on a Hopper GPU: GQA/MQA, padding, Nq != Nk
    for (int64_t kvh : {2, 1})
      for (int64_t d : {64, 128, 256}) {
        p.kv_heads = kvh;
        p.head_dim = d;
        expect_ok({"flash2", Pass::FwdBwd, p});
      }
    p.head_dim = 256;  // the split kernel (two warps per 16-key slice) with everything at once
    p.kv_heads = 2;
    p.dropout = 0.1;
    p.dtype = DType::F16;
    expect_ok({"flash2", Pass::FwdBwd, p});
  }
}

TEST_F(Flash2BackwardFeatures, LongSequenceOddLength) {
  for (bool causal : {false, true})
    for (int64_t d : {64, 128, 256}) {
      Problem p;
      p.batch = 1;
      p.heads = 1;
      p.seqlen_q = 4097;
      p.head_dim = d;
      p.causal = causal;
      expect_ok({"flash2", Pass::FwdBwd, p});
    }
}

// Deterministic mode (--deterministic true): dQ added by the K/V tiles in turn. The gradients
// against the float64 reference on every row and K/V head, for every mask, odd N and both dtypes.
namespace {

enum class Mask { None, Causal, Padding };

struct DetCase {
  int64_t n, d;
  DType dtype;
  Mask mask;
};

std::vector<DetCase> det_cases() {
  std::vector<DetCase> out;
  for (int64_t n : {1, 17, 1013})
    for (int64_t d : {64, 128, 256})
      for (DType t : {DType::F16, DType::BF16})
        for (Mask m : {Mask::None, Mask::Causal, Mask::Padding}) out.push_back({n, d, t, m});
  return out;
}

std::string det_case_name(const testing::TestParamInfo<DetCase>& info) {
  const DetCase& c = info.param;
  const char* mask = c.mask == Mask::None ? "" : c.mask == Mask::Causal ? "_causal" : "_padding";
  return fmt::format("n{}_d{}_{}{}", c.n, c.d, to_string(c.dtype), mask);
}

}  // namespace

class Flash2Deterministic : public GpuParamTest<DetCase> {};

TEST_P(Flash2Deterministic, GradientsMatchReference) {
  const DetCase& c = GetParam();
  FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(c.dtype);
  Problem p;
  p.batch = 2;
  p.heads = 2;
  p.seqlen_q = c.n;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.mask == Mask::Causal;
  p.padding = c.mask == Mask::Padding ? Padding::Random : Padding::None;
  p.deterministic = true;
  const Record r = expect_ok({"flash2", Pass::FwdBwd, p});
  if (r.check) {
    EXPECT_EQ(r.check->tensors.size(), 5u) << "o, lse, dq, dk, dv all checked";
  }
  expect_ok({"flash2", Pass::Bwd, p});
}

INSTANTIATE_TEST_SUITE_P(Grid, Flash2Deterministic, testing::ValuesIn(det_cases()), det_case_name);

class Flash2DeterministicFeatures : public GpuTest {};

// GQA (one block walks the group's query heads), MQA, key padding and Nq != Nk (both ways),
// causal and dropout, against the reference.
TEST_F(Flash2DeterministicFeatures, GqaPaddingUnequalLengthsDropout) {
  for (int64_t nk : {int64_t(517), int64_t(129)})
    for (bool causal : {false, true}) {
      Problem p;
      p.batch = 3;
      p.heads = 8;
      p.kv_heads = 2;
      p.seqlen_q = 300;
      p.seqlen_k = nk;
      p.head_dim = 64;
      p.padding = Padding::Random;
      p.causal = causal;
      p.dropout = 0.1;
      p.deterministic = true;
      expect_ok({"flash2", Pass::FwdBwd, p});
      p.kv_heads = 1;  // MQA
      p.head_dim = 128;
      p.dtype = DType::BF16;
      expect_ok({"flash2", Pass::FwdBwd, p});
    }
}

// Two runs give bitwise-identical dQ (and dK, dV) — the point of the mode. Many K/V tiles per
// Q tile (N 2049: 33 tiles of 64 keys), so an atomic order would show.
TEST_F(Flash2DeterministicFeatures, TwoRunsAreBitwiseIdentical) {
  for (DType t : {DType::F16, DType::BF16})
    for (int64_t d : {64, 128, 256})
      for (bool causal : {false, true}) {
        if (t == DType::BF16 && !fused_bf16_available()) {
          std::printf("[ SKIPPED  ] bf16: %s\n", no_bf16_message().c_str());
          continue;
        }
        Problem p;
        p.batch = 2;
        p.heads = 4;
        p.kv_heads = 2;
        p.seqlen_q = causal ? 2049 : 1013;
        p.seqlen_k = causal ? 0 : 2049;
        p.head_dim = d;
        p.dtype = t;
        p.causal = causal;
        p.padding = Padding::Random;
        p.deterministic = true;
        p.mma = "mma.sync";  // the atomic mode below on the same (mma.sync) kernels: same forward, same dK, dV
        const HostInputs in = make_inputs(p, true);
        const FwdBwdBytes a = run_fwdbwd_bytes("flash2", p, in), b = run_fwdbwd_bytes("flash2", p, in);
        const std::string what = p.name();
        EXPECT_TRUE(a.dq == b.dq) << what << ": dQ differs between two runs";
        EXPECT_TRUE(a.dk == b.dk) << what << ": dK differs";
        EXPECT_TRUE(a.dv == b.dv) << what << ": dV differs";
        // The same gradients as the atomic mode, to within the atomic order's rounding.
        Problem atomic = p;
        atomic.deterministic = false;
        const FwdBwdBytes c = run_fwdbwd_bytes("flash2", atomic, in);
        EXPECT_TRUE(a.dk == c.dk && a.dv == c.dv) << what << ": dK, dV do not depend on the dQ mode";
        double worst = 0, scale = 0;
        for (size_t e = 0; e < a.dq.size() / 2; ++e) {
          uint16_t wa, wc;
          std::memcpy(&wa, a.dq.data() + 2 * e, 2);
          std::memcpy(&wc, c.dq.data() + 2 * e, 2);
          const double x = to_float(t, wa), y = to_float(t, wc);
          worst = std::max(worst, std::abs(x - y));
          scale = std::max(scale, std::abs(x));
        }
        EXPECT_LE(worst, 1e-2 * scale) << what << ": deterministic dQ far from the atomic one";
      }
}
