#include <cmath>

#include <gtest/gtest.h>

#include "bench/measure/check.h"
#include "bench/core/inputs.h"
#include "bench/core/varlen.h"

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

// compare_tensor takes pieces of kComparePiece elements on several threads: the figures are
// those of one pass over the elements, whichever piece holds the worst element or a NaN.
TEST(Check, EveryPieceOfALargeTensorCounts) {
  const size_t n = 3 * kComparePiece + 17;
  std::vector<double> ref(n), got(n);
  for (size_t e = 0; e < n; ++e) ref[e] = got[e] = std::sin(double(e)) + 2.0;
  for (size_t e = 0; e < n; e += 997) got[e] += 1e-4 * double(e % 7);
  got[n - 3] = ref[n - 3] + 0.5;  // the worst, in the last (short) piece
  const TensorCheck t = compare_tensor("x", got, ref, 1e-2, 1e-2);
  double abs_err = 0, rel_err = 0, ratio = 0;
  for (size_t e = 0; e < n; ++e) {
    const double err = std::abs(got[e] - ref[e]);
    abs_err = std::max(abs_err, err);
    rel_err = std::max(rel_err, err / std::max(std::abs(ref[e]), 1e-6));
    ratio = std::max(ratio, err / (t.atol + t.rtol * std::abs(ref[e])));
  }
  EXPECT_EQ(t.elements, int64_t(n));
  EXPECT_EQ(t.max_abs_err, abs_err);
  EXPECT_EQ(t.max_rel_err, rel_err);
  EXPECT_EQ(t.worst_ratio, ratio);
  EXPECT_EQ(t.atol, 1e-2 * rms(ref));
  EXPECT_FALSE(t.nan);
  got[kComparePiece + 5] = std::nan("");  // a NaN in the second piece only
  const TensorCheck bad = compare_tensor("x", got, ref, 1e-2, 1e-2);
  EXPECT_TRUE(bad.nan);
  EXPECT_TRUE(std::isnan(bad.worst_ratio));
}

// The checks compare 16-bit words as the values they hold (compare_words), with O's atol made once
// per problem (output_atol): the same figures as compare_tensor on those values with atol a
// fraction of the reference's RMS, a wrong element and the poison NaN included.
TEST(Check, WordsCompareAsTheirValues) {
  Fixture f(small());
  f.out[77] = from_float(f.p.dtype, half_to_float(f.out[77]) + 0.05f);
  const Tolerance tol = tolerance_for(f.p.dtype);
  for (int poison = 0; poison < 2; ++poison) {
    if (poison) f.out[5] = 0xFFFF;
    std::vector<double> values(f.out.size());  // all rows, in order
    for (size_t e = 0; e < values.size(); ++e) values[e] = to_float(f.p.dtype, f.out[e]);
    const TensorCheck v = compare_tensor("o", values, f.ref, tol.atol_rms, tol.rtol);
    const TensorCheck w = compare_words("o", f.out.data(), f.p.dtype, f.ref, output_atol(f.p.dtype, f.ref), tol.rtol, true);
    EXPECT_EQ(w.atol, v.atol);
    EXPECT_EQ(w.rtol, v.rtol);
    EXPECT_EQ(w.elements, v.elements);
    EXPECT_EQ(w.nan, v.nan);
    EXPECT_EQ(w.nan, poison == 1);
    if (v.nan) continue;
    EXPECT_EQ(w.max_abs_err, v.max_abs_err);
    EXPECT_EQ(w.max_rel_err, v.max_rel_err);
    EXPECT_EQ(w.worst_ratio, v.worst_ratio);
    EXPECT_GT(w.worst_ratio, 1.0);  // the wrong element
  }
}

// The gradients' atol: atol_rms times each reference's RMS, floored at a tenth of the largest RMS
// of non-zero elements (zeros, as masked keys' gradients, left out of the floor only).
TEST(Check, GradientAtolsAreEachRmsFlooredByTheLargest) {
  const std::vector<double> dq = {0.0, 0.0, 0.0, 3e-3}, dk = {1.0, -1.0, 0.0, 0.0}, dv = {2e-2, 2e-2};
  const GradientAtols a = gradient_atols(DType::F16, dq, dk, dv);
  const double atol_rms = gradient_tolerance_for(DType::F16).atol_rms;
  const double floor = 0.1 * 1.0;  // dk's non-zero RMS
  EXPECT_EQ(a.dq, atol_rms * std::max(rms(dq), floor));
  EXPECT_EQ(a.dk, atol_rms * rms(dk));
  EXPECT_EQ(a.dv, atol_rms * floor);
}

TEST(Check, WrongLseFails) {
  Fixture f(small());
  f.lse[3] += 0.01f;
  EXPECT_FALSE(compare_with_reference(f.p, f.rows, f.ref, f.ref_lse, f.out.data(), &f.lse).passed);
  EXPECT_TRUE(compare_with_reference(f.p, f.rows, f.ref, f.ref_lse, f.out.data(), nullptr).passed);
}

// The runner compares the rows it gathered on the GPU (compare_row_words_with_reference): the same
// verdict and figures as from the whole tensor, on a sample of rows out of order of the layout.
TEST(Check, TheGatheredRowsGiveTheSameResultAsTheWholeTensor) {
  Problem p = small();
  p.seqlen_q = 300;
  const HostInputs in = make_inputs(p, false);
  const auto rows = rows_to_check(p, 2e5);
  ASSERT_LT(rows.size(), size_t(p.batch * p.heads * p.seqlen_q));  // sampled
  std::vector<double> ref, ref_lse;
  reference_rows(p, {in.q.data(), in.k.data(), in.v.data(), nullptr}, rows, ref, ref_lse, 2);
  std::vector<uint16_t> full(size_t(p.q_elements()), 0x7E00);  // NaN where no row is checked
  std::vector<float> lse(size_t(p.batch * p.heads * p.seqlen_q), NAN);
  std::vector<uint16_t> out_rows;
  std::vector<double> lse_rows;
  const std::vector<int64_t> cu = cu_seqlens(p);
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t at = stored_row(p, cu, rows[r]);
    for (int64_t c = 0; c < p.head_dim; ++c) {
      const uint16_t w = from_float(p.dtype, float(ref[r * size_t(p.head_dim) + size_t(c)] * (1 + 1e-3 * double(c % 3))));
      full[size_t(at * p.head_dim + c)] = w;
      out_rows.push_back(w);
    }
    lse[size_t(at)] = float(ref_lse[r]) + 1e-4f * float(r % 5);
    lse_rows.push_back(lse[size_t(at)]);
  }
  const CheckResult whole = compare_with_reference(p, rows, ref, ref_lse, full.data(), &lse);
  const CheckResult gathered = compare_row_words_with_reference(p, rows.size(), ref, output_atol(p.dtype, ref), ref_lse,
                                                                out_rows.data(), &lse_rows);
  EXPECT_TRUE(whole.passed);
  EXPECT_EQ(gathered.passed, whole.passed);
  EXPECT_EQ(gathered.worst_ratio, whole.worst_ratio);
  EXPECT_EQ(gathered.max_abs_err, whole.max_abs_err);
  EXPECT_EQ(gathered.atol, whole.atol);
  EXPECT_EQ(gathered.rows_checked, whole.rows_checked);
  EXPECT_EQ(gathered.scope, "sampled rows");
  ASSERT_EQ(gathered.tensors.size(), whole.tensors.size());
  for (size_t t = 0; t < whole.tensors.size(); ++t) EXPECT_EQ(gathered.tensors[t].worst_ratio, whole.tensors[t].worst_ratio);
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
