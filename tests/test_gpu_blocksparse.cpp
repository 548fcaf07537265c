// Block-sparse methods against the float64 reference with the expanded element mask (O, LSE,
// dQ, dK, dV on every row and K/V head): every pattern, odd N, fp16/bf16, forward and
// gradients of both methods; causal, key padding, dropout and GQA composed with sparsity;
// density 1.0 bitwise equal to dense flash2; unsupported pattern blocks as skipped records.
// Skips without a GPU.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_memory.h"
#include "bench/core/inputs.h"
#include "bench/core/method.h"
#include "bench/core/sparsity.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

// A mask file for an n × n problem with 128-blocks: block row 1 all zero (its queries see no key:
// O = 0, LSE = -inf, dQ = 0), every other row r has blocks (r, 0) and (r, r), so key block 1 is
// seen by nobody (dK = dV = 0 there). With one block (n <= 128) the mask is all zero.
std::string mask_file(int64_t n) {
  const int64_t t = (n + 127) / 128;
  std::string text = fmt::format("# test mask\n{} {}\n", t, t);
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t c = 0; c < t; ++c) text += (t > 1 && r != 1 && (c == r || c == 0)) ? '1' : '0';
    text += '\n';
  }
  const std::string path = fmt::format("{}flashio_gpu_mask_{}.txt", ::testing::TempDir(), n);
  std::ofstream(path) << text;
  return path;
}

struct Case {
  std::string pattern;
  int64_t n;
  DType dtype;
  bool causal;
};

std::string safe(std::string s) {
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("{}_n{}_{}{}", safe(c.pattern), c.n, to_string(c.dtype), c.causal ? "_causal" : "");
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* pat : {"butterfly", "local", "random", "causal_block", "file"})
    for (int64_t n : {1, 17, 1013, 4097})
      for (DType t : {DType::F16, DType::BF16})
        for (bool causal : {false, true}) {
          if (n == 4097 && (t == DType::BF16 || causal)) continue;  // the largest size once per pattern
          out.push_back({pat, n, t, causal});
        }
  return out;
}

Problem problem_of(const Case& c) {
  Problem p;
  p.batch = c.n > 1000 ? 1 : 2;
  p.heads = 2;
  p.seqlen_q = c.n;
  p.head_dim = 64;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.pattern = c.pattern == "file" ? "file:" + mask_file(c.n) : c.pattern;
  p.sparse_density = 0.3;
  p.sparse_block = 128;
  return p;
}

}  // namespace

class BlocksparseFlash : public GpuParamTest<Case> {};

TEST_P(BlocksparseFlash, ForwardAndGradientsMatchReference) {
  FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(GetParam().dtype);
  const Problem p = problem_of(GetParam());
  expect_ok({"blocksparse_flash", Pass::Fwd, p});
  const Record r = expect_ok({"blocksparse_flash", Pass::FwdBwd, p});
  if (r.check) {
    EXPECT_EQ(r.check->tensors.size(), 5u) << "o, lse, dq, dk, dv all checked";
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, BlocksparseFlash, testing::ValuesIn(cases()), case_name);

class BlocksparseStandard : public GpuParamTest<Case> {};

TEST_P(BlocksparseStandard, ForwardAndGradientsMatchReference) {
  const Problem p = problem_of(GetParam());
  const Record r = expect_ok({"blocksparse_standard", Pass::Fwd, p});
  if (r.check) {
    EXPECT_FALSE(r.check->lse_checked) << "like standard, it has no LSE output";
  }
  const Record g = expect_ok({"blocksparse_standard", Pass::FwdBwd, p});
  if (g.check) {
    EXPECT_EQ(g.check->tensors.size(), 4u) << "o, dq, dk, dv all checked";
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, BlocksparseStandard, testing::ValuesIn(cases()), case_name);

class BlocksparseFeatures : public GpuTest {};

// Head dim 128, dropout, key padding, GQA and Nq != Nk, with and without causal, both dtypes.
TEST_F(BlocksparseFeatures, MasksDropoutGqaAndHeadDim128ComposeWithSparsity) {
  for (int64_t d : {64, 128})
    for (DType t : {DType::F16, DType::BF16})
      for (bool causal : {false, true}) {
        Problem p;
        p.batch = 3;
        p.heads = 4;
        p.kv_heads = 2;
        p.seqlen_q = 300;
        p.seqlen_k = 517;
        p.head_dim = d;
        p.dtype = t;
        p.causal = causal;
        p.padding = Padding::Random;
        p.dropout = 0.17;
        for (const char* pat : {"butterfly", "random"}) {
          p.pattern = pat;
          p.sparse_density = 0.5;
          expect_ok({"blocksparse_flash", Pass::Fwd, p});
          expect_ok({"blocksparse_flash", Pass::FwdBwd, p});
          expect_ok({"blocksparse_standard", Pass::Fwd, p});
          expect_ok({"blocksparse_standard", Pass::FwdBwd, p});
          expect_ok({"blocksparse_standard", Pass::Bwd, p});  // backward() again from one forward
        }
      }
}

// A pattern block of 256 (two forward tiles, four backward tiles per block), and the
// baseline with blocks smaller than any kernel tile.
TEST_F(BlocksparseFeatures, OtherPatternBlockSizes) {
  Problem p;
  p.batch = 2;
  p.heads = 2;
  p.seqlen_q = 1013;
  p.pattern = "local";
  p.sparse_block = 256;
  expect_ok({"blocksparse_flash", Pass::FwdBwd, p});
  expect_ok({"blocksparse_standard", Pass::FwdBwd, p});
  p.sparse_block = 32;
  p.causal = true;
  p.dropout = 0.1;
  expect_ok({"blocksparse_standard", Pass::FwdBwd, p});
}

TEST_F(BlocksparseFeatures, PatternBlockSmallerThanTheTileIsSkippedWithAReason) {
  Problem p;
  p.seqlen_q = 512;
  p.pattern = "butterfly";
  p.sparse_block = 64;
  const Record r = full_check_runner().run({"blocksparse_flash", Pass::Fwd, p});
  EXPECT_EQ(r.status, Status::Skipped);
  EXPECT_NE(r.reason.find("not a multiple"), std::string::npos) << r.reason;
  const Record dense = full_check_runner().run({"flash2", Pass::Fwd, p});
  EXPECT_EQ(dense.status, Status::Skipped);
  EXPECT_NE(dense.reason.find("block-sparse"), std::string::npos) << dense.reason;
}

// The backward kernel's tiles in the record (what `flashio analyze` models the backward from): flash2's
// mma.sync backward tile, whose kernel it is, with dQ added in pairs; a forward record has none.
TEST_F(BlocksparseFeatures, RecordsTheBackwardKernelsTiles) {
  Problem p;
  p.batch = 2;
  p.heads = 2;
  p.seqlen_q = 1013;
  p.pattern = "random";
  p.sparse_density = 0.5;
  EXPECT_FALSE(expect_ok({"blocksparse_flash", Pass::Fwd, p}).tiles_bwd.has_value());
  const Record r = expect_ok({"blocksparse_flash", Pass::FwdBwd, p});
  Problem dense = p;
  dense.pattern = "";
  dense.mma = "mma.sync";
  const Record d = expect_ok({"flash2", Pass::FwdBwd, dense});
  ASSERT_TRUE(r.tiles_bwd.has_value());
  ASSERT_TRUE(d.tiles_bwd.has_value());
  EXPECT_EQ(r.tiles_bwd->to_json(), d.tiles_bwd->to_json());
  EXPECT_EQ(r.tiles_bwd->dq_adds, "pairs");
}

// density 1.0: the same kernel code visiting every tile in the dense order, so O, LSE, dK and
// dV are bitwise those of flash2; dQ is accumulated with fp32 atomics in a run-dependent
// order (in flash2 as well), so it is compared to within that rounding.
TEST_F(BlocksparseFeatures, DensityOneIsBitwiseDenseFlash2) {
  for (DType t : {DType::F16, DType::BF16})
    for (bool causal : {false, true})
      for (int64_t n : {1013, 2048}) {
        Problem dense;
        dense.batch = 2;
        dense.heads = 4;
        dense.kv_heads = 2;
        dense.seqlen_q = n;
        dense.head_dim = 64;
        dense.dtype = t;
        dense.causal = causal;
        dense.dropout = causal ? 0.1 : 0.0;
        dense.mma = "mma.sync";  // blocksparse_flash is flash2's mma.sync kernels with tile lists (a Hopper GPU's
                                 // default flash2 is the wgmma kernels: other products, other roundings)
        Problem sparse = dense;
        sparse.pattern = "random";
        sparse.sparse_density = 1.0;

        if (t == DType::BF16 && !fused_bf16_available()) {  // the plans below would launch bf16 kernels
          std::printf("[ SKIPPED  ] %s: %s\n", dense.name().c_str(), no_bf16_message().c_str());
          continue;
        }
        const HostInputs in = make_inputs(dense, true);
        for (const Problem* q : {&dense, &sparse}) {
          const Method* m = builtin_registry().find(q == &dense ? "flash2" : "blocksparse_flash");
          EXPECT_TRUE(m->supports(*q, Pass::FwdBwd, *gpu()).ok) << m->supports(*q, Pass::FwdBwd, *gpu()).reason;
        }
        const FwdBwdBytes a = run_fwdbwd_bytes("flash2", dense, in);
        const FwdBwdBytes b = run_fwdbwd_bytes("blocksparse_flash", sparse, in);
        const std::string what = dense.name();
        EXPECT_TRUE(a.o == b.o) << what << ": O differs";
        EXPECT_TRUE(a.lse == b.lse) << what << ": LSE differs";
        EXPECT_TRUE(a.dk == b.dk) << what << ": dK differs";
        EXPECT_TRUE(a.dv == b.dv) << what << ": dV differs";
        ASSERT_EQ(a.dq.size(), b.dq.size());
        double worst = 0, scale = 0;
        for (size_t e = 0; e < a.dq.size() / 2; ++e) {
          uint16_t wa, wb;
          std::memcpy(&wa, a.dq.data() + 2 * e, 2);
          std::memcpy(&wb, b.dq.data() + 2 * e, 2);
          const double x = to_float(t, wa), y = to_float(t, wb);
          worst = std::max(worst, std::abs(x - y));
          scale = std::max(scale, std::abs(x));
        }
        EXPECT_LE(worst, 1e-2 * scale) << what << ": dQ beyond atomic-order rounding";
      }
}
