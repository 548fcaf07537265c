// The float64 reference against a direct triple loop that materializes S and P, and bit for bit
// against its order of operations spelled out one scalar at a time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include <gtest/gtest.h>

#include "bench/core/reference.h"
#include "bench/core/inputs.h"
#include "bench/core/philox.h"
#include "bench/core/sparsity.h"

using namespace flashio;

namespace {

// Direct evaluation: S = scale·QKᵀ (all keys), mask to -inf, softmax, dropout on P
// (keep(b,h,i,j)/(1-p), offset 0), O = P·V.
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
          double w = std::isinf(s[size_t(j)]) ? 0.0 : std::exp(s[size_t(j)] - mx) / sum;
          if (p.dropout > 0.0)
            w *= dropout_keeps(p.seed, 0, p.dropout, uint32_t(b), uint32_t(h), uint32_t(i), uint32_t(j))
                     ? 1.0 / (1.0 - p.dropout)
                     : 0.0;
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

// The decoded heads' memory is the calling thread's, kept between calls (reference.cpp): a
// problem's reference after a larger one's, with other copies of its heads, is the same as before.
TEST(Reference, SameResultWhateverTheThreadComputedBefore) {
  Problem p;
  p.batch = 2; p.heads = 2; p.seqlen_q = 40; p.head_dim = 32; p.causal = true;
  const HostInputs in = make_inputs(p, true);
  HostTensors t{in.q.data(), in.k.data(), in.v.data(), nullptr};
  std::vector<double> a, al, b, bl, dka, dva, dkb, dvb;
  reference_rows(p, t, all_rows(p), a, al, 1);
  reference_dkdv_head(p, t, in.d_o.data(), 1, 1, dka, dva, 1);
  Problem big;
  big.batch = 1; big.heads = 3; big.seqlen_q = 20; big.seqlen_k = 700; big.head_dim = 128;
  const HostInputs bin = make_inputs(big, true);
  HostTensors bt{bin.q.data(), bin.k.data(), bin.v.data(), nullptr};
  std::vector<double> dq;
  reference_dq_rows(big, bt, bin.d_o.data(), all_rows(big), dq, 1);
  reference_rows(p, t, all_rows(p), b, bl, 1);
  reference_dkdv_head(p, t, in.d_o.data(), 1, 1, dkb, dvb, 1);
  EXPECT_EQ(a, b);
  EXPECT_EQ(al, bl);
  EXPECT_EQ(dka, dkb);
  EXPECT_EQ(dva, dvb);
}

// ---- dropout --------------------------------------------------------------------------

namespace {

struct ReferenceResult {
  std::vector<double> out, lse;
};

// The reference on inputs made once, up front (so a test that then changes p.seed or
// p.dropout changes only the mask, not Q, K, V).
ReferenceResult run_reference(const Problem& p, const HostInputs& in) {
  ReferenceResult r;
  HostTensors t{in.q.data(), in.k.data(), in.v.data(), p.padding != Padding::None ? in.key_lengths.data() : nullptr};
  reference_rows(p, t, all_rows(p), r.out, r.lse, 2);
  return r;
}

}  // namespace

TEST(ReferenceDropout, MatchesTripleLoopPlain) {
  Problem p;
  p.batch = 2; p.heads = 3; p.seqlen_q = 17; p.head_dim = 32; p.dropout = 0.1;
  expect_matches_triple_loop(p);
}

TEST(ReferenceDropout, MatchesTripleLoopCausalGqaPaddingNkDifferent) {
  Problem p;
  p.batch = 3; p.heads = 4; p.kv_heads = 2; p.seqlen_q = 13; p.seqlen_k = 29; p.head_dim = 16;
  p.causal = true; p.padding = Padding::Random; p.dropout = 0.5; p.dtype = DType::BF16;
  expect_matches_triple_loop(p);
}

// Dropout changes O (some weights are dropped) but not LSE, which is that of the scores.
TEST(ReferenceDropout, ChangesOutputButNotLse) {
  Problem p;
  p.batch = 1; p.heads = 2; p.seqlen_q = 31; p.head_dim = 16;
  const HostInputs in = make_inputs(p, false);
  const ReferenceResult plain = run_reference(p, in);
  p.dropout = 0.3;
  const ReferenceResult dropped = run_reference(p, in);
  EXPECT_EQ(dropped.lse, plain.lse);
  double max_change = 0;
  for (size_t e = 0; e < plain.out.size(); ++e) max_change = std::max(max_change, std::abs(dropped.out[e] - plain.out[e]));
  EXPECT_GT(max_change, 0.01);
}

// p = 1e-9: threshold ⌊1e-9 · 2^16⌋ = 0, so no element is dropped (any p < 2^-16 keeps all)
// and kept ones are scaled by 1 + 1e-9.
TEST(ReferenceDropout, TinyProbabilityEqualsNoDropout) {
  Problem p;
  p.batch = 2; p.heads = 2; p.seqlen_q = 23; p.head_dim = 32; p.causal = true;
  const HostInputs in = make_inputs(p, false);
  const ReferenceResult plain = run_reference(p, in);
  p.dropout = 1e-9;
  const ReferenceResult tiny = run_reference(p, in);
  for (size_t e = 0; e < plain.out.size(); ++e) ASSERT_NEAR(tiny.out[e], plain.out[e], 1e-8) << "element " << e;
  EXPECT_EQ(tiny.lse, plain.lse);
}

// Over seeds, O with dropout is an unbiased estimate of O without: E[keep/(1-p)] = 1, and
// Var[O_ic] = Σ_j P_ij² V_jc² · p/(1-p) for independent keeps. The mean over 200 seeds lies
// within 5 standard errors of the no-dropout output, and the spread over seeds matches that
// variance (so the seeds really draw different masks at rate 1-p).
TEST(ReferenceDropout, MeanOverSeedsApproachesNoDropout) {
  Problem p;
  p.batch = 1; p.heads = 2; p.seqlen_q = 8; p.head_dim = 8;
  const HostInputs in = make_inputs(p, false);
  const ReferenceResult plain = run_reference(p, in);

  const double drop = 0.2;
  const int kSeeds = 200;
  const int64_t d = p.head_dim, n = p.seqlen_q;
  // Predicted per-element variance from the no-dropout softmax weights.
  std::vector<double> variance(plain.out.size(), 0.0);
  for (int64_t h = 0; h < p.heads; ++h)
    for (int64_t i = 0; i < n; ++i) {
      const size_t row = size_t(h * n + i);
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c)
          s += double(to_float(p.dtype, in.q[size_t((h * n + i) * d + c)])) *
               double(to_float(p.dtype, in.k[size_t((h * n + j) * d + c)]));
        const double weight = std::exp(s * p.scale() - plain.lse[row]);
        for (int64_t c = 0; c < d; ++c) {
          const double v = to_float(p.dtype, in.v[size_t((h * n + j) * d + c)]);
          variance[row * size_t(d) + size_t(c)] += weight * weight * v * v * drop / (1 - drop);
        }
      }
    }

  std::vector<double> sum(plain.out.size(), 0.0), sum_sq(plain.out.size(), 0.0);
  Problem pd = p;
  pd.dropout = drop;
  for (int s = 0; s < kSeeds; ++s) {
    pd.seed = 1000 + uint64_t(s);
    const ReferenceResult r = run_reference(pd, in);
    for (size_t e = 0; e < sum.size(); ++e) {
      sum[e] += r.out[e];
      sum_sq[e] += r.out[e] * r.out[e];
    }
  }
  double observed_var = 0, predicted_var = 0;
  for (size_t e = 0; e < sum.size(); ++e) {
    const double mean = sum[e] / kSeeds;
    const double standard_error = std::sqrt(variance[e] / kSeeds);
    EXPECT_NEAR(mean, plain.out[e], 5 * standard_error + 1e-12) << "element " << e;
    observed_var += sum_sq[e] / kSeeds - mean * mean;
    predicted_var += variance[e];
  }
  EXPECT_NEAR(observed_var / predicted_var, 1.0, 0.15);
}

namespace {

// Backward in matrix form per (b, h): S, P, Z materialized; D = rowsum(dO∘O), not Σ P·dP.
void matrix_backward(const Problem& p, const HostInputs& in, std::vector<double>& dq, std::vector<double>& dk,
                     std::vector<double>& dv) {
  const int64_t d = p.head_dim, nq = p.seqlen_q, nk = p.nk(), group = p.heads / p.kvh();
  auto f = [&](uint16_t x) { return double(to_float(p.dtype, x)); };
  dq.assign(size_t(p.q_elements()), 0.0);
  dk.assign(size_t(p.kv_elements()), 0.0);
  dv.assign(size_t(p.kv_elements()), 0.0);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t hk = h / group;
      auto Q = [&](int64_t i, int64_t c) { return f(in.q[size_t(((b * p.heads + h) * nq + i) * d + c)]); };
      auto dO = [&](int64_t i, int64_t c) { return f(in.d_o[size_t(((b * p.heads + h) * nq + i) * d + c)]); };
      auto K = [&](int64_t j, int64_t c) { return f(in.k[size_t(((b * p.kvh() + hk) * nk + j) * d + c)]); };
      auto V = [&](int64_t j, int64_t c) { return f(in.v[size_t(((b * p.kvh() + hk) * nk + j) * d + c)]); };
      std::vector<double> P(size_t(nq * nk), 0.0), Z(size_t(nq * nk), 0.0), O(size_t(nq * d), 0.0);
      for (int64_t i = 0; i < nq; ++i) {
        double mx = -1e300, sum = 0;
        std::vector<double> s(static_cast<size_t>(nk));
        std::vector<bool> vis(static_cast<size_t>(nk));
        for (int64_t j = 0; j < nk; ++j) {
          vis[size_t(j)] = !(p.causal && j > i) && !(p.padding != Padding::None && j >= in.key_lengths[size_t(b)]);
          double acc = 0;
          for (int64_t c = 0; c < d; ++c) acc += Q(i, c) * K(j, c);
          s[size_t(j)] = acc * p.scale();
          if (vis[size_t(j)]) mx = std::max(mx, s[size_t(j)]);
        }
        for (int64_t j = 0; j < nk; ++j)
          if (vis[size_t(j)]) sum += std::exp(s[size_t(j)] - mx);
        for (int64_t j = 0; j < nk; ++j) {
          if (!vis[size_t(j)]) continue;
          P[size_t(i * nk + j)] = std::exp(s[size_t(j)] - mx) / sum;
          Z[size_t(i * nk + j)] = p.dropout > 0 ? (dropout_keeps(p.seed, 0, p.dropout, uint32_t(b), uint32_t(h), uint32_t(i), uint32_t(j))
                                                       ? 1.0 / (1.0 - p.dropout) : 0.0)
                                                : 1.0;
          for (int64_t c = 0; c < d; ++c) O[size_t(i * d + c)] += P[size_t(i * nk + j)] * Z[size_t(i * nk + j)] * V(j, c);
        }
      }
      for (int64_t i = 0; i < nq; ++i) {
        double D = 0;
        for (int64_t c = 0; c < d; ++c) D += dO(i, c) * O[size_t(i * d + c)];
        for (int64_t j = 0; j < nk; ++j) {
          double dp = 0;
          for (int64_t c = 0; c < d; ++c) dp += dO(i, c) * V(j, c);
          const double pij = P[size_t(i * nk + j)], zij = Z[size_t(i * nk + j)];
          const double ds = pij * (dp * zij - D);
          for (int64_t c = 0; c < d; ++c) {
            dq[size_t(((b * p.heads + h) * nq + i) * d + c)] += p.scale() * ds * K(j, c);
            dk[size_t(((b * p.kvh() + hk) * nk + j) * d + c)] += p.scale() * ds * Q(i, c);
            dv[size_t(((b * p.kvh() + hk) * nk + j) * d + c)] += pij * zij * dO(i, c);
          }
        }
      }
    }
}

void expect_backward_matches_matrix_form(const Problem& p) {
  const HostInputs in = make_inputs(p, true);
  std::vector<double> dq, dk, dv;
  matrix_backward(p, in, dq, dk, dv);
  HostTensors t{in.q.data(), in.k.data(), in.v.data(), p.padding != Padding::None ? in.key_lengths.data() : nullptr};
  std::vector<double> got_dq;
  reference_dq_rows(p, t, in.d_o.data(), all_rows(p), got_dq, 3);
  for (size_t e = 0; e < dq.size(); ++e) ASSERT_NEAR(got_dq[e], dq[e], 1e-10) << p.name() << " dq " << e;
  const int64_t per_head = p.nk() * p.head_dim;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t hk = 0; hk < p.kvh(); ++hk) {
      std::vector<double> gk, gv;
      reference_dkdv_head(p, t, in.d_o.data(), b, hk, gk, gv, 2);
      for (int64_t e = 0; e < per_head; ++e) {
        ASSERT_NEAR(gk[size_t(e)], dk[size_t((b * p.kvh() + hk) * per_head + e)], 1e-10) << p.name() << " dk " << e;
        ASSERT_NEAR(gv[size_t(e)], dv[size_t((b * p.kvh() + hk) * per_head + e)], 1e-10) << p.name() << " dv " << e;
      }
    }
}

}  // namespace

TEST(ReferenceBackward, MatchesMatrixFormPlain) {
  Problem p;
  p.batch = 2; p.heads = 2; p.seqlen_q = 19; p.head_dim = 16;
  expect_backward_matches_matrix_form(p);
}

TEST(ReferenceBackward, MatchesMatrixFormCausalGqaPaddingDropout) {
  Problem p;
  p.batch = 2; p.heads = 4; p.kv_heads = 2; p.seqlen_q = 13; p.seqlen_k = 27; p.head_dim = 16;
  p.causal = true; p.padding = Padding::Random; p.dropout = 0.3; p.dtype = DType::BF16;
  expect_backward_matches_matrix_form(p);
}

// ---- the order of operations, bit for bit ------------------------------------------------
//
// The reference is the ground truth of every record's check: a faster reference must give the
// same bits, not only close values. These loops spell out its order of operations one scalar at
// a time (each sum from 0.0 in the order of its index; dK, dV summed per thread over the thread's
// rows, then over the threads in order); the reference, however vectorised, must match them exactly.

namespace {

struct Ordered {
  std::vector<double> out, lse, dq, dk, dv;  // dk, dv: of K/V head (0, 0) and of the last one
};

Ordered ordered_reference(const Problem& p, const HostInputs& in, const std::vector<RowId>& rows, int dkdv_threads) {
  const int64_t d = p.head_dim, nq = p.seqlen_q, nk = p.nk(), group = p.heads / p.kvh();
  const double scale = p.scale(), inf = std::numeric_limits<double>::infinity();
  auto f = [&](uint16_t x) { return double(to_float(p.dtype, x)); };
  const auto mask = p.sparse() ? std::optional<BlockMask>(make_block_mask(p)) : std::nullopt;
  const std::vector<int32_t> lengths = key_lengths(p);
  auto visible_of = [&](const RowId& r) {
    int64_t v = p.key_padded() ? std::min<int64_t>(nk, lengths[size_t(r.b)]) : nk;
    return p.causal ? std::min<int64_t>(v, r.i + 1) : v;
  };
  auto allowed = [&](const RowId& r, int64_t j) { return !mask || mask->allows(r.i, j); };
  auto keep = [&](const RowId& r, int64_t j) {
    if (p.dropout <= 0) return 1.0;
    return dropout_keeps(p.seed, 0, p.dropout, uint32_t(r.b), uint32_t(r.h), uint32_t(r.i), uint32_t(j))
               ? dropout_scale(p.dropout)
               : 0.0;
  };
  auto Q = [&](const RowId& r, int64_t c) { return f(in.q[size_t(((r.b * p.heads + r.h) * nq + r.i) * d + c)]); };
  auto dO = [&](const RowId& r, int64_t c) { return f(in.d_o[size_t(((r.b * p.heads + r.h) * nq + r.i) * d + c)]); };
  auto K = [&](const RowId& r, int64_t j, int64_t c) {
    return f(in.k[size_t(((r.b * p.kvh() + r.h / group) * nk + j) * d + c)]);
  };
  auto V = [&](const RowId& r, int64_t j, int64_t c) {
    return f(in.v[size_t(((r.b * p.kvh() + r.h / group) * nk + j) * d + c)]);
  };
  // P (normalised, no dropout) and dS of one row over its visible keys; false when it sees none.
  auto row_grad = [&](const RowId& r, std::vector<double>& prob, std::vector<double>& ds) {
    const int64_t visible = visible_of(r);
    prob.assign(size_t(std::max<int64_t>(visible, 0)), 0.0);
    ds.assign(prob.size(), 0.0);
    bool any = false;
    for (int64_t j = 0; j < visible; ++j) any = any || allowed(r, j);
    if (!any) return;
    double mx = -inf;
    for (int64_t j = 0; j < visible; ++j) {
      double s = 0.0;
      for (int64_t c = 0; c < d; ++c) s += Q(r, c) * K(r, j, c);
      prob[size_t(j)] = allowed(r, j) ? s * scale : -inf;
      mx = std::max(mx, prob[size_t(j)]);
    }
    double sum = 0.0;
    for (auto& x : prob) sum += (x = std::exp(x - mx));
    for (auto& x : prob) x /= sum;
    double dsum = 0.0;
    for (int64_t j = 0; j < visible; ++j) {
      double dp = 0.0;
      for (int64_t c = 0; c < d; ++c) dp += dO(r, c) * V(r, j, c);
      ds[size_t(j)] = dp * keep(r, j);
      dsum += prob[size_t(j)] * ds[size_t(j)];
    }
    for (int64_t j = 0; j < visible; ++j) ds[size_t(j)] = prob[size_t(j)] * (ds[size_t(j)] - dsum);
  };

  Ordered o;
  o.out.assign(rows.size() * size_t(d), 0.0);
  o.lse.assign(rows.size(), 0.0);
  o.dq.assign(rows.size() * size_t(d), 0.0);
  std::vector<double> s, prob, ds;
  for (size_t n = 0; n < rows.size(); ++n) {
    const RowId& r = rows[n];
    const int64_t visible = visible_of(r);
    bool any = false;
    for (int64_t j = 0; j < visible; ++j) any = any || allowed(r, j);
    if (!any) {
      o.lse[n] = -inf;
      continue;
    }
    s.assign(size_t(visible), 0.0);
    double mx = -inf;
    for (int64_t j = 0; j < visible; ++j) {
      double acc = 0.0;
      for (int64_t c = 0; c < d; ++c) acc += Q(r, c) * K(r, j, c);
      s[size_t(j)] = allowed(r, j) ? acc * scale : -inf;
      mx = std::max(mx, s[size_t(j)]);
    }
    double sum = 0.0;
    for (auto& x : s) sum += (x = std::exp(x - mx));
    for (int64_t j = 0; j < visible; ++j) {
      if (keep(r, j) == 0.0) continue;  // a dropped key is skipped, not added as 0·V
      const double w = s[size_t(j)] / sum * (p.dropout > 0 ? dropout_scale(p.dropout) : 1.0);
      for (int64_t c = 0; c < d; ++c) o.out[n * size_t(d) + size_t(c)] += w * V(r, j, c);
    }
    o.lse[n] = mx + std::log(sum);
    row_grad(r, prob, ds);
    for (int64_t j = 0; j < int64_t(ds.size()); ++j)
      for (int64_t c = 0; c < d; ++c) o.dq[n * size_t(d) + size_t(c)] += scale * ds[size_t(j)] * K(r, j, c);
  }
  // dK, dV of a K/V head: its query rows (the group's heads, rows in order) dealt to the threads
  // round-robin, each thread's sum over its rows in order, then the threads' sums in order.
  for (auto [b, hk] : {std::pair<int64_t, int64_t>{0, 0}, {p.batch - 1, p.kvh() - 1}}) {
    std::vector<RowId> head_rows;
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
      for (int64_t i = 0; i < nq; ++i) head_rows.push_back({b, h, i});
    const size_t threads = std::min<size_t>(size_t(dkdv_threads), head_rows.size());
    std::vector<double> dk(size_t(nk * d), 0.0), dv(size_t(nk * d), 0.0);
    for (size_t t = 0; t < threads; ++t) {
      std::vector<double> pk(size_t(nk * d), 0.0), pv(size_t(nk * d), 0.0);
      for (size_t n = t; n < head_rows.size(); n += threads) {
        const RowId& r = head_rows[n];
        row_grad(r, prob, ds);
        for (int64_t j = 0; j < int64_t(ds.size()); ++j)
          for (int64_t c = 0; c < d; ++c) {
            pv[size_t(j * d + c)] += prob[size_t(j)] * keep(r, j) * dO(r, c);
            pk[size_t(j * d + c)] += scale * ds[size_t(j)] * Q(r, c);
          }
      }
      for (size_t e = 0; e < dk.size(); ++e) {
        dk[e] += pk[e];
        dv[e] += pv[e];
      }
    }
    o.dk.insert(o.dk.end(), dk.begin(), dk.end());
    o.dv.insert(o.dv.end(), dv.begin(), dv.end());
  }
  return o;
}

// Equal as bits (NaN equal to NaN, +0 different from -0).
void expect_same_bits(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t e = 0; e < got.size(); ++e) {
    uint64_t a, b;
    std::memcpy(&a, &got[e], 8);
    std::memcpy(&b, &want[e], 8);
    ASSERT_EQ(a, b) << what << " element " << e << ": " << got[e] << " against " << want[e];
  }
}

void expect_reference_in_order(const Problem& p, bool sampled = false) {
  const HostInputs in = make_inputs(p, true);
  std::vector<RowId> rows = all_rows(p);
  if (sampled) {  // every 7th row, last first: the reference keeps the order it is given
    std::vector<RowId> some;
    for (size_t r = rows.size(); r-- > 0;)
      if (r % 7 == 3) some.push_back(rows[r]);
    rows = some;
  }
  const int kThreads = 3;
  const Ordered want = ordered_reference(p, in, rows, kThreads);
  HostTensors t{in.q.data(), in.k.data(), in.v.data(), p.key_padded() ? in.key_lengths.data() : nullptr};
  Ordered got;
  reference_rows(p, t, rows, got.out, got.lse, kThreads);
  reference_dq_rows(p, t, in.d_o.data(), rows, got.dq, kThreads);
  for (auto [b, hk] : {std::pair<int64_t, int64_t>{0, 0}, {p.batch - 1, p.kvh() - 1}}) {
    std::vector<double> dk, dv;
    reference_dkdv_head(p, t, in.d_o.data(), b, hk, dk, dv, kThreads);
    got.dk.insert(got.dk.end(), dk.begin(), dk.end());
    got.dv.insert(got.dv.end(), dv.begin(), dv.end());
  }
  expect_same_bits(got.out, want.out, p.name() + " O");
  expect_same_bits(got.lse, want.lse, p.name() + " LSE");
  expect_same_bits(got.dq, want.dq, p.name() + " dQ");
  expect_same_bits(got.dk, want.dk, p.name() + " dK");
  expect_same_bits(got.dv, want.dv, p.name() + " dV");
}

}  // namespace

TEST(ReferenceBits, PlainHeadDims) {
  for (int64_t d : {8, 32, 40, 64, 96, 128, 256}) {
    Problem p;
    p.batch = 1; p.heads = 2; p.seqlen_q = 77; p.head_dim = d;
    expect_reference_in_order(p);
  }
}

TEST(ReferenceBits, CausalGqaNkDifferentSampledRows) {
  Problem p;
  p.batch = 2; p.heads = 4; p.kv_heads = 2; p.seqlen_q = 70; p.seqlen_k = 131; p.head_dim = 64; p.causal = true;
  expect_reference_in_order(p, true);
}

TEST(ReferenceBits, PaddingDropoutBf16) {
  Problem p;
  p.batch = 3; p.heads = 2; p.seqlen_q = 45; p.seqlen_k = 150; p.head_dim = 96;
  p.padding = Padding::Random; p.dropout = 0.2; p.dtype = DType::BF16;
  expect_reference_in_order(p);
}

TEST(ReferenceBits, BlockSparse) {
  Problem p;
  p.batch = 1; p.heads = 2; p.seqlen_q = 200; p.head_dim = 32;
  p.pattern = "random"; p.sparse_density = 0.4; p.sparse_block = 32;
  expect_reference_in_order(p);
}

// Keys in several chunks of the row tiles' loops (128 keys at d = 256) and rows in several tiles
// (more than eight per thread), with causal rows that end inside a chunk, dropout's listed keys
// across chunks, and GQA.
TEST(ReferenceBits, KeysInSeveralChunksRowsInSeveralTiles) {
  Problem p;
  p.batch = 1; p.heads = 2; p.kv_heads = 1; p.seqlen_q = 40; p.seqlen_k = 300; p.head_dim = 256;
  expect_reference_in_order(p);
  p.causal = true;
  p.seqlen_k = 0;
  p.seqlen_q = 290;
  p.dropout = 0.3;
  expect_reference_in_order(p, true);
}
