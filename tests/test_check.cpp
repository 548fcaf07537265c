#include <cmath>

#include <gtest/gtest.h>

#include "bench/measure/check.h"
#include "bench/core/inputs.h"

using namespace flashio;

namespace {

struct Fixture {
  Problem p;
  HostInputs in;
  std::vector<RowId> rows;
  std::vector<double> ref, ref_lse;
  std::vector<uint16_t> out;
  std::vector<float> lse;
  explicit Fixture(Problem prob) : p(prob), in(make_inputs(prob, false)) {
    rows = all_rows(p);
    reference_rows(p, {in.q.data(), in.k.data(), in.v.data(), nullptr}, rows, ref, ref_lse, 2);
    out.resize(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) out[i] = from_float(p.dtype, float(ref[i]));
    lse.assign(ref_lse.begin(), ref_lse.end());
  }
};

Problem small() {
  Problem p;
  p.batch = 2; p.heads = 2; p.seqlen_q = 33; p.head_dim = 32;
  return p;
}

}  // namespace

TEST(Check, RoundedReferencePasses) {
  Fixture f(small());
  const CheckResult c = compare_with_reference(f.p, f.rows, f.ref, f.ref_lse, f.out.data(), &f.lse);
  EXPECT_TRUE(c.passed);
  EXPECT_LT(c.worst_ratio, 0.2);
  EXPECT_EQ(c.scope, "all rows");
  EXPECT_EQ(c.rows_checked, 2 * 2 * 33);
}

TEST(Check, OneWrongElementFails) {
  Fixture f(small());
  f.out[77] = from_float(f.p.dtype, half_to_float(f.out[77]) + 0.05f);
  EXPECT_FALSE(compare_with_reference(f.p, f.rows, f.ref, f.ref_lse, f.out.data(), &f.lse).passed);
}

TEST(Check, NanNeverPasses) {
  Fixture f(small());
  f.out[5] = 0xFFFF;  // the runner's poison value
  const CheckResult c = compare_with_reference(f.p, f.rows, f.ref, f.ref_lse, f.out.data(), &f.lse);
  EXPECT_FALSE(c.passed);
  EXPECT_TRUE(std::isnan(c.worst_ratio));
}

TEST(Check, WrongLseFails) {
  Fixture f(small());
  f.lse[3] += 0.01f;
  EXPECT_FALSE(compare_with_reference(f.p, f.rows, f.ref, f.ref_lse, f.out.data(), &f.lse).passed);
  EXPECT_TRUE(compare_with_reference(f.p, f.rows, f.ref, f.ref_lse, f.out.data(), nullptr).passed);
}

TEST(Check, ToleranceScalesWithOutputSoGarbageFailsAtLongSequences) {
  // At N = 4096 outputs are small (≈ 1/sqrt(N)); zero output must not pass.
  Problem p;
  p.seqlen_q = 4096; p.head_dim = 64;
  const HostInputs in = make_inputs(p, false);
  const auto rows = rows_to_check(p, 1e7);
  std::vector<double> ref, ref_lse;
  reference_rows(p, {in.q.data(), in.k.data(), in.v.data(), nullptr}, rows, ref, ref_lse, 2);
  std::vector<uint16_t> zeros(size_t(p.q_elements()), 0);
  EXPECT_FALSE(compare_with_reference(p, rows, ref, ref_lse, zeros.data(), nullptr).passed);
}

TEST(Check, LargeProblemsAreSampledWithEdgeRows) {
  Problem p;
  p.batch = 4; p.heads = 16; p.seqlen_q = 16384; p.head_dim = 128;
  const auto rows = rows_to_check(p, 4e9);
  EXPECT_LT(rows.size(), size_t(p.batch * p.heads * p.seqlen_q));
  bool first = false, last = false;
  for (const auto& r : rows) {
    first |= r.b == 0 && r.h == 0 && r.i == 0;
    last |= r.b == 3 && r.h == 15 && r.i == 16383;
  }
  EXPECT_TRUE(first);
  EXPECT_TRUE(last);
  EXPECT_LE(reference_cost(p, int64_t(rows.size())), 4e9 * 1.01);
}
