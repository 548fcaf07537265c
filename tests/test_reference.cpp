// The float64 reference against a direct triple loop that materializes S and P.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "baselines/reference/reference.h"
#include "bench/inputs.h"

using namespace flashio;

namespace {

// Direct evaluation: S = scale·QKᵀ (all keys), mask to -inf, softmax, O = P·V.
void triple_loop(const Problem& p, const HostInputs& in, std::vector<double>& out, std::vector<double>& lse) {
  const int64_t d = p.head_dim, nq = p.seqlen_q, nk = p.nk(), group = p.heads / p.kvh();
  out.assign(size_t(p.q_elements()), 0.0);
  lse.assign(size_t(p.batch * p.heads * nq), 0.0);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < nq; ++i) {
        std::vector<double> s(static_cast<size_t>(nk));
        for (int64_t j = 0; j < nk; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < d; ++c)
            acc += double(to_float(p.dtype, in.q[size_t(((b * p.heads + h) * nq + i) * d + c)])) *
                   double(to_float(p.dtype, in.k[size_t(((b * p.kvh() + hk) * nk + j) * d + c)]));
          const bool masked = (p.causal && j > i) || (p.padding != Padding::None && j >= in.key_lengths[size_t(b)]);
          s[size_t(j)] = masked ? -std::numeric_limits<double>::infinity() : acc * p.scale();
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (double x : s) mx = std::max(mx, x);
        double sum = 0;
        for (double x : s) sum += std::isinf(x) ? 0.0 : std::exp(x - mx);
        const size_t row = size_t((b * p.heads + h) * nq + i);
        lse[row] = sum > 0 ? mx + std::log(sum) : -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < nk; ++j) {
          const double w = std::isinf(s[size_t(j)]) ? 0.0 : std::exp(s[size_t(j)] - mx) / sum;
          for (int64_t c = 0; c < d; ++c)
            out[row * size_t(d) + size_t(c)] += w * double(to_float(p.dtype, in.v[size_t(((b * p.kvh() + hk) * nk + j) * d + c)]));
        }
      }
    }
}

void expect_matches_triple_loop(const Problem& p) {
  const HostInputs in = make_inputs(p, false);
  std::vector<double> want, want_lse, got, got_lse;
  triple_loop(p, in, want, want_lse);
  HostTensors t{in.q.data(), in.k.data(), in.v.data(), p.padding != Padding::None ? in.key_lengths.data() : nullptr};
  reference_rows(p, t, all_rows(p), got, got_lse, 3);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << p.name() << " element " << i;
  for (size_t i = 0; i < got_lse.size(); ++i) ASSERT_NEAR(got_lse[i], want_lse[i], 1e-12) << p.name() << " row " << i;
}

}  // namespace

TEST(Reference, MatchesTripleLoopPlain) {
  Problem p;
  p.batch = 2; p.heads = 3; p.seqlen_q = 17; p.head_dim = 32;
  expect_matches_triple_loop(p);
}

TEST(Reference, MatchesTripleLoopCausalBf16) {
  Problem p;
  p.batch = 1; p.heads = 2; p.seqlen_q = 33; p.head_dim = 64; p.causal = true; p.dtype = DType::BF16;
  expect_matches_triple_loop(p);
}

TEST(Reference, MatchesTripleLoopGqaPaddingNkDifferent) {
  Problem p;
  p.batch = 3; p.heads = 4; p.kv_heads = 2; p.seqlen_q = 5; p.seqlen_k = 29; p.head_dim = 16;
  p.padding = Padding::Random;
  expect_matches_triple_loop(p);
}

TEST(Reference, SingleKeyGivesItsValueRow) {
  Problem p;
  p.seqlen_q = 1; p.head_dim = 8;
  const HostInputs in = make_inputs(p, false);
  std::vector<double> out, lse;
  reference_rows(p, {in.q.data(), in.k.data(), in.v.data(), nullptr}, all_rows(p), out, lse, 1);
  for (int c = 0; c < 8; ++c) EXPECT_DOUBLE_EQ(out[size_t(c)], double(half_to_float(in.v[size_t(c)])));
}

TEST(Reference, RowWithNoVisibleKeyIsZeroWithInfiniteLse) {
  Problem p;
  p.batch = 1; p.seqlen_q = 4; p.head_dim = 8;
  const HostInputs in = make_inputs(p, false);
  const int32_t zero_len = 0;
  std::vector<double> out, lse;
  reference_rows(p, {in.q.data(), in.k.data(), in.v.data(), &zero_len}, all_rows(p), out, lse, 1);
  for (double x : out) EXPECT_EQ(x, 0.0);
  for (double l : lse) EXPECT_TRUE(std::isinf(l) && l < 0);
}

TEST(Reference, ResultDoesNotDependOnThreadCount) {
  Problem p;
  p.batch = 2; p.heads = 2; p.seqlen_q = 40; p.head_dim = 32; p.causal = true;
  const HostInputs in = make_inputs(p, false);
  HostTensors t{in.q.data(), in.k.data(), in.v.data(), nullptr};
  std::vector<double> a, al, b, bl;
  reference_rows(p, t, all_rows(p), a, al, 1);
  reference_rows(p, t, all_rows(p), b, bl, 5);
  EXPECT_EQ(a, b);
  EXPECT_EQ(al, bl);
}
