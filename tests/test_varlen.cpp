// Variable lengths on the CPU (issue 20): --seqlens's grammar, the lengths it resolves to, names,
// the record's problem object (self-contained: the lengths embedded), FLOPs over real tokens, the
// packed sizes, the sweep axis, the checked rows, the float64 reference per sequence, and which
// methods run or skip a packed point (a DeviceInfo stands in for a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "bench/core/inputs.h"
#include "bench/core/method.h"
#include "bench/core/record.h"
#include "bench/core/reference.h"
#include "bench/core/schema.h"
#include "bench/core/varlen.h"
#include "bench/measure/check.h"
#include "bench/sweep/sweep.h"
#include "tests/schema_test_util.h"
#include "tests/device_test_util.h"

using namespace flashio;

namespace {

DeviceInfo h100() { return testing_util::test_h100(); }

// A varlen problem with the given lengths (as a file: spec resolves them).
Problem varlen(std::vector<int32_t> lengths, int64_t heads = 2, int64_t d = 64, bool causal = false) {
  Problem p;
  p.seqlens = "file:lengths.txt";
  p.seq_lengths = std::move(lengths);
  p.batch = int64_t(p.seq_lengths.size());
  p.seqlen_q = *std::max_element(p.seq_lengths.begin(), p.seq_lengths.end());
  p.heads = heads;
  p.head_dim = d;
  p.causal = causal;
  return p;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(VarlenGrammar, ParsesUniformRangesAndFiles) {
  std::string why;
  auto u = parse_seqlens("uniform:512-8192", &why);
  ASSERT_TRUE(u) << why;
  EXPECT_EQ(u->kind, SeqlensSpec::Kind::Uniform);
  EXPECT_EQ(u->lo, 512);
  EXPECT_EQ(u->hi, 8192);
  u = parse_seqlens("uniform:0-1", &why);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->lo, 0);
  auto f = parse_seqlens("file:/tmp/a b/lengths.txt", &why);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, SeqlensSpec::Kind::File);
  EXPECT_EQ(f->path, "/tmp/a b/lengths.txt");
}

TEST(VarlenGrammar, RefusesMalformedValuesInOneLine) {
  for (const char* bad : {"", "uniform", "uniform:", "uniform:5", "uniform:9-3", "uniform:0-0", "uniform:-1-5",
                          "uniform:a-b", "uniform:1-2-3", "uniform: 1-2", "uniform:1-99999999999", "file:", "File:x",
                          "list:1,2", "512-8192", "uniform:+1-2"}) {
    std::string why;
    EXPECT_FALSE(parse_seqlens(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
}

TEST(VarlenGrammar, LengthsFilesParseIntegersCommasAndComments) {
  std::string why;
  auto l = parse_seq_lengths_text("# lengths\n512, 1024\n0 17\t1013 # a comment 99\n1\n", "f", &why);
  ASSERT_TRUE(l) << why;
  EXPECT_EQ(*l, (std::vector<int32_t>{512, 1024, 0, 17, 1013, 1}));
  for (const char* bad : {"", "   \n# only a comment\n", "512 12x", "-5", "1.5", "512\n\n99999999999", "1;2", "0x10"}) {
    why.clear();
    EXPECT_FALSE(parse_seq_lengths_text(bad, "lengths.txt", &why)) << bad;
    EXPECT_NE(why.find("lengths.txt"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  EXPECT_NE((parse_seq_lengths_text("1\n2 oops", "f", &why), why).find("line 2"), std::string::npos) << why;
}

TEST(VarlenLengths, UniformDrawsAreSeededAndInRange) {
  const auto a = draw_uniform_lengths(512, 8192, 7, 1000), b = draw_uniform_lengths(512, 8192, 7, 1000),
             c = draw_uniform_lengths(512, 8192, 8, 1000);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(*std::min_element(a.begin(), a.end()) >= 512, true);
  EXPECT_EQ(*std::max_element(a.begin(), a.end()) <= 8192, true);
  const double mean = std::accumulate(a.begin(), a.end(), 0.0) / 1000;
  EXPECT_NEAR(mean, 4352, 200);  // (512 + 8192) / 2
  const auto zero_one = draw_uniform_lengths(0, 1, 3, 200);
  EXPECT_GT(std::count(zero_one.begin(), zero_one.end(), 0), 50);
  EXPECT_GT(std::count(zero_one.begin(), zero_one.end(), 1), 50);
}

TEST(VarlenLengths, ATokenBudgetIsFilledWithoutPassingIt) {
  for (int64_t tokens : {16384, 65536}) {
    const auto l = draw_uniform_lengths_for_tokens(512, 8192, 0x5eed, tokens);
    const int64_t total = std::accumulate(l.begin(), l.end(), int64_t(0));
    EXPECT_LE(total, tokens);
    EXPECT_GT(total, tokens - 8192);
    // The same stream as a batch of that many: the lengths agree.
    EXPECT_EQ(l, draw_uniform_lengths(512, 8192, 0x5eed, int64_t(l.size())));
    // The next draw would have passed the budget.
    const auto more = draw_uniform_lengths(512, 8192, 0x5eed, int64_t(l.size()) + 1);
    EXPECT_GT(total + more.back(), tokens);
  }
  EXPECT_EQ(draw_uniform_lengths_for_tokens(100, 100, 1, 50).size(), 1u);  // at least one sequence
}

TEST(VarlenProblem, ResolveSetsBatchAndLongestFromTheLengths) {
  Problem p;
  p.seqlens = "uniform:1-100";
  p.batch = 5;
  ASSERT_FALSE(resolve_varlen(p, std::nullopt));
  EXPECT_EQ(p.seq_lengths.size(), 5u);
  EXPECT_EQ(p.batch, 5);
  EXPECT_EQ(p.seqlen_q, *std::max_element(p.seq_lengths.begin(), p.seq_lengths.end()));
  EXPECT_FALSE(p.invalid_reason()) << *p.invalid_reason();

  Problem f;
  f.seqlens = "file:" + write_file("flashio_lengths_ok.txt", "0 1 17 1013\n");
  f.batch = 99;  // the file's count wins
  ASSERT_FALSE(resolve_varlen(f, std::nullopt));
  EXPECT_EQ(f.seq_lengths, (std::vector<int32_t>{0, 1, 17, 1013}));
  EXPECT_EQ(f.batch, 4);
  EXPECT_EQ(f.seqlen_q, 1013);
  EXPECT_EQ(f.total_tokens(), 1031);

  for (const std::string& bad : {"file:" + write_file("flashio_lengths_empty.txt", "# none\n"),
                                 "file:" + write_file("flashio_lengths_bad.txt", "512 twelve\n"),
                                 "file:" + write_file("flashio_lengths_zeros.txt", "0 0 0\n"),
                                 std::string("file:/nonexistent/flashio/lengths.txt")}) {
    Problem b;
    b.seqlens = bad;
    const auto why = resolve_varlen(b, std::nullopt);
    ASSERT_TRUE(why) << bad;
    EXPECT_EQ(why->find('\n'), std::string::npos) << *why;
  }
}

TEST(VarlenProblem, NamesCarryTheDistributionAndOtherNamesDoNotChange) {
  Problem dense;
  dense.batch = 4;
  dense.heads = 16;
  dense.seqlen_q = 4096;
  EXPECT_EQ(dense.name(), "b:4/h:16/n:4096/d:64/fp16");
  const nlohmann::json dj = to_json(dense);
  for (const char* key : {"seqlens", "seq_lengths", "varlen_layout"}) EXPECT_EQ(dj.count(key), 0u) << key;

  Problem p;
  p.seqlens = "uniform:512-8192";
  p.batch = 3;
  p.heads = 16;
  ASSERT_FALSE(resolve_varlen(p, std::nullopt));
  const std::string n = fmt::format("b:3/h:16/n:{}/d:64/fp16/varlen:uniform:512-8192", p.seqlen_q);
  EXPECT_EQ(p.name(), n);
  p.varlen_padded = true;
  EXPECT_EQ(p.name(), n + "/padded");
  p.varlen_padded = false;
  p.causal = true;
  EXPECT_EQ(point_name("flash2", Pass::Fwd, p),
            fmt::format("flash2/fwd/b:3/h:16/n:{}/d:64/fp16/causal/varlen:uniform:512-8192", p.seqlen_q));
  Problem f = varlen({3, 5});
  f.seqlens = "file:/some/dir/my lengths.txt";  // the base name: no slash in a name
  EXPECT_EQ(f.name(), "b:2/h:2/n:5/d:64/fp16/varlen:file:my lengths.txt");
}

TEST(VarlenProblem, TheRecordEmbedsTheLengthsAndReadsBackWithoutTheFile) {
  Problem p = varlen({0, 1, 17, 1013}, 4, 128, true);
  p.seqlens = "file:/nonexistent/lengths.txt";
  const nlohmann::json j = to_json(p);
  EXPECT_EQ(j.at("seqlens"), "file:/nonexistent/lengths.txt");
  EXPECT_EQ(j.at("seq_lengths"), nlohmann::json({0, 1, 17, 1013}));
  EXPECT_EQ(j.at("varlen_layout"), "packed");
  const Problem back = problem_from_json(j);  // the path is never opened
  EXPECT_EQ(back.seq_lengths, p.seq_lengths);
  EXPECT_EQ(back.name(), p.name());
  EXPECT_FALSE(back.invalid_reason());
  p.varlen_padded = true;
  EXPECT_EQ(to_json(p).at("varlen_layout"), "padded");
  EXPECT_TRUE(problem_from_json(to_json(p)).varlen_padded);

  nlohmann::json bad = j;
  bad.erase("seq_lengths");
  EXPECT_THROW(problem_from_json(bad), std::runtime_error);
  bad = j;
  bad["seq_lengths"] = {5, -1};
  EXPECT_THROW(problem_from_json(bad), std::runtime_error);
  bad = j;
  bad["varlen_layout"] = "ragged";
  EXPECT_THROW(problem_from_json(bad), std::runtime_error);
  bad = j;
  bad["seq_lengths"] = {5, 6, 7};  // three lengths for batch 4
  EXPECT_TRUE(problem_from_json(bad).invalid_reason());
}

TEST(VarlenProblem, RecordsValidateAgainstTheSchema) {
  Record r;
  r.method = "flash2";
  r.pass = Pass::Fwd;
  r.problem = varlen({0, 1, 17, 1013});
  r.status = Status::Skipped;
  r.reason = "test";
  nlohmann::json j = to_json(r);
  auto errors = validate_schema(record_schema(), j);
  EXPECT_TRUE(errors.empty()) << errors.front();
  j["problem"]["seq_lengths"] = nlohmann::json::array();
  EXPECT_FALSE(validate_schema(record_schema(), j).empty());
  j = to_json(r);
  j["problem"]["varlen_layout"] = "ragged";
  EXPECT_FALSE(validate_schema(record_schema(), j).empty());
  j = to_json(r);
  j["problem"]["seq_lengths"] = {5, -1};
  EXPECT_FALSE(validate_schema(record_schema(), j).empty());
}

TEST(VarlenProblem, FlopsCountTheRealTokensOnly) {
  Problem p = varlen({0, 1, 17, 1013}, 4, 128);
  const double sq = 0 + 1 + 17.0 * 17 + 1013.0 * 1013;
  EXPECT_DOUBLE_EQ(flops(p, Pass::Fwd), 4.0 * 4 * sq * 128);
  p.causal = true;
  EXPECT_DOUBLE_EQ(flops(p, Pass::Fwd), 2.0 * 4 * sq * 128);
  p.varlen_padded = true;  // the padded twin does the same useful work (its padding is waste)
  EXPECT_DOUBLE_EQ(flops(p, Pass::Fwd), 2.0 * 4 * sq * 128);
  // A uniform batch of one length: the dense count.
  Problem u = varlen({512, 512, 512}, 4, 64);
  Problem d = u;
  d.seqlens.clear();
  d.seq_lengths.clear();
  EXPECT_DOUBLE_EQ(flops(u, Pass::Fwd), flops(d, Pass::Fwd));
}

TEST(VarlenProblem, PackedSizesAreTheRealTokensPaddedOnesTheLongest) {
  Problem p = varlen({0, 1, 17, 1013}, 4, 64);
  p.kv_heads = 2;
  EXPECT_EQ(p.total_tokens(), 1031);
  EXPECT_EQ(p.q_elements(), 4 * 1031 * 64);
  EXPECT_EQ(p.kv_elements(), 2 * 1031 * 64);
  EXPECT_EQ(p.lse_elements(), 4 * 1031);
  EXPECT_EQ(compulsory_bytes(p, Pass::Fwd), 2 * (4 * 1031 * 64 * 2) + 2 * (2 * 1031 * 64 * 2) + 4 * 1031 * 4);
  p.varlen_padded = true;
  EXPECT_EQ(p.q_elements(), 4 * 4 * 1013 * 64);
  EXPECT_EQ(p.lse_elements(), 4 * 4 * 1013);
  EXPECT_TRUE(p.key_padded());
  EXPECT_EQ(key_lengths(p), p.seq_lengths);
  EXPECT_EQ(cu_seqlens(p), (std::vector<int64_t>{0, 0, 1, 18, 1031}));
}

TEST(VarlenProblem, UnsupportedCombinationsAreInvalidWithAReason) {
  auto reason = [](Problem p) { return p.invalid_reason().value_or(""); };
  Problem p = varlen({5, 9});
  EXPECT_EQ(reason(p), "");
  Problem q = p;
  q.seqlen_k = 100;
  EXPECT_NE(reason(q).find("not the longest"), std::string::npos);  // a varlen decode: seqlen-k is the longest
  q = p;
  q.padding = Padding::Random;
  EXPECT_NE(reason(q).find("--padding"), std::string::npos);
  q = p;
  q.kv_page = 64;
  EXPECT_NE(reason(q).find("paged"), std::string::npos);
  q = p;
  q.seqlen_q = 8;
  EXPECT_NE(reason(q).find("longest"), std::string::npos);
  q = p;
  q.batch = 3;
  EXPECT_NE(reason(q).find("2 sequence lengths"), std::string::npos);
  q = varlen({0, 0});
  q.seqlen_q = 1;
  EXPECT_NE(reason(q).find("no token"), std::string::npos);
}

TEST(VarlenSweep, TheAxisExpandsPackedAndPaddedPointsWithoutRepeats) {
  SweepSpec s;
  s.methods = {"flash2"};
  s.seqlen = {1024, 2048};  // not an axis of a varlen point: the first only
  s.batch = {3, 5};
  s.seqlens = {"uniform:1-100"};
  s.varlen_padded = {false, true};
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 4u);  // 2 batches x 2 layouts
  EXPECT_EQ(points[0].problem.batch, 3);
  EXPECT_EQ(points[2].problem.batch, 5);
  EXPECT_FALSE(points[0].problem.varlen_padded);
  EXPECT_TRUE(points[1].problem.varlen_padded);
  EXPECT_EQ(points[0].problem.seq_lengths, points[1].problem.seq_lengths);  // the padded twin: the same sequences
  // The same seed, the same lengths: batch 5's first three are batch 3's.
  EXPECT_TRUE(std::equal(points[0].problem.seq_lengths.begin(), points[0].problem.seq_lengths.end(),
                         points[2].problem.seq_lengths.begin()));

  SweepSpec t = s;
  t.batch = {1};
  t.tokens = 16384;
  t.seqlens = {"uniform:512-8192"};
  t.varlen_padded = {false};
  const auto packs = expand(t);
  ASSERT_EQ(packs.size(), 1u);
  EXPECT_LE(packs[0].problem.total_tokens(), 16384);
  EXPECT_GT(packs[0].problem.total_tokens(), 16384 - 8192);

  SweepSpec f = s;
  f.seqlens = {"file:" + write_file("flashio_lengths_sweep.txt", "7 0 3")};
  f.varlen_padded = {false};
  const auto file_points = expand(f);
  ASSERT_EQ(file_points.size(), 1u);  // the file's batch: the batch axis does not multiply it
  EXPECT_EQ(file_points[0].problem.batch, 3);

  SweepSpec bad = s;
  bad.padding = {Padding::Random};
  EXPECT_THROW(expand(bad), std::invalid_argument);
  bad = s;
  bad.seqlens = {"file:/nonexistent/flashio/lengths"};
  EXPECT_THROW(expand(bad), std::invalid_argument);
}

TEST(VarlenCheck, RowsAreTheRealTokensOnes) {
  const Problem p = varlen({0, 1, 17, 1013}, 3);
  const auto rows = all_rows(p);
  EXPECT_EQ(int64_t(rows.size()), 3 * 1031);
  for (const auto& r : rows) EXPECT_LT(r.i, p.seq_lengths[size_t(r.b)]);
  EXPECT_EQ(rows_to_check(p, 1e12).size(), rows.size());  // within the budget: every row
  // Sampled (a small budget): still inside each sequence, and the longest and shortest non-empty
  // sequences are among them.
  const Problem big = varlen({0, 4096, 3, 8192, 1}, 16, 128);
  const auto sampled = rows_to_check(big, 1e8);
  ASSERT_FALSE(sampled.empty());
  std::set<int64_t> seqs;
  for (const auto& r : sampled) {
    EXPECT_LT(r.i, big.seq_lengths[size_t(r.b)]);
    seqs.insert(r.b);
  }
  EXPECT_TRUE(seqs.count(3));  // the longest
  EXPECT_TRUE(seqs.count(4));  // the shortest non-empty (length 1)
  // Rows as stored: packed [H, T] rows, padded [B, H, N].
  const auto cu = cu_seqlens(p);
  EXPECT_EQ(stored_row(p, cu, {3, 2, 5}), 2 * 1031 + 18 + 5);
  Problem padded = p;
  padded.varlen_padded = true;
  EXPECT_EQ(stored_row(padded, cu, {3, 2, 5}), (3 * 3 + 2) * 1013 + 5);
}

// The reference of a varlen problem is attention over each sequence's own tokens: sequence b's rows
// equal those of a batch-1 problem of its length on the same values (causal: top-left within it).
TEST(VarlenReference, EachSequenceIsItsOwnAttention) {
  for (bool causal : {false, true}) {
    const Problem p = varlen({5, 0, 1, 17, 40}, 2, 32, causal);
    HostInputs in = make_inputs(p, false);  // logical [B, H, N, d]; the packed tensors hold these values
    const HostTensors t{in.q.data(), in.k.data(), in.v.data(), in.key_lengths.data()};
    std::vector<double> out, lse;
    const auto rows = all_rows(p);
    reference_rows(p, t, rows, out, lse, 1);
    size_t at = 0;
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t n = p.seq_lengths[size_t(b)];
      if (n == 0) continue;
      Problem one;
      one.heads = p.heads;
      one.head_dim = p.head_dim;
      one.seqlen_q = n;
      one.causal = causal;
      std::vector<uint16_t> q, k, v;  // sequence b's first n rows of each head
      for (int64_t h = 0; h < p.heads; ++h) {
        const size_t base = size_t((b * p.heads + h) * p.seqlen_q * p.head_dim), len = size_t(n * p.head_dim);
        q.insert(q.end(), in.q.begin() + base, in.q.begin() + base + len);
        k.insert(k.end(), in.k.begin() + base, in.k.begin() + base + len);
        v.insert(v.end(), in.v.begin() + base, in.v.begin() + base + len);
      }
      std::vector<double> o1, l1;
      reference_rows(one, {q.data(), k.data(), v.data(), nullptr}, all_rows(one), o1, l1, 1);
      for (size_t r = 0; r < l1.size(); ++r, ++at) {
        ASSERT_EQ(rows[at].b, b);
        EXPECT_EQ(lse[at], l1[r]) << "causal " << causal << " b " << b << " row " << r;
        for (int64_t c = 0; c < p.head_dim; ++c)
          EXPECT_EQ(out[at * size_t(p.head_dim) + size_t(c)], o1[r * size_t(p.head_dim) + size_t(c)]);
      }
    }
    EXPECT_EQ(at, rows.size());
  }
}

TEST(VarlenMethods, Flash2RunsThePackedForwardOthersSkipWithTheReason) {
  const DeviceInfo dev = h100();
  Problem p = varlen({0, 1, 17, 1013}, 4, 128);
  const Method* flash2 = builtin_registry().find("flash2");
  ASSERT_TRUE(flash2);
  EXPECT_TRUE(flash2->supports(p, Pass::Fwd, dev)) << flash2->supports(p, Pass::Fwd, dev).reason;
  const Support bwd = flash2->supports(p, Pass::Bwd, dev);
  EXPECT_FALSE(bwd);
  EXPECT_NE(bwd.reason.find("varlen backward"), std::string::npos) << bwd.reason;
  Problem drop = p;
  drop.dropout = 0.1;
  EXPECT_NE(flash2->supports(drop, Pass::Fwd, dev).reason.find("dropout"), std::string::npos);
  for (const std::string& name : builtin_registry().names()) {
    if (name == "flash2" || name.rfind("blocksparse_", 0) == 0) continue;  // those need a pattern first
    const Support s = builtin_registry().find(name)->supports(p, Pass::Fwd, dev);
    EXPECT_FALSE(s) << name;
    EXPECT_NE(s.reason.find("packed variable-length"), std::string::npos) << name << ": " << s.reason;
  }
  // The padded twin is a key-padding problem: flash2 and standard run it, backward included.
  p.varlen_padded = true;
  EXPECT_TRUE(flash2->supports(p, Pass::Fwd, dev));
  EXPECT_TRUE(flash2->supports(p, Pass::Bwd, dev));
  const Support standard = builtin_registry().find("standard")->supports(p, Pass::Fwd, dev);
  EXPECT_TRUE(standard) << standard.reason;
}
