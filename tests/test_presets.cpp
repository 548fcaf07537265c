// Presets and sweep files: every preset parses and expands to the paper's setting; sweep
// files in the documented format expand, malformed ones fail with one line naming the problem.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "bench/core/method.h"
#include "bench/sweep/presets.h"
#include "bench/sweep/sweep_file.h"

using namespace flashio;

namespace {

bool all_registered(const Preset& p) {
  for (const auto& m : p.requires_methods)
    if (!builtin_registry().find(m)) return false;
  return true;
}

std::vector<Point> preset_points(const std::string& name) {
  const Preset* p = find_preset(name);
  EXPECT_NE(p, nullptr) << name;
  return p ? expand_all(p->sweep().sweeps) : std::vector<Point>{};
}

}  // namespace

TEST(Presets, EveryPresetParsesAndExpands) {
  ASSERT_GE(all_presets().size(), 20u);
  for (const auto& p : all_presets()) {
    SCOPED_TRACE(p.name);
    const SweepFile f = p.sweep();
    EXPECT_FALSE(p.reproduces.empty());
    const auto points = expand_all(f.sweeps);
    EXPECT_GT(points.size(), 0u);
    for (const auto& pt : points) {
      EXPECT_NE(std::find(p.requires_methods.begin(), p.requires_methods.end(), pt.method), p.requires_methods.end())
          << pt.method << " is not in requires_methods";
      if (all_registered(p)) {
        EXPECT_NE(builtin_registry().find(pt.method), nullptr) << pt.method;
      }
    }
  }
}

TEST(Presets, NamesAreUnique) {
  auto names = preset_names();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

TEST(Presets, TheTablesOfFlashAttentionAppendixE9) {
  // Table 13: dropout × masking × pass → Tables 14–25; 8 heads, d 64, batch 16, N 128 … 65536.
  struct Row {
    int table;
    bool dropout, masking;
    Pass pass;
  };
  const Row rows[] = {{14, true, true, Pass::Fwd},   {15, true, true, Pass::Bwd},   {16, true, true, Pass::FwdBwd},
                      {17, false, true, Pass::Fwd},  {18, false, true, Pass::Bwd},  {19, false, true, Pass::FwdBwd},
                      {20, true, false, Pass::Fwd},  {21, true, false, Pass::Bwd},  {22, true, false, Pass::FwdBwd},
                      {23, false, false, Pass::Fwd}, {24, false, false, Pass::Bwd}, {25, false, false, Pass::FwdBwd}};
  for (const auto& r : rows) {
    const auto points = preset_points("fa1-table" + std::to_string(r.table));
    ASSERT_EQ(points.size(), 3u * 10u) << r.table;  // standard, standard_fused, flash1 × 10 sequence lengths
    EXPECT_EQ(points[0].method, "standard");
    EXPECT_EQ(points[1].method, "standard_fused");
    EXPECT_EQ(points[2].method, "flash1");
    for (const auto& pt : points) {
      EXPECT_EQ(pt.pass, r.pass);
      EXPECT_EQ(pt.problem.batch, 16);
      EXPECT_EQ(pt.problem.heads, 8);
      EXPECT_EQ(pt.problem.head_dim, 64);
      EXPECT_EQ(pt.problem.dropout, r.dropout ? 0.1 : 0.0);
      EXPECT_EQ(pt.problem.padding, r.masking ? Padding::Random : Padding::None);
    }
    EXPECT_EQ(points.front().problem.seqlen_q, 128);
    EXPECT_EQ(points.back().problem.seqlen_q, 65536);
  }
  EXPECT_EQ(preset_points("fa1-tables").size(), 3u * 3u * 10u * 4u);
  const auto memory = preset_points("fa1-table26");
  ASSERT_EQ(memory.size(), 30u);
  for (const auto& pt : memory) {
    EXPECT_EQ(pt.pass, Pass::FwdBwd);
    EXPECT_EQ(pt.problem.dropout, 0.0);
    EXPECT_EQ(pt.problem.padding, Padding::None);
  }
}

TEST(Presets, Figure2) {
  const auto left = preset_points("figure2-left");
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].name(), "standard/fwdbwd/b:64/h:16/n:1024/d:64/fp16/pad");
  EXPECT_EQ(left[1].name(), "flash1/fwdbwd/b:64/h:16/n:1024/d:64/fp16/pad");
  const auto middle = preset_points("figure2-middle");
  ASSERT_EQ(middle.size(), 4u);
  std::vector<int> bc;
  for (const auto& pt : middle) bc.push_back(pt.problem.block_c);
  EXPECT_EQ(bc, (std::vector<int>{64, 128, 256, 512}));
  // Dense flash2 and standard once each pass; the block-sparse methods at ten densities.
  const auto right = preset_points("figure2-right");
  ASSERT_EQ(right.size(), 2u * 2u + 2u * 2u * 10u);
  EXPECT_EQ(right[0].name(), "flash2/fwd/b:16/h:8/n:4096/d:64/fp16");
  for (size_t i = 4; i < right.size(); ++i) {
    EXPECT_EQ(right[i].method.rfind("blocksparse_", 0), 0u) << right[i].name();
    EXPECT_EQ(right[i].problem.pattern, "random") << right[i].name();
  }
  EXPECT_EQ(right.back().problem.sparse_density, 0.05);
}

TEST(Presets, FlashAttention2Figures) {
  const std::pair<const char*, Pass> figures[] = {{"fa2-figure4", Pass::FwdBwd},
                                                  {"fa2-figure5", Pass::Fwd},
                                                  {"fa2-figure6", Pass::Bwd},
                                                  {"fa2-figure7", Pass::FwdBwd}};
  for (const auto& [name, pass] : figures) {
    const auto points = preset_points(name);
    // methods × N × d × causal: standard, flash1, flash2, and in Figure 7 (the H100's) flash3
    const size_t methods = std::string(name) == "fa2-figure7" ? 4 : 3;
    ASSERT_EQ(points.size(), methods * 6u * 2u * 2u) << name;
    for (const auto& pt : points) {
      EXPECT_EQ(pt.pass, pass);
      EXPECT_EQ(pt.problem.batch * pt.problem.seqlen_q, 16384);
      EXPECT_EQ(pt.problem.heads * pt.problem.head_dim, 2048);
    }
  }
}

TEST(SweepFile, AxesAtTheTopLevel) {
  const SweepFile f = parse_sweep_text(
      R"({"description": "mine", "method": ["flash2"], "pass": ["fwd", "bwd"], "batch": 2, "heads": [4],
          "seqlen": [17, 1013], "head_dim": 64, "dtype": "bf16", "causal": [false, true], "dropout": 0.1, "seed": 7})",
      "t.json");
  EXPECT_EQ(f.description, "mine");
  const auto points = expand_all(f.sweeps);
  ASSERT_EQ(points.size(), 2u * 2u * 2u);
  EXPECT_EQ(points[0].name(), "flash2/fwd/b:2/h:4/n:17/d:64/bf16/drop:0.1");
  EXPECT_EQ(points[0].problem.seed, 7u);
}

TEST(SweepFile, DeterministicAxis) {
  const auto points = expand_all(
      parse_sweep_text(R"({"method": "flash2", "pass": "bwd", "seqlen": 128, "deterministic": [false, true]})", "t").sweeps);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].name(), "flash2/bwd/b:1/h:16/n:128/d:64/fp16/det");
}

TEST(SweepFile, SeveralSweepsAreAUnionWithoutDuplicates) {
  const SweepFile f = parse_sweep_text(
      R"({"sweeps": [{"method": "flash2", "seqlen": [128, 256]}, {"method": ["flash2", "standard"], "seqlen": 256}]})",
      "t.json");
  const auto points = expand_all(f.sweeps);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[2].name(), "standard/fwd/b:1/h:16/n:256/d:64/fp16");
}

TEST(SweepFile, TokensAndModelDim) {
  const auto points = expand_all(
      parse_sweep_text(R"({"tokens": 16384, "model_dim": 2048, "seqlen": [512, 16384], "head_dim": 128})", "t").sweeps);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].problem.batch, 32);
  EXPECT_EQ(points[0].problem.heads, 16);
}

class MalformedSweepFile : public testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(MalformedSweepFile, OneLineNamingTheProblem) {
  const auto [text, expected] = GetParam();
  try {
    parse_sweep_text(text, "my.json");
    FAIL() << "accepted: " << text;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(what.rfind("my.json", 0), 0u) << what;
    EXPECT_NE(what.find(expected), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    SweepFile, MalformedSweepFile,
    testing::Values(std::make_pair("{\"seqlen\": [128,", "not valid JSON"),
                    std::make_pair("[1, 2]", "my.json: : Value type not permitted"),
                    std::make_pair(R"({"seqlenz": [128]})", "my.json: /seqlenz: a key the schema does not have"),
                    std::make_pair(R"({"seqlens": [128]})", "my.json: /seqlens/0: Value type not permitted"),
                    std::make_pair(R"({"seqlens": "uniform:5"})", "'uniform:5' is not a range"),
                    std::make_pair(R"({"seqlens": "uniform:0-0"})", "no token at all"),
                    std::make_pair(R"({"varlen_as": "padded"})", "applies to \"seqlens\" points only"),
                    std::make_pair(R"({"seqlens": "uniform:1-9", "varlen_as": "sideways"})", "\"varlen_as\" value \"sideways\" is not one of packed, padded"),
                    std::make_pair(R"({"seqlen": []})", "my.json: /seqlen: Array should contain no fewer than 1"),
                    std::make_pair(R"({"seqlen": ["128"]})", "my.json: /seqlen/0: Value type not permitted"),
                    std::make_pair(R"({"seqlen": [1.5]})", "/seqlen/0: Value type not permitted by 'type' constraint (found 1.5)"),
                    std::make_pair(R"({"head_dim": 0})", "my.json: /head_dim: Expected number greater than or equal to 1"),
                    std::make_pair(R"({"dropout": 1.0})", "\"dropout\" value 1.0 is not in [0, 1)"),
                    std::make_pair(R"({"causal": "yes"})", "/causal: Value type not permitted by 'type' constraint (found \"yes\")"),
                    std::make_pair(R"({"deterministic": 1})", "/deterministic: Value type not permitted"),
                    std::make_pair(R"({"deterministic": []})", "/deterministic: Array should contain no fewer than 1"),
                    std::make_pair(R"({"dtype": "fp8"})", "not one of fp16, bf16"),
                    std::make_pair(R"({"pass": "sideways"})", "not one of fwd, bwd, fwdbwd"),
                    std::make_pair(R"({"padding": "left"})", "not one of none, random"),
                    std::make_pair(R"({"heads": 6, "kv_heads": 4})", "heads (6) must be divisible by kv-heads (4)"),
                    std::make_pair(R"({"tokens": [16384]})", "my.json: /tokens: Value type not permitted"),
                    std::make_pair(R"({"tokens": 16384, "batch": 2})", "both set the batch"),
                    std::make_pair(R"({"tokens": 1000, "seqlen": 512})", "not a positive multiple"),
                    std::make_pair(R"({"sweeps": []})", "my.json: /sweeps: Array should contain no fewer than 1"),
                    std::make_pair(R"({"sweeps": [{"seqlen": 128}], "seqlen": 256})", "beside \"sweeps\""),
                    std::make_pair(R"({"sweeps": [{"seqlen": 128}, {"batch": -1}]})", "my.json: /sweeps/1/batch: "),
                    std::make_pair(R"({"density": [0]})", "\"density\" value 0 is not in (0, 1]"),
                    std::make_pair(R"({"pattern": "zigzag"})", "zigzag"),
                    std::make_pair(R"({"sparse_window": [1, 2]})", "my.json: /sparse_window: Value type not permitted")));

TEST(SweepFile, UnreadableFile) { EXPECT_THROW(read_sweep_file("/nonexistent/sweep.json"), std::invalid_argument); }

TEST(Presets, LlamaDecodePresetsCoverBatchContextAndBothLayouts) {
  for (const auto& [name, heads] :
       {std::pair<std::string, int64_t>{"llama3-8b-decode", 32}, {"llama3-70b-decode", 64}}) {
    SCOPED_TRACE(name);
    const auto points = preset_points(name);
    EXPECT_EQ(points.size(), 4u * 4u * 2u * 3u);  // batch × context × layout × method
    std::set<std::string> names;
    for (const auto& pt : points) {
      EXPECT_EQ(pt.problem.heads, heads);
      EXPECT_EQ(pt.problem.kvh(), 8);
      EXPECT_EQ(pt.problem.head_dim, 128);
      EXPECT_EQ(pt.problem.seqlen_q, 1);
      EXPECT_TRUE(pt.problem.kv_page == 0 || pt.problem.kv_page == 64);
      // Fits in 80 GB: K and V of the largest point are 64 GiB.
      EXPECT_LE(2 * pt.problem.kv_elements() * 2, int64_t(64) << 30);
      names.insert(pt.name());
    }
    EXPECT_EQ(names.size(), points.size());
    EXPECT_TRUE(
        names.count("flash_decode/fwd/b:128/h:" + std::to_string(heads) + "/kvh:8/n:1/nk:131072/d:128/fp16/paged:64"));
  }
}

TEST(Presets, LlamaDecodeVarlenRunsPackedAndPaddedTwinsOfTheSameSequences) {
  const auto points = preset_points("llama3-8b-decode-varlen");
  // flash_decode: batch × lengths × layout; flash2: padded; flash_decode paged:64 at batch 32: lengths
  EXPECT_EQ(points.size(), 2u * 2u * 2u + 2u * 2u + 2u);
  std::map<std::string, std::vector<int32_t>> packed_lengths;  // "b/seqlens" -> the packed point's lengths
  std::set<std::string> names;
  for (const auto& pt : points) {
    const Problem& p = pt.problem;
    EXPECT_TRUE(p.key_varlen()) << pt.name();
    EXPECT_EQ(p.seqlen_q, 1);
    EXPECT_EQ(p.heads, 32);
    EXPECT_EQ(p.kvh(), 8);
    EXPECT_EQ(p.head_dim, 128);
    EXPECT_TRUE(p.batch == 8 || p.batch == 32);
    const int32_t lo = p.seqlens == "uniform:1024-16384" ? 1024 : 4096, hi = lo == 1024 ? 16384 : 32768;
    for (int32_t len : p.seq_lengths) {
      EXPECT_GE(len, lo);
      EXPECT_LE(len, hi);
    }
    EXPECT_TRUE(pt.method == "flash_decode" || p.varlen_padded) << pt.name();
    EXPECT_FALSE(p.invalid_reason());
    if (p.paged()) {
      EXPECT_TRUE(p.paged_varlen() && p.batch == 32 && p.kv_page == 64 && pt.method == "flash_decode") << pt.name();
      EXPECT_NE(pt.name().find("/paged:64/varlen:"), std::string::npos) << pt.name();
    }
    if (p.packed() && !p.paged()) packed_lengths[std::to_string(p.batch) + "/" + p.seqlens] = p.seq_lengths;
    names.insert(pt.name());
  }
  int paged = 0;
  for (const auto& pt : points)
    if (pt.problem.paged()) {  // the same sequences as the packed point of that batch and distribution
      ++paged;
      EXPECT_EQ(pt.problem.seq_lengths, packed_lengths.at("32/" + pt.problem.seqlens)) << pt.name();
    }
  EXPECT_EQ(paged, 2);
  EXPECT_EQ(names.size(), points.size());
  EXPECT_TRUE(names.count(points[0].name()));
  EXPECT_NE(points[0].name().find("flash_decode/fwd/b:8/h:32/kvh:8/n:1/nk:"), std::string::npos) << points[0].name();
  EXPECT_NE(points[0].name().find("/varlen:uniform:1024-16384"), std::string::npos) << points[0].name();
}

TEST(Presets, VarlenPrefillPacksSixteenAndSixtyFourThousandTokens) {
  const auto points = preset_points("varlen-prefill");
  EXPECT_EQ(points.size(), 2u * 2u * 2u * 2u);  // tokens x d x causal x layout
  std::set<std::string> names;
  for (const auto& pt : points) {
    const Problem& p = pt.problem;
    EXPECT_EQ(pt.method, "flash2");
    EXPECT_EQ(p.seqlens, "uniform:512-8192");
    EXPECT_EQ(p.heads * p.head_dim, 2048);
    const int64_t budget = p.total_tokens() > 16384 ? 65536 : 16384;
    EXPECT_LE(p.total_tokens(), budget);
    EXPECT_GT(p.total_tokens(), budget - 8192);
    for (int32_t len : p.seq_lengths) {
      EXPECT_GE(len, 512);
      EXPECT_LE(len, 8192);
    }
    EXPECT_FALSE(p.invalid_reason());
    names.insert(pt.name());
  }
  EXPECT_EQ(names.size(), points.size());
}
