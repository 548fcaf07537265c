// flash1's schedule on the CPU (kernels/flash1/flash1_cpu.h): Algorithm 2 and Algorithm 4 of the
// FlashAttention paper against the float64 reference, at tile sizes that do and do not divide N,
// with every mask, dropout, both dtypes, Nq ≠ Nk; deliberately broken variants must fail the same
// tolerance; the HBM element counts must equal the IO model's closed forms.
// Run: ./build/tests/flashio_cpu_tests --gtest_filter='Flash1Cpu*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bench/core/reference.h"
#include "bench/measure/check.h"
#include "bench/core/inputs.h"
#include "kernels/flash1/flash1_cpu.h"

using namespace flashio;

namespace {

struct Flash1Case {
  int64_t seqlen_q, seqlen_k, head_dim;
  int block_r, block_c;
  bool causal, padding;
  double dropout;
  DType dtype;
};

std::string case_name(const Flash1Case& c) {
  std::string s = "nq" + std::to_string(c.seqlen_q) + "_nk" + std::to_string(c.seqlen_k) + "_d" +
                  std::to_string(c.head_dim) + "_br" + std::to_string(c.block_r) + "_bc" + std::to_string(c.block_c) +
                  "_" + to_string(c.dtype);
  if (c.causal) s += "_causal";
  if (c.padding) s += "_padding";
  if (c.dropout > 0) s += "_dropout" + std::to_string(int(std::lround(c.dropout * 100)));
  return s;
}

Problem problem_of(const Flash1Case& c) {
  Problem p;
  p.batch = 2;                                            // two sequences: padding gives them different key lengths
  p.heads = c.seqlen_q * c.seqlen_k > 100 * 100 ? 1 : 2;  // keeps the long cases fast
  p.seqlen_q = c.seqlen_q;
  p.seqlen_k = c.seqlen_k;
  p.head_dim = c.head_dim;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.padding = c.padding ? Padding::Random : Padding::None;
  p.dropout = c.dropout;
  p.seed = 0xf1a5 + uint64_t(c.seqlen_q * 131 + c.seqlen_k);
  return p;
}

HostTensors tensors_of(const Problem& p, const HostInputs& in) {
  return {in.q.data(), in.k.data(), in.v.data(), p.padding != Padding::None ? in.key_lengths.data() : nullptr};
}

std::vector<double> widen(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

struct ReferenceOutputs {
  std::vector<double> o, lse, dq, dk, dv;  // dk, dv: all K/V heads, BHND
};

ReferenceOutputs reference_outputs(const Problem& p, const HostTensors& t, const uint16_t* d_o) {
  ReferenceOutputs r;
  reference_rows(p, t, all_rows(p), r.o, r.lse);
  reference_dq_rows(p, t, d_o, all_rows(p), r.dq);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      std::vector<double> dk, dv;
      reference_dkdv_head(p, t, d_o, b, h, dk, dv);
      r.dk.insert(r.dk.end(), dk.begin(), dk.end());
      r.dv.insert(r.dv.end(), dv.begin(), dv.end());
    }
  return r;
}

// RMS of the elements that are not exactly zero (a key no query sees, or a query that sees no
// key, has an exactly zero gradient; those zeros should not shrink the tolerance of the rest).
double rms_of_nonzero(const std::vector<double>& v) {
  std::vector<double> nonzero;
  for (double x : v)
    if (x != 0.0) nonzero.push_back(x);
  return rms(nonzero);
}

// The suite's checks (bench/measure/check.cpp, bench/measure/runner.cpp): O with tolerance_for, LSE to 1e-3
// absolute + 1e-4 relative, gradients with gradient_tolerance_for and atol floored at a tenth
// of the largest gradient's RMS — here the RMS of its non-zero elements. The runner takes the
// RMS over every element, and at Nq = 1, Nk = 100, causal, the 99 masked keys' zero gradients
// make the floor 10× smaller than the rounding every kernel shows there: dQ and dK are zero in
// exact arithmetic (a single visible key), but D_i = rowsum(dO_i ∘ O_i) from the O rounded to
// the dtype leaves bf16 rounding (|dQ| ≈ 1e-2, against 4e-7 with an fp32 O).
CheckResult check_forward(const Problem& p, const Flash1CpuResult& got, const ReferenceOutputs& want) {
  const Tolerance tol = tolerance_for(p.dtype);
  CheckResult c;
  add_tensor(c, compare_tensor("o", widen(got.o), want.o, tol.atol_rms, tol.rtol));
  constexpr double kLseAtol = 1e-3, kLseRtol = 1e-4;
  add_tensor(c, compare_tensor("lse", widen(got.lse), want.lse, kLseAtol, kLseRtol, true));
  return c;
}

CheckResult check_backward(const Problem& p, const Flash1CpuResult& got, const ReferenceOutputs& want) {
  const Tolerance tol = gradient_tolerance_for(p.dtype);
  const double floor = 0.1 * std::max({rms_of_nonzero(want.dq), rms_of_nonzero(want.dk), rms_of_nonzero(want.dv)});
  auto atol = [&](const std::vector<double>& ref) { return tol.atol_rms * std::max({rms(ref), floor, 1e-6}); };
  CheckResult c;
  add_tensor(c, compare_tensor("dq", widen(got.dq), want.dq, atol(want.dq), tol.rtol, true));
  add_tensor(c, compare_tensor("dk", widen(got.dk), want.dk, atol(want.dk), tol.rtol, true));
  add_tensor(c, compare_tensor("dv", widen(got.dv), want.dv, atol(want.dv), tol.rtol, true));
  return c;
}

std::string describe(const CheckResult& c) {
  std::string s;
  for (const auto& t : c.tensors)
    s += " " + t.name + ": |err|/tol " + std::to_string(t.worst_ratio) + " (max abs " + std::to_string(t.max_abs_err) +
         ")";
  return s;
}

// The case grid: every N with every tile shape (N = 1, 17, 100, 257 against Br×Bc = 16×32,
// 64×64, 32×128), each with all four mask combinations; dropout, dtype and d rotate so each
// value meets every N and tile. Then Nq ≠ Nk in both directions.
std::vector<Flash1Case> grid() {
  const int64_t lengths[] = {1, 17, 100, 257};
  const std::pair<int, int> tiles[] = {{16, 32}, {64, 64}, {32, 128}};
  std::vector<Flash1Case> cases;
  int rotation = 0;
  for (int64_t n : lengths)
    for (auto [br, bc] : tiles)
      for (int masks = 0; masks < 4; ++masks, ++rotation) {
        const bool causal = masks & 1, padding = masks & 2;
        const double dropout = rotation % 2 ? 0.2 : 0.0;
        const DType dtype = (rotation / 2) % 2 ? DType::BF16 : DType::F16;
        const int64_t d = (rotation / 4) % 2 ? 64 : 32;
        cases.push_back({n, n, d, br, bc, causal, padding, dropout, dtype});
      }
  cases.push_back({100, 257, 64, 16, 32, true, true, 0.2, DType::F16});
  cases.push_back({100, 257, 32, 64, 64, false, false, 0.0, DType::BF16});
  cases.push_back({257, 17, 32, 32, 128, true, false, 0.2, DType::BF16});
  cases.push_back({257, 17, 64, 16, 32, false, true, 0.0, DType::F16});
  cases.push_back({17, 100, 32, 16, 32, true, false, 0.0, DType::F16});
  cases.push_back({1, 100, 64, 64, 64, true, true, 0.2, DType::BF16});
  return cases;
}

class Flash1CpuMatchesReference : public ::testing::TestWithParam<Flash1Case> {};

TEST_P(Flash1CpuMatchesReference, ForwardAndBackward) {
  const Flash1Case& c = GetParam();
  const Problem p = problem_of(c);
  const HostInputs in = make_inputs(p, true);
  const HostTensors t = tensors_of(p, in);
  const ReferenceOutputs want = reference_outputs(p, t, in.d_o.data());

  const Flash1CpuResult fwd = flash1_forward_cpu(p, t, c.block_r, c.block_c);
  const CheckResult fc = check_forward(p, fwd, want);
  EXPECT_TRUE(fc.passed) << p.name() << describe(fc);

  const Flash1CpuResult bwd = flash1_backward_cpu(p, t, in.d_o.data(), fwd, c.block_r, c.block_c);
  const CheckResult bc = check_backward(p, bwd, want);
  EXPECT_TRUE(bc.passed) << p.name() << describe(bc);
  RecordProperty("forward_worst_ratio", std::to_string(fc.worst_ratio));
  RecordProperty("backward_worst_ratio", std::to_string(bc.worst_ratio));
}

INSTANTIATE_TEST_SUITE_P(Flash1Cpu, Flash1CpuMatchesReference, ::testing::ValuesIn(grid()),
                         [](const ::testing::TestParamInfo<Flash1Case>& info) { return case_name(info.param); });

// ---- masks at the edges -------------------------------------------------------------------------

TEST(Flash1Cpu, EmptySequenceAndLengthOnABlockBoundary) {
  Problem p;
  p.batch = 3;
  p.heads = 2;
  p.seqlen_q = 40;
  p.seqlen_k = 64;
  p.head_dim = 32;
  p.causal = true;
  p.dropout = 0.2;
  const HostInputs in = make_inputs(p, true);
  const int32_t lengths[] = {0, 32, 64};  // no key at all; exactly two blocks of Bc = 16; all keys
  const HostTensors t{in.q.data(), in.k.data(), in.v.data(), lengths};
  const ReferenceOutputs want = reference_outputs(p, t, in.d_o.data());
  const Flash1CpuResult fwd = flash1_forward_cpu(p, t, 16, 16);
  const Flash1CpuResult bwd = flash1_backward_cpu(p, t, in.d_o.data(), fwd, 16, 16);
  const CheckResult fc = check_forward(p, fwd, want), bc = check_backward(p, bwd, want);
  EXPECT_TRUE(fc.passed) << describe(fc);
  EXPECT_TRUE(bc.passed) << describe(bc);
  const int64_t per_sequence_q = p.heads * p.seqlen_q;
  for (int64_t r = 0; r < per_sequence_q; ++r) {  // sequence 0 sees nothing: O = 0, LSE = −inf, dQ = 0
    EXPECT_TRUE(std::isinf(fwd.lse[size_t(r)]) && fwd.lse[size_t(r)] < 0) << "row " << r;
    for (int64_t e = 0; e < p.head_dim; ++e) {
      EXPECT_EQ(fwd.o[size_t(r * p.head_dim + e)], 0.0f);
      EXPECT_EQ(bwd.dq[size_t(r * p.head_dim + e)], 0.0f);
    }
  }
}

// ---- the tolerance catches a broken algorithm -------------------------------------------------------

TEST(Flash1Cpu, ForgottenOutputRescaleFailsTheCheck) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    Problem p;
    p.batch = 1;
    p.heads = 2;
    p.seqlen_q = 257;
    p.head_dim = 64;
    p.dtype = dtype;
    const HostInputs in = make_inputs(p, true);
    const HostTensors t = tensors_of(p, in);
    ReferenceOutputs want;
    reference_rows(p, t, all_rows(p), want.o, want.lse);
    const CheckResult right = check_forward(p, flash1_forward_cpu(p, t, 16, 32), want);
    const CheckResult broken =
        check_forward(p, flash1_forward_cpu(p, t, 16, 32, Flash1CpuFault::ForgetOutputRescale), want);
    EXPECT_TRUE(right.passed) << to_string(dtype) << describe(right);
    EXPECT_FALSE(broken.passed) << to_string(dtype) << describe(broken);
  }
}

TEST(Flash1Cpu, ForgottenBackwardStepsFailTheCheck) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    Problem p;
    p.batch = 1;
    p.heads = 2;
    p.seqlen_q = 100;
    p.head_dim = 32;
    p.dtype = dtype;
    p.causal = true;
    p.dropout = 0.2;
    const HostInputs in = make_inputs(p, true);
    const HostTensors t = tensors_of(p, in);
    const ReferenceOutputs want = reference_outputs(p, t, in.d_o.data());
    const Flash1CpuResult fwd = flash1_forward_cpu(p, t, 16, 32);
    auto check = [&](Flash1CpuFault fault) {
      return check_backward(p, flash1_backward_cpu(p, t, in.d_o.data(), fwd, 16, 32, fault), want);
    };
    const CheckResult right = check(Flash1CpuFault::None);
    const CheckResult no_dropout_on_dp = check(Flash1CpuFault::ForgetDropoutOnDp);
    const CheckResult no_row_dot = check(Flash1CpuFault::ForgetRowDotD);
    EXPECT_TRUE(right.passed) << to_string(dtype) << describe(right);
    EXPECT_FALSE(no_dropout_on_dp.passed) << to_string(dtype) << describe(no_dropout_on_dp);
    EXPECT_FALSE(no_row_dot.passed) << to_string(dtype) << describe(no_row_dot);
  }
}

// ---- HBM traffic against the IO model's closed forms (elements) -------------------------------------

struct TrafficRun {
  Problem p;
  HostInputs in;
  Flash1CpuResult fwd, bwd;
};

TrafficRun run_both(const Problem& p, const int32_t* lengths, int br, int bc) {
  TrafficRun r{p, make_inputs(p, true), {}, {}};
  const HostTensors t{r.in.q.data(), r.in.k.data(), r.in.v.data(), lengths};
  r.fwd = flash1_forward_cpu(p, t, br, bc);
  r.bwd = flash1_backward_cpu(p, t, r.in.d_o.data(), r.fwd, br, bc);
  return r;
}

TEST(Flash1Cpu, TrafficWithoutMaskIsTheClosedForm) {
  Problem p;
  p.batch = 2;
  p.heads = 3;
  p.seqlen_q = 100;
  p.seqlen_k = 257;
  p.head_dim = 32;
  const int br = 16, bc = 32;
  const TrafficRun r = run_both(p, nullptr, br, bc);
  const int64_t heads = p.batch * p.heads, nq = p.seqlen_q, nk = p.nk(), d = p.head_dim;
  const int64_t tc = (nk + bc - 1) / bc, tr = (nq + br - 1) / br;  // 9, 7
  ASSERT_EQ(tc, 9);
  ASSERT_EQ(tr, 7);

  const Flash1HbmTraffic& f = r.fwd.traffic;  // Algorithm 2
  EXPECT_EQ(f.q.reads, heads * tc * nq * d);
  EXPECT_EQ(f.k.reads, heads * nk * d);
  EXPECT_EQ(f.v.reads, heads * nk * d);
  EXPECT_EQ(f.o.reads, heads * (tc - 1) * nq * d);  // the first visit of Q_i does not read O_i
  EXPECT_EQ(f.o.writes, heads * tc * nq * d);
  EXPECT_EQ(f.l.reads, heads * (tc - 1) * nq);
  EXPECT_EQ(f.m.reads, heads * (tc - 1) * nq);
  EXPECT_EQ(f.l.writes, heads * tc * nq);
  EXPECT_EQ(f.m.writes, heads * tc * nq);
  EXPECT_EQ(f.q.writes + f.k.writes + f.v.writes + f.d_o.reads + f.dq.reads + f.dk.writes + f.dv.writes, 0);
  EXPECT_EQ(f.blocks_visited, heads * tr * tc);
  EXPECT_EQ(f.blocks_skipped, 0);
  EXPECT_EQ(r.fwd.hbm_reads, heads * (tc * nq * d + 2 * nk * d + (tc - 1) * nq * d + 2 * (tc - 1) * nq));
  EXPECT_EQ(r.fwd.hbm_writes, heads * (tc * nq * d + 2 * tc * nq));

  const Flash1HbmTraffic& g = r.bwd.traffic;  // Algorithm 4
  EXPECT_EQ(g.k.reads, heads * nk * d);
  EXPECT_EQ(g.v.reads, heads * nk * d);
  EXPECT_EQ(g.q.reads, heads * tc * nq * d);
  EXPECT_EQ(g.o.reads, heads * tc * nq * d);
  EXPECT_EQ(g.d_o.reads, heads * tc * nq * d);
  EXPECT_EQ(g.l.reads, heads * tc * nq);
  EXPECT_EQ(g.m.reads, heads * tc * nq);
  EXPECT_EQ(g.dq.reads, heads * (tc - 1) * nq * d);
  EXPECT_EQ(g.dq.writes, heads * tc * nq * d);
  EXPECT_EQ(g.dk.writes, heads * nk * d);
  EXPECT_EQ(g.dv.writes, heads * nk * d);
  EXPECT_EQ(g.o.writes + g.l.writes + g.m.writes, 0);
  EXPECT_EQ(r.bwd.hbm_reads, heads * (2 * nk * d + 3 * tc * nq * d + 2 * tc * nq + (tc - 1) * nq * d));
  EXPECT_EQ(r.bwd.hbm_writes, heads * (tc * nq * d + 2 * nk * d));
}

TEST(Flash1Cpu, CausalSkipsTheBlocksAboveTheDiagonal) {
  Problem p;
  p.batch = 1;
  p.heads = 2;
  p.seqlen_q = 64;
  p.head_dim = 32;
  p.causal = true;
  const int block = 16;  // T = 4 blocks each way: 10 on or below the diagonal, 6 above
  const TrafficRun r = run_both(p, nullptr, block, block);
  const int64_t heads = 2, d = 32, visited = 10, row_blocks = 4;
  for (const Flash1HbmTraffic* io : {&r.fwd.traffic, &r.bwd.traffic}) {
    EXPECT_EQ(io->blocks_visited, heads * visited);
    EXPECT_EQ(io->blocks_skipped, heads * 6);
    EXPECT_EQ(io->q.reads, heads * visited * block * d);
    EXPECT_EQ(io->k.reads, heads * 64 * d);
  }
  EXPECT_EQ(r.fwd.traffic.o.reads, heads * (visited - row_blocks) * block * d);
  EXPECT_EQ(r.fwd.traffic.o.writes, heads * visited * block * d);
  EXPECT_EQ(r.bwd.traffic.dq.reads, heads * (visited - row_blocks) * block * d);
  EXPECT_EQ(r.bwd.traffic.dq.writes, heads * visited * block * d);
  EXPECT_EQ(r.bwd.traffic.dk.writes, heads * 64 * d);
}

TEST(Flash1Cpu, CausalWithMoreKeysThanQueriesLoadsOnlyVisibleKeyBlocks) {
  Problem p;
  p.batch = 1;
  p.heads = 1;
  p.seqlen_q = 17;
  p.seqlen_k = 100;
  p.head_dim = 32;
  p.causal = true;
  // Queries 0..16 see keys 0..16 only: of Bc = 32 blocks, only block 0 is visible (2 Q blocks).
  const TrafficRun r = run_both(p, nullptr, 16, 32);
  const int64_t d = 32;
  EXPECT_EQ(r.fwd.traffic.k.reads, 32 * d);
  EXPECT_EQ(r.fwd.traffic.q.reads, 17 * d);
  EXPECT_EQ(r.fwd.traffic.o.reads, 0);
  EXPECT_EQ(r.fwd.traffic.o.writes, 17 * d);
  EXPECT_EQ(r.fwd.traffic.blocks_visited, 2);
  EXPECT_EQ(r.fwd.traffic.blocks_skipped, 6);
  EXPECT_EQ(r.bwd.traffic.k.reads, 32 * d);
  EXPECT_EQ(r.bwd.traffic.dk.writes, 100 * d);  // the masked key blocks still write their zero gradients
  for (int64_t e = 32 * d; e < 100 * d; ++e) ASSERT_EQ(r.bwd.dk[size_t(e)], 0.0f);
}

TEST(Flash1Cpu, PaddingSkipsKeyBlocksPastEachSequencesLength) {
  Problem p;
  p.batch = 3;
  p.heads = 1;
  p.seqlen_q = 64;
  p.head_dim = 32;
  const int32_t lengths[] = {20, 64, 0};  // key blocks of 16: 2, 4, 0 visible
  const TrafficRun r = run_both(p, lengths, 16, 16);
  const int64_t d = 32, n = 64;
  EXPECT_EQ(r.fwd.traffic.k.reads, (32 + 64 + 0) * d);
  EXPECT_EQ(r.fwd.traffic.q.reads, (2 + 4 + 0) * n * d);
  EXPECT_EQ(r.fwd.traffic.o.reads, (1 + 3 + 0) * n * d);
  EXPECT_EQ(r.fwd.traffic.o.writes, (2 + 4 + 0) * n * d);
  EXPECT_EQ(r.fwd.traffic.l.writes, (2 + 4 + 0) * n);
  EXPECT_EQ(r.fwd.traffic.blocks_visited, (2 + 4 + 0) * 4);
  EXPECT_EQ(r.fwd.traffic.blocks_skipped, (2 + 0 + 4) * 4);
  EXPECT_EQ(r.bwd.traffic.v.reads, (32 + 64 + 0) * d);
  EXPECT_EQ(r.bwd.traffic.d_o.reads, (2 + 4 + 0) * n * d);
  EXPECT_EQ(r.bwd.traffic.dq.reads, (1 + 3 + 0) * n * d);
  EXPECT_EQ(r.bwd.traffic.dv.writes, 3 * n * d);
}

// ---- what flash1 refuses ----------------------------------------------------------------------

TEST(Flash1Cpu, RefusesGqaBadBlocksAndMissingGradient) {
  Problem gqa;
  gqa.heads = 4;
  gqa.kv_heads = 2;
  gqa.seqlen_q = 8;
  gqa.head_dim = 32;
  const HostInputs gqa_in = make_inputs(gqa, false);
  EXPECT_THROW(flash1_forward_cpu(gqa, tensors_of(gqa, gqa_in), 16, 16), std::invalid_argument);

  Problem p = gqa;
  p.kv_heads = 0;
  const HostInputs in = make_inputs(p, true);
  const HostTensors t = tensors_of(p, in);
  EXPECT_THROW(flash1_forward_cpu(p, t, 0, 16), std::invalid_argument);
  EXPECT_THROW(flash1_forward_cpu(p, t, 16, -1), std::invalid_argument);
  const Flash1CpuResult fwd = flash1_forward_cpu(p, t, 16, 16);
  EXPECT_THROW(flash1_backward_cpu(p, t, nullptr, fwd, 16, 16), std::invalid_argument);
  EXPECT_THROW(flash1_backward_cpu(p, t, in.d_o.data(), Flash1CpuResult{}, 16, 16), std::invalid_argument);
}

}  // namespace
