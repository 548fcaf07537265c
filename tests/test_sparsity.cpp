// Block-sparsity patterns (bench/core/sparsity.h), their mapping to kernel tiles, the reference
// with the expanded element mask, and the sparsity fields of problems, records and sweeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "bench/core/reference.h"
#include "bench/cli/commands.h"
#include "bench/core/device_info.h"
#include "bench/core/inputs.h"
#include "bench/core/method.h"
#include "bench/core/record.h"
#include "bench/core/schema.h"
#include "bench/core/sparsity.h"
#include "bench/sweep/sweep.h"
#include "bench/core/philox.h"
#include "tests/device_test_util.h"

using namespace flashio;

namespace {

Problem sparse_problem(const std::string& pattern, int64_t n, int block) {
  Problem p;
  p.seqlen_q = n;
  p.pattern = pattern;
  p.sparse_block = block;
  return p;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(Sparsity, ButterflyIsDiagonalPlusPowerOfTwoXorOffsets) {
  const BlockMask m = make_block_mask(sparse_problem("butterfly", 8 * 128, 128));
  ASSERT_EQ(m.rows, 8);
  ASSERT_EQ(m.cols, 8);
  // Row 0: columns 0, 1, 2, 4; row 5 (101b): 5, 4 (100b), 7 (111b), 1 (001b).
  for (int c = 0; c < 8; ++c) EXPECT_EQ(m.at(0, c), c == 0 || c == 1 || c == 2 || c == 4) << c;
  for (int c = 0; c < 8; ++c) EXPECT_EQ(m.at(5, c), c == 5 || c == 4 || c == 7 || c == 1) << c;
  // Symmetric, 1 + log2(T) blocks per row.
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) EXPECT_EQ(m.at(r, c), m.at(c, r));
  EXPECT_DOUBLE_EQ(m.density(), 4.0 / 8.0);
  EXPECT_DOUBLE_EQ(make_block_mask(sparse_problem("butterfly", 4096, 128)).density(), 6.0 / 32.0);
}

TEST(Sparsity, LocalIsABandPlusGlobalRowsAndColumns) {
  Problem p = sparse_problem("local", 6 * 64, 64);
  p.sparse_window = 1;
  p.sparse_global = 1;
  const BlockMask m = make_block_mask(p);
  const char* want[] = {"111111", "111000", "111100", "101110", "100111", "100011"};
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 6; ++c) EXPECT_EQ(m.at(r, c), want[r][c] == '1') << r << "," << c;
  p.sparse_global = 0;
  p.sparse_window = 0;
  EXPECT_EQ(make_block_mask(p).nnz(), 6);  // the diagonal alone
}

TEST(Sparsity, RandomHasTheRequestedDensityAndFollowsTheSeed) {
  Problem p = sparse_problem("random", 4096, 128);  // 32 × 32 blocks
  for (double s : {1.0, 0.5, 0.25, 0.1, 0.05}) {
    p.sparse_density = s;
    const BlockMask m = make_block_mask(p);
    EXPECT_EQ(m.nnz(), std::llround(s * 1024)) << s;
    EXPECT_EQ(m.bits, make_block_mask(p).bits) << "deterministic in the seed";
  }
  p.sparse_density = 0.25;
  const BlockMask a = make_block_mask(p);
  p.seed += 1;
  EXPECT_NE(a.bits, make_block_mask(p).bits);
  p.sparse_density = 1e-9;  // at least one block
  EXPECT_EQ(make_block_mask(p).nnz(), 1);
}

TEST(Sparsity, CausalBlockIsTheBlockLowerTriangle) {
  Problem p = sparse_problem("causal_block", 1000, 100);  // 10 × 10, last block partial
  p.seqlen_k = 350;                                       // 10 × 4
  const BlockMask m = make_block_mask(p);
  ASSERT_EQ(m.rows, 10);
  ASSERT_EQ(m.cols, 4);
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(m.at(r, c), c <= r);
}

TEST(Sparsity, FileFormatParsesCommentsAndSpaces) {
  const BlockMask m =
      parse_block_mask_text("# a 3x4 mask\n\n3 4   # rows cols\n1 0 0 1\n0110\n  0000 # empty row\n", "t");
  ASSERT_EQ(m.rows, 3);
  ASSERT_EQ(m.cols, 4);
  EXPECT_EQ(m.bits, (std::vector<uint8_t>{1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(parse_block_mask_text(block_mask_text(m), "round trip").bits, m.bits);
}

TEST(Sparsity, BadFilesAreRejectedWithTheLine) {
  auto error = [](const std::string& text) {
    try {
      parse_block_mask_text(text, "f");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("").find("empty"), std::string::npos);
  EXPECT_NE(error("2\n11\n").find("f:1"), std::string::npos);
  EXPECT_NE(error("2 2 2\n11\n11\n").find("header"), std::string::npos);
  EXPECT_NE(error("2 2\n11\n1\n").find("f:3"), std::string::npos);
  EXPECT_NE(error("2 2\n11\n12\n").find("'2'"), std::string::npos);
  EXPECT_NE(error("2 2\n11\n").find("1 mask rows, expected 2"), std::string::npos);
  EXPECT_NE(error("1 2\n11\n11\n").find("more than 1"), std::string::npos);
}

TEST(Sparsity, FilePatternMustMatchTheProblemShape) {
  const std::string path = write_temp("flashio_mask_2x2.txt", "2 2\n10\n11\n");
  Problem p = sparse_problem("file:" + path, 256, 128);
  EXPECT_FALSE(p.invalid_reason().has_value());
  EXPECT_EQ(make_block_mask(p).bits, (std::vector<uint8_t>{1, 0, 1, 1}));
  EXPECT_NE(p.name().find("/sparse:file:flashio_mask_2x2.txt/bs:128"), std::string::npos) << p.name();
  p.seqlen_q = 512;  // needs 4 × 4
  ASSERT_TRUE(p.invalid_reason().has_value());
  EXPECT_NE(p.invalid_reason()->find("need 4x4"), std::string::npos) << *p.invalid_reason();
  p.pattern = "file:/nonexistent/mask.txt";
  EXPECT_TRUE(p.invalid_reason().has_value());
  EXPECT_THROW(make_block_mask(p), std::invalid_argument);
}

TEST(Sparsity, InvalidPatternsAreRejected) {
  Problem p = sparse_problem("zigzag", 256, 128);
  EXPECT_TRUE(p.invalid_reason().has_value());
  p.pattern = "random";
  p.sparse_density = 0.0;
  EXPECT_TRUE(p.invalid_reason().has_value());
  p.sparse_density = 1.5;
  EXPECT_TRUE(p.invalid_reason().has_value());
  p.sparse_density = 1.0;
  p.sparse_block = 0;
  EXPECT_TRUE(p.invalid_reason().has_value());
  p.sparse_block = 64;
  EXPECT_FALSE(p.invalid_reason().has_value());
}

TEST(Sparsity, TileMaskSplitsPatternBlocksIntoKernelTiles) {
  Problem p = sparse_problem("butterfly", 1000, 128);  // 8 × 8 pattern blocks, last partial
  const BlockMask m = make_block_mask(p);
  const BlockMask t = tile_mask(m, 1000, 1000, 128, 64);
  ASSERT_EQ(t.rows, 8);
  ASSERT_EQ(t.cols, 16);  // ⌈1000/64⌉
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 16; ++c) EXPECT_EQ(t.at(r, c), m.at(r, c / 2));
  const BlockMask b = make_block_mask(p, 64, 64);
  ASSERT_EQ(b.rows, 16);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) EXPECT_EQ(b.at(r, c), m.at(r / 2, c / 2));
  EXPECT_THROW(tile_mask(m, 1000, 1000, 256, 64), std::invalid_argument);  // a tile would straddle blocks
  EXPECT_THROW(tile_mask(m, 1000, 1000, 128, 96), std::invalid_argument);
}

TEST(Sparsity, RowAndColumnListsAreIncreasing) {
  BlockMask m = parse_block_mask_text("3 3\n101\n000\n011\n", "t");
  const BlockLists r = by_rows(m);
  EXPECT_EQ(r.ptr, (std::vector<int32_t>{0, 2, 2, 4}));
  EXPECT_EQ(r.idx, (std::vector<int32_t>{0, 2, 1, 2}));
  const BlockLists c = by_cols(m);
  EXPECT_EQ(c.ptr, (std::vector<int32_t>{0, 1, 2, 4}));
  EXPECT_EQ(c.idx, (std::vector<int32_t>{0, 2, 0, 2}));
}

TEST(Sparsity, ExpandedMaskCoversTailBlocks) {
  BlockMask m = parse_block_mask_text("2 2\n01\n10\n", "t");
  m.block_r = m.block_c = 3;
  const auto e = expand_mask(m, 5, 4);  // blocks: rows 0-2 | 3-4, cols 0-2 | 3
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(e[size_t(i * 4 + j)], (i < 3) != (j < 3)) << i << "," << j;
}

// ---- the reference with the expanded element mask ------------------------------------------

namespace {

// Direct evaluation with the expanded mask: S over all keys, masked to -inf where the block
// mask, causal or padding hide a key; a row with no key has O = 0, LSE = -inf.
void masked_triple_loop(const Problem& p, const HostInputs& in, std::vector<double>& out, std::vector<double>& lse) {
  const int64_t d = p.head_dim, nq = p.seqlen_q, nk = p.nk(), group = p.heads / p.kvh();
  const auto allowed = expand_mask(make_block_mask(p), nq, nk);
  out.assign(size_t(p.q_elements()), 0.0);
  lse.assign(size_t(p.batch * p.heads * nq), 0.0);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t hk = h / group;
        std::vector<double> s(static_cast<size_t>(nk));
        for (int64_t j = 0; j < nk; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < d; ++c)
            acc += double(to_float(p.dtype, in.q[size_t(((b * p.heads + h) * nq + i) * d + c)])) *
                   double(to_float(p.dtype, in.k[size_t(((b * p.kvh() + hk) * nk + j) * d + c)]));
          const bool masked = !allowed[size_t(i * nk + j)] || (p.causal && j > i) ||
                              (p.padding != Padding::None && j >= in.key_lengths[size_t(b)]);
          s[size_t(j)] = masked ? -std::numeric_limits<double>::infinity() : acc * p.scale();
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (double x : s) mx = std::max(mx, x);
        const size_t row = size_t((b * p.heads + h) * nq + i);
        if (std::isinf(mx)) {
          lse[row] = -std::numeric_limits<double>::infinity();
          continue;
        }
        double sum = 0;
        for (double x : s) sum += std::isinf(x) ? 0.0 : std::exp(x - mx);
        lse[row] = mx + std::log(sum);
        for (int64_t j = 0; j < nk; ++j) {
          double w = std::isinf(s[size_t(j)]) ? 0.0 : std::exp(s[size_t(j)] - mx) / sum;
          if (p.dropout > 0.0)
            w *= dropout_keeps(p.seed, 0, p.dropout, uint32_t(b), uint32_t(h), uint32_t(i), uint32_t(j))
                     ? 1.0 / (1.0 - p.dropout)
                     : 0.0;
          for (int64_t c = 0; c < d; ++c)
            out[row * size_t(d) + size_t(c)] +=
                w * double(to_float(p.dtype, in.v[size_t(((b * p.kvh() + hk) * nk + j) * d + c)]));
        }
      }
}

void expect_reference_matches_masked_loop(const Problem& p) {
  const HostInputs in = make_inputs(p, false);
  std::vector<double> want, want_lse, got, got_lse;
  masked_triple_loop(p, in, want, want_lse);
  HostTensors t{in.q.data(), in.k.data(), in.v.data(), p.padding != Padding::None ? in.key_lengths.data() : nullptr};
  reference_rows(p, t, all_rows(p), got, got_lse, 2);
  ASSERT_EQ(got.size(), want.size());
  for (size_t e = 0; e < got.size(); ++e) ASSERT_NEAR(got[e], want[e], 1e-12) << p.name() << " element " << e;
  for (size_t r = 0; r < got_lse.size(); ++r) {
    if (std::isinf(want_lse[r])) {
      ASSERT_TRUE(std::isinf(got_lse[r]) && got_lse[r] < 0) << p.name() << " row " << r;
    } else {
      ASSERT_NEAR(got_lse[r], want_lse[r], 1e-12) << p.name() << " row " << r;
    }
  }
}

}  // namespace

TEST(SparseReference, EveryPatternMatchesTheExpandedMask) {
  const std::string file = write_temp("flashio_mask_5x4.txt", "5 4\n1000\n0000\n0110\n1111\n0001\n");
  for (const std::string& pat :
       std::vector<std::string>{"butterfly", "local", "random", "causal_block", "file:" + file})
    for (bool causal : {false, true}) {
      Problem p = sparse_problem(pat, 37, 8);  // 5 blocks of 8, last partial
      p.seqlen_k = 29;                         // 4 blocks
      p.batch = 2;
      p.heads = 4;
      p.kv_heads = 2;
      p.head_dim = 16;
      p.causal = causal;
      p.padding = Padding::Random;
      p.dropout = pat == "random" ? 0.2 : 0.0;
      p.sparse_density = 0.4;
      p.dtype = causal ? DType::BF16 : DType::F16;
      expect_reference_matches_masked_loop(p);
    }
}

TEST(SparseReference, AllZeroRowsGiveZeroOutputsAndGradients) {
  const std::string file = write_temp("flashio_mask_3x3.txt", "3 3\n110\n000\n011\n");
  Problem p = sparse_problem("file:" + file, 24, 8);
  p.head_dim = 8;
  p.heads = 2;
  const HostInputs in = make_inputs(p, true);
  HostTensors t{in.q.data(), in.k.data(), in.v.data(), nullptr};
  std::vector<double> out, lse, dq, dk, dv;
  reference_rows(p, t, all_rows(p), out, lse, 1);
  reference_dq_rows(p, t, in.d_o.data(), all_rows(p), dq, 1);
  reference_dkdv_head(p, t, in.d_o.data(), 0, 1, dk, dv, 1);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 24; ++i) {
      const size_t row = size_t(h * 24 + i);
      const bool empty = i >= 8 && i < 16;
      EXPECT_EQ(std::isinf(lse[row]), empty) << i;
      for (int c = 0; c < 8; ++c) {
        if (empty) {
          EXPECT_EQ(out[row * 8 + size_t(c)], 0.0);
          EXPECT_EQ(dq[row * 8 + size_t(c)], 0.0);
        } else {
          EXPECT_NE(dq[row * 8 + size_t(c)], 0.0);
        }
      }
    }
  // Keys 16..23 (column block 2) are seen by block row 2 only; keys 8..15 by rows 0 and 2.
  double dk_nonzero = 0;
  for (double x : dk) dk_nonzero += std::abs(x);
  EXPECT_GT(dk_nonzero, 0.0);
}

TEST(SparseReference, DensityOneAndCausalBlockOfOneEqualDense) {
  Problem dense;
  dense.seqlen_q = 45;
  dense.head_dim = 16;
  dense.heads = 2;
  const HostInputs in = make_inputs(dense, true);
  HostTensors t{in.q.data(), in.k.data(), in.v.data(), nullptr};
  auto run = [&](const Problem& p, std::vector<double>& out, std::vector<double>& dq, std::vector<double>& dk) {
    std::vector<double> lse, dv;
    reference_rows(p, t, all_rows(p), out, lse, 1);
    reference_dq_rows(p, t, in.d_o.data(), all_rows(p), dq, 1);
    reference_dkdv_head(p, t, in.d_o.data(), 0, 0, dk, dv, 1);
  };
  std::vector<double> o0, dq0, dk0, o1, dq1, dk1;
  Problem full = dense;
  full.pattern = "random";
  full.sparse_density = 1.0;
  full.sparse_block = 16;
  run(dense, o0, dq0, dk0);
  run(full, o1, dq1, dk1);
  EXPECT_EQ(o0, o1);
  EXPECT_EQ(dq0, dq1);
  EXPECT_EQ(dk0, dk1);
  // causal_block with 1 × 1 blocks is the causal mask.
  Problem causal = dense;
  causal.causal = true;
  Problem tri = dense;
  tri.pattern = "causal_block";
  tri.sparse_block = 1;
  run(causal, o0, dq0, dk0);
  run(tri, o1, dq1, dk1);
  EXPECT_EQ(o0, o1);
  EXPECT_EQ(dq0, dq1);
  EXPECT_EQ(dk0, dk1);
}

// ---- problems, records, sweeps, methods -----------------------------------------------------

TEST(SparseProblem, NamesAddSparsityOnlyWhenSet) {
  Problem p;
  p.seqlen_q = 4096;
  EXPECT_EQ(p.name(), "b:1/h:1/n:4096/d:64/fp16");
  p.pattern = "none";
  EXPECT_EQ(p.name(), "b:1/h:1/n:4096/d:64/fp16");
  p.pattern = "butterfly";
  EXPECT_EQ(p.name(), "b:1/h:1/n:4096/d:64/fp16/sparse:butterfly/bs:128");
  p.pattern = "random";
  p.sparse_density = 0.25;
  EXPECT_EQ(p.name(), "b:1/h:1/n:4096/d:64/fp16/sparse:random/s:0.25/bs:128");
  p.pattern = "local";
  p.sparse_window = 2;
  p.sparse_global = 0;
  p.sparse_block = 256;
  EXPECT_EQ(p.name(), "b:1/h:1/n:4096/d:64/fp16/sparse:local/w:2/g:0/bs:256");
}

TEST(SparseProblem, JsonRecordsTheMeasuredDensityAndRoundTrips) {
  Problem p;
  p.seqlen_q = 4096;
  EXPECT_FALSE(to_json(p).contains("pattern"));
  p.pattern = "random";
  p.sparse_density = 0.3;
  const auto j = to_json(p);
  EXPECT_EQ(j.at("pattern"), "random");
  EXPECT_EQ(j.at("sparse_block"), 128);
  EXPECT_DOUBLE_EQ(j.at("density").get<double>(), double(std::llround(0.3 * 1024)) / 1024.0);
  EXPECT_DOUBLE_EQ(j.at("sparse_target_density").get<double>(), 0.3);
  const Problem back = problem_from_json(j);
  EXPECT_EQ(back.name(), p.name());
  EXPECT_EQ(to_json(back), j);
  p.pattern = "local";
  EXPECT_EQ(problem_from_json(to_json(p)).name(), p.name());
}

TEST(SparseProblem, FlopsScaleWithTheDensity) {
  Problem p;
  p.seqlen_q = 4096;
  const double dense = flops(p, Pass::Fwd);
  p.pattern = "butterfly";
  EXPECT_DOUBLE_EQ(flops(p, Pass::Fwd), dense * 6.0 / 32.0);
}

TEST(SparseSweep, PatternAxesExpandWithoutDuplicateDensePoints) {
  SweepSpec s;
  s.methods = {"blocksparse_flash"};
  s.seqlen = {4096};
  s.pattern = {"none", "butterfly", "random"};
  s.density = {0.5, 0.1};
  s.sparse_block = {128, 256};
  const auto pts = expand(s);
  // none: 1; butterfly: 2 blocks; random: 2 blocks × 2 densities.
  ASSERT_EQ(pts.size(), 7u);
  EXPECT_FALSE(pts[0].problem.sparse());
  EXPECT_EQ(pts[1].problem.pattern, "butterfly");
  EXPECT_EQ(pts[2].problem.sparse_block, 256);
  EXPECT_EQ(pts[3].problem.sparse_density, 0.5);
  EXPECT_EQ(pts[4].problem.sparse_density, 0.1);
  s.pattern = {"zigzag"};
  EXPECT_THROW(expand(s), std::invalid_argument);
}

namespace {
DeviceInfo h100() { return testing_util::test_h100(); }
}  // namespace

TEST(SparseMethods, SupportSaysWhyNot) {
  const Method* flash = builtin_registry().find("blocksparse_flash");
  const Method* standard = builtin_registry().find("blocksparse_standard");
  const Method* flash2 = builtin_registry().find("flash2");
  ASSERT_NE(flash, nullptr);
  ASSERT_NE(standard, nullptr);
  Problem p;
  p.seqlen_q = 1000;
  EXPECT_FALSE(flash->supports(p, Pass::Fwd, h100()).ok) << "dense is flash2's";
  p.pattern = "butterfly";
  EXPECT_TRUE(flash->supports(p, Pass::Fwd, h100()).ok) << flash->supports(p, Pass::Fwd, h100()).reason;
  EXPECT_TRUE(flash->supports(p, Pass::FwdBwd, h100()).ok);
  EXPECT_TRUE(standard->supports(p, Pass::Fwd, h100()).ok) << standard->supports(p, Pass::Fwd, h100()).reason;
  EXPECT_TRUE(standard->supports(p, Pass::FwdBwd, h100()).ok);
  const Support s = flash2->supports(p, Pass::Fwd, h100());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("block-sparse"), std::string::npos) << s.reason;
  p.sparse_block = 64;  // smaller than the forward's 128-row tile
  const Support small = flash->supports(p, Pass::Fwd, h100());
  EXPECT_FALSE(small.ok);
  EXPECT_NE(small.reason.find("not a multiple"), std::string::npos) << small.reason;
  EXPECT_TRUE(standard->supports(p, Pass::Fwd, h100()).ok);
  p.sparse_block = 256;
  p.head_dim = 32;
  EXPECT_FALSE(flash->supports(p, Pass::Fwd, h100()).ok);
  p.head_dim = 128;
  p.causal = true;
  p.dropout = 0.1;
  p.padding = Padding::Random;
  EXPECT_TRUE(flash->supports(p, Pass::FwdBwd, h100()).ok);
}

TEST(SparseProblem, RecordsWithPatternsConformToTheSchema) {
  std::ifstream in(std::string(FLASHIO_SOURCE_DIR) + "/results/schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  ResultFile f;
  f.run_id = "0123456789abcdef";
  f.created = "2026-11-22T01:00:00Z";
  f.command_line = "flashio run --pattern random,local,file:/nonexistent";
  f.build = {{"git_revision", "abc"}, {"git_dirty", false}};
  f.device = to_json(h100());
  for (const char* pat : {"random", "local", "butterfly", "causal_block", "file:/nonexistent/mask.txt"}) {
    Record r;
    r.method = "blocksparse_flash";
    r.problem.seqlen_q = 1000;
    r.problem.pattern = pat;
    r.status = Status::Skipped;
    r.reason = "test";
    f.records.push_back(r);
  }
  const nlohmann::json doc = to_json(f);
  EXPECT_TRUE(doc["records"][4]["problem"]["density"].is_null()) << "an unreadable file has no density";
  const auto errors = validate_schema(schema, doc);
  EXPECT_TRUE(errors.empty()) << errors.front();
  const ResultFile back = result_file_from_json(doc);
  for (size_t i = 0; i < f.records.size(); ++i) EXPECT_EQ(back.records[i].name(), f.records[i].name());
}

// ---- the command line ----------------------------------------------------------------------

namespace {
int run_cli(std::vector<std::string> args, std::string* err, std::string* out) {
  args.insert(args.begin(), "flashio");
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int rc = flashio_main(args);
  *err = testing::internal::GetCapturedStderr();
  *out = testing::internal::GetCapturedStdout();
  return rc;
}
}  // namespace

TEST(SparseCli, PatternAxesInADryRun) {
  std::string err, out;
  ASSERT_EQ(
      run_cli({"run", "--dry-run", "--method", "blocksparse_flash", "--seqlen", "4096", "--head-dim", "64", "--batch",
               "1", "--heads", "8", "--pattern", "butterfly,random", "--density", "0.5,0.1", "--sparse-block", "128"},
              &err, &out),
      0)
      << err;
  EXPECT_NE((err + out).find("3 points"), std::string::npos) << err << out;
  EXPECT_NE(out.find("blocksparse_flash/fwd/b:1/h:8/n:4096/d:64/fp16/sparse:butterfly/bs:128"), std::string::npos)
      << out;
  EXPECT_NE(out.find("sparse:random/s:0.1/bs:128"), std::string::npos) << out;
}

TEST(SparseCli, BadSparsityIsBadInput) {
  std::string err, out;
  EXPECT_EQ(run_cli({"run", "--dry-run", "--pattern", "zigzag"}, &err, &out), 2);
  EXPECT_NE(err.find("zigzag"), std::string::npos) << err;
  EXPECT_EQ(run_cli({"run", "--dry-run", "--pattern", "random", "--density", "0"}, &err, &out), 2);
  EXPECT_EQ(run_cli({"run", "--dry-run", "--pattern", "file:/nonexistent/mask.txt"}, &err, &out), 2);
  EXPECT_NE(err.find("/nonexistent/mask.txt"), std::string::npos) << err;
}

TEST(SparseCli, ListSaysWhyAPatternBlockCannotBeSkippedWhole) {
  std::string err, out;
  ASSERT_EQ(run_cli({"list", "--method", "blocksparse_flash", "--pattern", "butterfly", "--sparse-block", "64",
                     "--seqlen", "1024"},
                    &err, &out),
            0);
  EXPECT_NE(out.find("not a multiple of the forward tile 128x64"), std::string::npos) << out;
}
