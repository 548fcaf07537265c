// The fused kernels' shared steps on the CPU (kernels/common/online_softmax.h, masks.h): a
// FlashAttention-2 forward built from OnlineSoftmax::update, the mask policies' apply and trip
// counts, against the float64 reference and against flash1_cpu (kernels/flash1/flash1_cpu.h), at
// odd sizes and tiles that do not divide N; the policies' fragment geometry for the GPU's C
// fragments (32 emulated lanes); softmax_merge (flash1's line 13) against a direct computation.
// Run: ./build/tests/flashio_cpu_tests --gtest_filter='OnlineSoftmax*:MaskPolicy*'
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench/core/inputs.h"
#include "bench/core/reference.h"
#include "bench/measure/check.h"
#include "kernels/common/masks.h"
#include "kernels/common/online_softmax.h"
#include "kernels/flash1/flash1_cpu.h"

using namespace flashio;
using namespace flashio::kernels;

namespace {

constexpr int kBlockN = 16;  // keys per K/V tile (fragments of 8 two-column tiles)

struct ForwardOut {
  std::vector<float> o, lse;  // [B, H, Nq, d], [B, H, Nq]
};

// Key visibility as the suite defines it (reference.h): causal top-left, key padding by length.
bool visible(bool causal, int nk, int row, int col) { return col < nk && (!causal || col <= row); }

// FlashAttention-2's forward (Algorithm 1) for one problem, with the kernels' helpers: one
// "thread" holds two query rows (r, r + 1) whole; a score fragment is float[kBlockN / 2][4]
// (tile j: columns 2j, 2j + 1 of both rows), an output fragment float[d / 2][4]. K/V tiles are
// visited last-to-first, as the kernels visit them, and only where the mask policy says.
template <class Mask>
void fa2_forward_rows(const Problem& p, const HostTensors& t, int64_t b, int64_t h, int r, const Mask& mask,
                      float scale_log2, ForwardOut& out) {
  const int nq = int(p.seqlen_q), nk_all = int(p.nk()), d = int(p.head_dim);
  const int64_t head = b * p.heads + h, kv_head = b * p.kvh() + h / (p.heads / p.kvh());
  std::vector<float> q(size_t(2 * d), 0.f);  // rows r, r + 1 (zero past Nq)
  for (int hr = 0; hr < 2; ++hr)
    for (int e = 0; e < d && r + hr < nq; ++e)
      q[size_t(hr * d + e)] = to_float(p.dtype, t.q[(head * nq + r + hr) * d + e]);
  float acc_o[64][4] = {};  // (rows r, r + 1; d ≤ 128): tile c / 2, element 2·hr + c % 2
  OnlineSoftmax softmax;
  softmax.init();
  const KvTileRange tiles = mask.kv_tiles(0, r + 2, kBlockN);
  for (int it = 0; it < tiles.count; ++it) {
    const int col0 = tiles(it) * kBlockN;
    float s[kBlockN / 2][4];  // S = Q·K_jᵀ, raw scores
    for (int j = 0; j < kBlockN / 2; ++j)
      for (int e = 0; e < 4; ++e) {
        const int col = col0 + 2 * j + (e & 1);
        float dot = 0.f;
        for (int c = 0; c < d && col < nk_all; ++c)
          dot += q[size_t((e >> 1) * d + c)] * to_float(p.dtype, t.k[(kv_head * nk_all + col) * d + c]);
        s[j][e] = dot;
      }
    if (mask.partial(r, col0, kBlockN)) mask.template apply<1, 2>(s, r, col0, 0);
    softmax.update<RowInThread>(s, acc_o, scale_log2);  // row max, rescale, P = exp, row sum
    // O += P·V_j with P rounded to the dtype (the tensor cores' A operand).
    for (int hr = 0; hr < 2; ++hr)
      for (int j = 0; j < kBlockN / 2; ++j)
        for (int e = 0; e < 2; ++e) {
          const int col = col0 + 2 * j + e;
          if (col >= nk_all) continue;
          const float pe = to_float(p.dtype, from_float(p.dtype, s[j][2 * hr + e]));
          for (int c = 0; c < d; ++c)
            acc_o[c / 2][2 * hr + (c & 1)] += pe * to_float(p.dtype, t.v[(kv_head * nk_all + col) * d + c]);
        }
  }
  for (int hr = 0; hr < 2 && r + hr < nq; ++hr) {
    const float l = softmax.total<RowInThread>(hr);
    const float inv = OnlineSoftmax::output_scale<false>(l, 1.f);
    for (int c = 0; c < d; ++c) out.o[size_t((head * nq + r + hr) * d + c)] = acc_o[c / 2][2 * hr + (c & 1)] * inv;
    out.lse[size_t(head * nq + r + hr)] = softmax.lse(hr, l, scale_log2);
  }
}

ForwardOut fa2_forward(const Problem& p, const HostTensors& t) {
  ForwardOut out;
  out.o.assign(size_t(p.batch * p.heads * p.seqlen_q * p.head_dim), 0.f);
  out.lse.assign(size_t(p.batch * p.heads * p.seqlen_q), 0.f);
  const float scale_log2 = float(p.scale() * 1.4426950408889634);  // as fill_problem_params
  for (int64_t b = 0; b < p.batch; ++b) {
    const int nk = t.key_lengths ? std::min(int(t.key_lengths[b]), int(p.nk())) : int(p.nk());
    for (int64_t h = 0; h < p.heads; ++h)
      for (int r = 0; r < int(p.seqlen_q); r += 2) {
        if (p.causal) {
          fa2_forward_rows(p, t, b, h, r, CausalMask{nk}, scale_log2, out);
        } else {
          fa2_forward_rows(p, t, b, h, r, KeyPaddingMask{nk}, scale_log2, out);
        }
      }
  }
  return out;
}

std::vector<double> widen(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

struct SoftmaxCase {
  int64_t seqlen_q, seqlen_k, head_dim, heads, kv_heads;
  bool causal, padding;
  DType dtype;
};

std::string case_name(const SoftmaxCase& c) {
  std::string s = "nq" + std::to_string(c.seqlen_q) + "_nk" + std::to_string(c.seqlen_k) + "_d" +
                  std::to_string(c.head_dim) + "_h" + std::to_string(c.heads) + "kv" + std::to_string(c.kv_heads) +
                  "_" + to_string(c.dtype);
  if (c.causal) s += "_causal";
  if (c.padding) s += "_padding";
  return s;
}

Problem problem_of(const SoftmaxCase& c) {
  Problem p;
  p.batch = 2;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.seqlen_q = c.seqlen_q;
  p.seqlen_k = c.seqlen_k;
  p.head_dim = c.head_dim;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.padding = c.padding ? Padding::Random : Padding::None;
  p.seed = 0x50f7 + uint64_t(c.seqlen_q * 7 + c.seqlen_k);
  return p;
}

class OnlineSoftmaxForward : public ::testing::TestWithParam<SoftmaxCase> {};

// O and L of the FA-2 forward built from the helpers: within the suite's tolerance of the float64
// reference, and (MHA cases) within the same tolerance of flash1_cpu, whose schedule and merge
// (Algorithm 2) differ.
TEST_P(OnlineSoftmaxForward, MatchesReferenceAndFlash1Cpu) {
  const SoftmaxCase& c = GetParam();
  const Problem p = problem_of(c);
  const HostInputs in = make_inputs(p, false);
  const HostTensors t{in.q.data(), in.k.data(), in.v.data(), c.padding ? in.key_lengths.data() : nullptr};
  std::vector<double> ref_o, ref_lse;
  reference_rows(p, t, all_rows(p), ref_o, ref_lse);
  const ForwardOut got = fa2_forward(p, t);

  const Tolerance tol = tolerance_for(p.dtype);
  CheckResult vs_ref;
  add_tensor(vs_ref, compare_tensor("o", widen(got.o), ref_o, tol.atol_rms, tol.rtol));
  add_tensor(vs_ref, compare_tensor("lse", widen(got.lse), ref_lse, 1e-3, 1e-4, true));
  EXPECT_TRUE(vs_ref.passed) << case_name(c) << " worst ratio " << vs_ref.worst_ratio;

  if (c.heads == c.kv_heads) {
    const Flash1CpuResult f1 = flash1_forward_cpu(p, t, 32, 48);
    CheckResult vs_flash1;
    add_tensor(vs_flash1, compare_tensor("o", widen(got.o), widen(f1.o), tol.atol_rms, tol.rtol));
    add_tensor(vs_flash1, compare_tensor("lse", widen(got.lse), widen(f1.lse), 1e-3, 1e-4, true));
    EXPECT_TRUE(vs_flash1.passed) << case_name(c) << " worst ratio " << vs_flash1.worst_ratio;
  }
}

std::vector<SoftmaxCase> grid() {
  std::vector<SoftmaxCase> g;
  for (DType dt : {DType::F16, DType::BF16})
    for (bool causal : {false, true})
      for (bool padding : {false, true}) {
        g.push_back({17, 17, 32, 2, 2, causal, padding, dt});
        g.push_back({1, 33, 64, 1, 1, causal, padding, dt});
        g.push_back({45, 23, 64, 2, 2, causal, padding, dt});
        g.push_back({101, 77, 128, 2, 1, causal, padding, dt});  // MQA, Nq ≠ Nk, tiles not dividing N
      }
  return g;
}

INSTANTIATE_TEST_SUITE_P(OnlineSoftmax, OnlineSoftmaxForward, ::testing::ValuesIn(grid()),
                         [](const ::testing::TestParamInfo<SoftmaxCase>& info) { return case_name(info.param); });

// A row that sees no key keeps m = −inf, ℓ = 0 through any number of all-masked tiles: P = 0
// (not NaN), O stays 0, and the epilogue gives O = 0, L = −inf.
TEST(OnlineSoftmax, AllMaskedRowStaysZeroNotNan) {
  OnlineSoftmax sm;
  sm.init();
  float s[4][4], o[4][4] = {};
  for (int round = 0; round < 3; ++round) {
    for (auto& t : s)
      for (float& x : t) x = -INFINITY;
    sm.update<RowInThread>(s, o, 0.125f);
    for (auto& t : s)
      for (float x : t) EXPECT_EQ(x, 0.f);
  }
  for (int hr = 0; hr < 2; ++hr) {
    const float l = sm.total<RowInThread>(hr);
    EXPECT_EQ(l, 0.f);
    EXPECT_EQ(OnlineSoftmax::output_scale<true>(l, 2.f), 0.f);
    EXPECT_EQ(sm.lse(hr, l, 0.125f), -INFINITY);
  }
  for (auto& t : o)
    for (float x : t) EXPECT_EQ(x, 0.f);
}

// The running statistics after two tiles equal those of one pass over both: m the maximum, ℓ the
// sum of exp(τ(s − m)), and O's rescale by exp(τ(m_old − m_new)).
TEST(OnlineSoftmax, TwoTilesEqualOnePass) {
  const float scale_log2 = 0.3f * 1.4426950408889634f;
  const float a[4] = {1.f, -2.f, 3.5f, 0.25f}, c[4] = {7.f, 2.f, -1.f, 6.5f};  // row 0 of tile 1, tile 2
  OnlineSoftmax sm;
  sm.init();
  float o[1][4] = {{1.f, 1.f, 0.f, 0.f}};
  float s1[2][4] = {{a[0], a[1], 0.f, 0.f}, {a[2], a[3], 0.f, 0.f}};
  sm.update<RowInThread>(s1, o, scale_log2);
  o[0][0] = 10.f;  // O after tile 1, in units of exp(τ(s − m_1))
  float s2[2][4] = {{c[0], c[1], 0.f, 0.f}, {c[2], c[3], 0.f, 0.f}};
  sm.update<RowInThread>(s2, o, scale_log2);
  double m = -INFINITY, l = 0, m1 = -INFINITY;
  for (float x : a) m1 = std::max(m1, double(x));
  for (float x : a) m = std::max(m, double(x));
  for (float x : c) m = std::max(m, double(x));
  for (float x : a) l += std::exp2(scale_log2 * (x - m));
  for (float x : c) l += std::exp2(scale_log2 * (x - m));
  EXPECT_EQ(sm.row_max[0], float(m));
  EXPECT_NEAR(sm.row_sum[0], l, 1e-5 * l);
  EXPECT_NEAR(o[0][0], 10.0 * std::exp2(scale_log2 * (m1 - m)), 1e-5);
  EXPECT_NEAR(sm.lse(0, sm.row_sum[0], scale_log2), (scale_log2 * m + std::log2(l)) * 0.6931471805599453, 1e-5);
}

// flash1's merge (Algorithm 1 line 13) against the direct formula, and with no key seen yet.
TEST(OnlineSoftmax, MergeMatchesDirectFormula) {
  const float scale_log2 = 0.125f * 1.4426950408889634f;
  const SoftmaxMerge r = softmax_merge(2.f, 3.f, 5.f, 1.5f, scale_log2);
  EXPECT_EQ(r.max, 5.f);
  EXPECT_NEAR(r.old_factor, std::exp2(scale_log2 * (2.0 - 5.0)), 1e-6);
  EXPECT_EQ(r.tile_factor, 1.f);
  EXPECT_NEAR(r.sum, 3.0 * std::exp2(scale_log2 * -3.0) + 1.5, 1e-5);
  const SoftmaxMerge none = softmax_merge(-INFINITY, 0.f, -INFINITY, 0.f, scale_log2);
  EXPECT_EQ(none.max, -INFINITY);
  EXPECT_EQ(none.sum, 0.f);
  EXPECT_EQ(none.old_factor, 0.f);
}

// flash1's per-tile softmax (Algorithm 1 line 11): m̃ the row max, P̃ = exp(τ(s − m̃)) handed to
// the store pair by pair, ℓ̃ their sum; a fully masked row gives m̃ = −inf, P̃ = 0, ℓ̃ = 0.
TEST(OnlineSoftmax, TileSoftmaxMatchesDirectFormula) {
  const float scale_log2 = 0.2f * 1.4426950408889634f;
  float s[3][4] = {
      {1.f, -2.f, -INFINITY, -INFINITY}, {3.5f, 0.25f, -INFINITY, -INFINITY}, {7.f, 2.f, -INFINITY, -INFINITY}};
  float m[2], l[2], p[3][4] = {};
  tile_softmax<RowInThread>(s, scale_log2, m, l, [&](int j, int hr, float p0, float p1) {
    p[j][2 * hr] = p0;
    p[j][2 * hr + 1] = p1;
  });
  EXPECT_EQ(m[0], 7.f);
  double sum = 0;
  for (int j = 0; j < 3; ++j)
    for (int e = 0; e < 2; ++e) {
      const double x = std::exp2(scale_log2 * (double(s[j][e]) - 7.0));
      EXPECT_NEAR(p[j][e], x, 1e-6 * x + 1e-30) << j << " " << e;
      sum += x;
    }
  EXPECT_NEAR(l[0], sum, 1e-5 * sum);
  EXPECT_EQ(m[1], -INFINITY);
  EXPECT_EQ(l[1], 0.f);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(p[j][2] + p[j][3], 0.f);
}

// ---- mask policies ---------------------------------------------------------------------------------

// The GPU's C-fragment geometry (rows g, g + 8; columns 8j + 2t, +1), 32 emulated lanes: apply
// hides exactly the invisible (row, key) pairs of a partial tile, and `partial` is false only for
// tiles with nothing hidden (for the warp's 16 rows).
template <class Mask>
void check_fragment_geometry(const Mask& mask, bool causal, int nk) {
  constexpr int kTiles = 8;  // a 16 × 64 block
  for (int row0 : {0, 16, 48, 112})
    for (int col0 : {0, 64, 128}) {
      bool any_hidden = false;
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        float s[kTiles][4];
        for (auto& x : s)
          for (float& y : x) y = 1.f;
        mask.apply(s, row0 + g, col0, 2 * t);
        for (int j = 0; j < kTiles; ++j)
          for (int e = 0; e < 4; ++e) {
            const int row = row0 + g + (e >= 2 ? 8 : 0), col = col0 + 8 * j + 2 * t + (e & 1);
            const bool hidden = !visible(causal, nk, row, col);
            any_hidden = any_hidden || hidden;
            EXPECT_EQ(s[j][e] == -INFINITY, hidden) << "row " << row << " col " << col;
          }
      }
      if (any_hidden) EXPECT_TRUE(mask.partial(row0, col0, 8 * kTiles)) << row0 << " " << col0;
      // The kernels' step, tile(): two m16 tiles (rows row0 … row0 + 31) in one call, the same
      // hidden scores, and nothing touched where the 32 × 64 block hides nothing.
      bool block_hidden = false;
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        float s[2][kTiles][4];
        for (auto& m : s)
          for (auto& x : m)
            for (float& y : x) y = 1.f;
        mask.tile(s, row0, col0, 8 * kTiles, g, t);
        for (int mt = 0; mt < 2; ++mt)
          for (int j = 0; j < kTiles; ++j)
            for (int e = 0; e < 4; ++e) {
              const int row = row0 + 16 * mt + g + (e >= 2 ? 8 : 0), col = col0 + 8 * j + 2 * t + (e & 1);
              const bool hidden = !visible(causal, nk, row, col);
              block_hidden = block_hidden || hidden;
              EXPECT_EQ(s[mt][j][e] == -INFINITY, hidden) << "tile(): row " << row << " col " << col;
            }
      }
      EXPECT_EQ(block_hidden, mask.partial(row0, col0, 8 * kTiles)) << row0 << " " << col0;
    }
}

TEST(MaskPolicy, FragmentGeometryHidesExactlyTheInvisibleScores) {
  for (int nk : {0, 1, 37, 64, 100, 500}) {
    check_fragment_geometry(KeyPaddingMask{nk}, false, nk);
    check_fragment_geometry(CausalMask{nk}, true, nk);
  }
}

// Trip counts: every tile with a visible key is visited once, last-to-first, and no other.
TEST(MaskPolicy, TripCountsVisitExactlyTheTilesWithAVisibleKey) {
  for (int nk : {0, 1, 63, 64, 65, 1013})
    for (int block_m : {64, 128})
      for (int block_n : {32, 64})
        for (int m_block = 0; m_block * block_m < 1100; ++m_block) {
          const int row0 = m_block * block_m, row_end = row0 + block_m;
          for (bool causal : {false, true}) {
            const KvTileRange tiles = causal ? CausalMask{nk}.kv_tiles(m_block, row_end, block_n)
                                             : KeyPaddingMask{nk}.kv_tiles(m_block, row_end, block_n);
            int expected = 0;
            for (int n = 0; n * block_n < nk; ++n)
              if (!causal || n * block_n <= row_end - 1) expected = n + 1;
            ASSERT_EQ(tiles.count, expected) << nk << " " << block_m << " " << block_n << " " << m_block;
            for (int it = 0; it < tiles.count; ++it) EXPECT_EQ(tiles(it), tiles.count - 1 - it);
          }
          // flash1's loops the other way round: first Q tile of key tile col0, last K/V tile of a Q tile.
          const int m_blocks = 1100 / block_m + 1, n_blocks = (nk + block_n - 1) / block_n;
          if (n_blocks > 0) {
            EXPECT_EQ(CausalMask{nk}.last_kv_tile(row_end, block_n, n_blocks),
                      CausalMask{nk}.kv_tiles(m_block, row_end, block_n).count - 1);
            EXPECT_EQ(KeyPaddingMask{nk}.last_kv_tile(row_end, block_n, n_blocks), n_blocks - 1);
          }
          EXPECT_EQ(CausalMask{nk}.first_q_tile(row0, block_m, m_blocks), std::min(m_block, m_blocks));
        }
}

// A tile list visits its tiles below the base policy's trip count, last-to-first.
TEST(MaskPolicy, TileListCutsAtTheCausalEnd) {
  const std::vector<int> ptr = {0, 3, 3, 7};  // Q tile 0: tiles 0, 2, 5; tile 1: none; tile 2: 0, 1, 4, 9
  const std::vector<int> idx = {0, 2, 5, 0, 1, 4, 9};
  TileListMask<CausalMask> mask{};
  mask.nk = 1000;
  mask.sparse_ptr = ptr.data();
  mask.sparse_idx = idx.data();
  const KvTileList t0 = mask.kv_tiles(0, 128, 64);  // causal end: 2 tiles → only tile 0
  ASSERT_EQ(t0.count, 1);
  EXPECT_EQ(t0(0), 0);
  EXPECT_EQ(mask.kv_tiles(1, 256, 64).count, 0);
  const KvTileList t2 = mask.kv_tiles(2, 384, 64);  // causal end: 6 tiles → 0, 1, 4
  ASSERT_EQ(t2.count, 3);
  EXPECT_EQ(t2(0), 4);
  EXPECT_EQ(t2(1), 1);
  EXPECT_EQ(t2(2), 0);
  TileListMask<KeyPaddingMask> padded{};
  padded.nk = 300;  // 5 tiles of 64
  padded.sparse_ptr = ptr.data();
  padded.sparse_idx = idx.data();
  EXPECT_EQ(padded.kv_tiles(0, 128, 64).count, 2);  // 0, 2 (5 cut)
  EXPECT_EQ(padded.kv_tiles(2, 384, 64).count, 3);  // 0, 1, 4 (9 cut)
}

}  // namespace
