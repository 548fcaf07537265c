// The flashio command line without a GPU: help, list, dry runs, and bad input (one line,
// exit code 2, no output file).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "bench/cli/commands.h"
#include "bench/core/record.h"
#include "bench/core/sparsity.h"
#include "bench/cuda/device_query.h"

using namespace flashio;

namespace {

int run_cli(std::vector<std::string> args, std::string* err = nullptr, std::string* out = nullptr) {
  args.insert(args.begin(), "flashio");
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int rc = flashio_main(args);
  const std::string e = testing::internal::GetCapturedStderr();
  const std::string o = testing::internal::GetCapturedStdout();
  if (err) *err = e;
  if (out) *out = o;
  return rc;
}

bool has_gpu() { return device_count(nullptr) > 0; }

}  // namespace

TEST(Cli, HelpOnEverySubcommand) {
  for (const char* sub : {"list", "run", "device"}) {
    std::string out;
    EXPECT_EQ(run_cli({sub, "--help"}, nullptr, &out), 0) << sub;
    EXPECT_NE(out.find("--"), std::string::npos) << sub;
  }
}

TEST(Cli, ListShowsTheMethodsWithoutAGpu) {
  std::string out;
  ASSERT_EQ(run_cli({"list"}, nullptr, &out), 0);
  for (const char* m : {"reference", "standard", "flash2"}) EXPECT_NE(out.find(m), std::string::npos) << m;
}

TEST(Cli, ListExplainsWhyNotForAShape) {
  std::string out;
  ASSERT_EQ(run_cli({"list", "--head-dim", "80", "--seqlen", "1024", "--method", "flash2"}, nullptr, &out), 0);
  EXPECT_NE(out.find("no: flash2 supports head dims"), std::string::npos) << out;
}

TEST(Cli, DryRunListsPointsWithoutAGpu) {
  std::string out;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--seqlen", "128,256", "--head-dim", "64", "--method", "flash2", "--batch", "2",
                     "--heads", "4"},
                    nullptr, &out),
            0);
  EXPECT_NE(out.find("flash2/fwd/b:2/h:4/n:128/d:64/fp16"), std::string::npos) << out;
  EXPECT_NE(out.find("flash2/fwd/b:2/h:4/n:256/d:64/fp16"), std::string::npos) << out;
}

std::string fixture(const std::string& name);

TEST(Cli, VarlenPointsAreNamedAndTheirPaddedTwinsListed) {
  std::string out;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--seqlens", fixture("file:@lengths-ok@"), "--method", "flash2,standard",
                     "--varlen-as", "packed,padded", "--heads", "2", "--seqlen", "128,256"},
                    nullptr, &out),
            0);
  const std::string packed = "flash2/fwd/b:4/h:2/n:1013/d:64/fp16/varlen:file:flashio_fixture_lengths-ok.json";
  EXPECT_NE(out.find(packed + "  "), std::string::npos) << out;
  EXPECT_NE(out.find(packed + "/padded"), std::string::npos) << out;
  EXPECT_EQ(out.find("n:128"), std::string::npos) << out;  // --seqlen is not an axis of a varlen point
  out.clear();
  ASSERT_EQ(run_cli({"list", "--seqlens", "uniform:1-64", "--batch", "3", "--method", "standard"}, nullptr, &out), 0);
  EXPECT_NE(out.find("packed variable-length"), std::string::npos) << out;
}

TEST(Cli, VarlenDecodePointsTakeSeqlenQAndRefuseItAloneInOneLine) {
  std::string out, err;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--seqlens", "uniform:1-3000", "--seqlen-q", "1,4", "--batch", "3", "--heads",
                     "8", "--kv-heads", "2", "--method", "flash_decode,flash2", "--head-dim", "128"},
                    &err, &out),
            0)
      << err;
  EXPECT_NE(out.find("flash_decode/fwd/b:3/h:8/kvh:2/n:1/nk:"), std::string::npos) << out;
  EXPECT_NE(out.find("flash_decode/fwd/b:3/h:8/kvh:2/n:4/nk:"), std::string::npos) << out;
  EXPECT_NE(out.find("/d:128/fp16/varlen:uniform:1-3000"), std::string::npos) << out;
  out.clear();
  ASSERT_EQ(run_cli({"list", "--seqlens", "uniform:1-3000", "--seqlen-q", "1", "--batch", "3", "--method", "flash2"},
                    nullptr, &out),
            0);
  EXPECT_NE(out.find("flash2 cannot read a packed varlen decode"), std::string::npos) << out;
  err.clear();
  EXPECT_EQ(run_cli({"run", "--dry-run", "--seqlen-q", "1", "--method", "flash_decode"}, &err), 2);
  EXPECT_NE(err.find("--seqlen-q: applies to --seqlens points only"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  err.clear();
  EXPECT_EQ(
      run_cli({"run", "--dry-run", "--seqlens", "uniform:1-8", "--seqlen-q", "8", "--method", "flash_decode"}, &err),
      2);
  EXPECT_NE(err.find("fewer queries per sequence than its longest key length"), std::string::npos) << err;
}

// Paged varlen decode: --seqlens with --seqlen-q and --kv-layout paged:P; named with both suffixes,
// flash_decode runs it and the others skip it with the reason; pages for varlen self-attention
// are refused in one line.
TEST(Cli, PagedVarlenDecodePointsAreNamedAndSelfAttentionRefusesPagesInOneLine) {
  std::string out, err;
  ASSERT_EQ(run_cli({"run",         "--dry-run",
                     "--seqlens",   "uniform:1-3000",
                     "--seqlen-q",  "1",
                     "--batch",     "3",
                     "--heads",     "8",
                     "--kv-heads",  "2",
                     "--method",    "flash_decode",
                     "--head-dim",  "128",
                     "--kv-layout", "contiguous,paged:64",
                     "--varlen-as", "packed,padded"},
                    &err, &out),
            0)
      << err;
  EXPECT_NE(out.find("/d:128/fp16/paged:64/varlen:uniform:1-3000  "), std::string::npos) << out;
  EXPECT_NE(out.find("/d:128/fp16/paged:64/varlen:uniform:1-3000/padded"), std::string::npos) << out;
  EXPECT_NE(out.find("/d:128/fp16/varlen:uniform:1-3000  "), std::string::npos) << out;
  out.clear();
  ASSERT_EQ(run_cli({"list", "--seqlens", "uniform:1-3000", "--seqlen-q", "1", "--batch", "3", "--kv-layout",
                     "paged:64", "--method", "flash2"},
                    nullptr, &out),
            0);
  EXPECT_NE(out.find("flash2 cannot read a paged K/V cache"), std::string::npos) << out;
  err.clear();
  EXPECT_EQ(run_cli({"run", "--dry-run", "--seqlens", "uniform:1-3000", "--batch", "3", "--kv-layout", "paged:64",
                     "--method", "flash2"},
                    &err),
            2);
  EXPECT_NE(err.find("a paged K/V cache applies to a varlen decode only"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(Cli, DeterministicAxisNamesPointsAndSkipsMethodsThatCannot) {
  std::string out;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--seqlen", "256", "--method", "flash2", "--pass", "bwd", "--deterministic",
                     "false,true", "--batch", "1", "--heads", "2"},
                    nullptr, &out),
            0);
  EXPECT_NE(out.find("flash2/bwd/b:1/h:2/n:256/d:64/fp16  "), std::string::npos) << out;
  EXPECT_NE(out.find("flash2/bwd/b:1/h:2/n:256/d:64/fp16/det"), std::string::npos) << out;
  out.clear();
  ASSERT_EQ(run_cli({"list", "--seqlen", "256", "--pass", "bwd", "--deterministic", "true", "--pattern", "butterfly",
                     "--method", "blocksparse_flash"},
                    nullptr, &out),
            0);
  EXPECT_NE(out.find("no: blocksparse_flash has no deterministic backward"), std::string::npos) << out;
}

TEST(Cli, GpuSubcommandsFailWithOneLineWithoutAGpu) {
  if (has_gpu()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable here";
  for (std::vector<std::string> args : {std::vector<std::string>{"device"}, {"run", "--seqlen", "128", "--out", ::testing::TempDir() + "x.json"}}) {
    std::string err;
    EXPECT_EQ(run_cli(args, &err), 1) << args[0];
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("GPU"), std::string::npos) << err;
  }
  EXPECT_FALSE(std::filesystem::exists(::testing::TempDir() + "x.json"));
}

// Files the bad-input cases name as @not-json@, @unknown-key@, @unknown-method@.
std::string fixture(const std::string& name) {
  static const std::map<std::string, std::string> contents = {
      {"@not-json@", "{\"seqlen\": [128,"},
      {"@unknown-key@", "{\"seqlenz\": [128]}"},
      {"@lengths-empty@", "# no lengths\n"},
      {"@lengths-bad@", "512 1024\n12x\n"},
      {"@lengths-zeros@", "0 0\n"},
      {"@lengths-ok@", "0 1 17 1013\n"},
      {"@unknown-method@", "{\"method\": [\"flash9\"], \"seqlen\": 128}"},
  };
  if (name.rfind("file:@", 0) == 0) return "file:" + fixture(name.substr(5));  // a lengths file
  const auto it = contents.find(name);
  if (it == contents.end()) return name;
  const std::string path = ::testing::TempDir() + "flashio_fixture_" + name.substr(1, name.size() - 2) + ".json";
  std::ofstream(path) << it->second;
  return path;
}

class BadInput : public testing::TestWithParam<std::vector<std::string>> {};

TEST_P(BadInput, OneLineExitTwoNoFile) {
  const std::string out = ::testing::TempDir() + "flashio_bad_input.json";
  std::filesystem::remove(out);
  std::filesystem::remove(out + "l");
  std::vector<std::string> args = GetParam();
  for (auto& a : args) a = fixture(a);
  args.push_back("--out");
  args.push_back(out);
  std::string err;
  EXPECT_EQ(run_cli(args, &err), 2);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(err.rfind("flashio: error:", 0), 0u) << err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + "l"));
}

INSTANTIATE_TEST_SUITE_P(
    Cli, BadInput,
    testing::Values(
        std::vector<std::string>{"run", "--head-dim", "0"}, std::vector<std::string>{"run", "--head-dim", "abc"},
        std::vector<std::string>{"run", "--seqlen", "-5"}, std::vector<std::string>{"run", "--seqlen", "12x"},
        std::vector<std::string>{"run", "--batch", "0"},
        std::vector<std::string>{"run", "--heads", "6", "--kv-heads", "4"},
        std::vector<std::string>{"run", "--dtype", "fp8"}, std::vector<std::string>{"run", "--method", "flash9"},
        std::vector<std::string>{"run", "--pass", "sideways"}, std::vector<std::string>{"run", "--causal", "maybe"},
        std::vector<std::string>{"run", "--deterministic", "sometimes"},
        std::vector<std::string>{"run", "--deterministic", ""}, std::vector<std::string>{"run", "--dropout", "1.0"},
        std::vector<std::string>{"run", "--dropout", "-0.1"}, std::vector<std::string>{"run", "--padding", "left"},
        std::vector<std::string>{"run", "--tokens", "1000", "--seqlen", "512"},
        std::vector<std::string>{"run", "--model-dim", "100", "--head-dim", "64"},
        std::vector<std::string>{"run", "--reps", "0"}, std::vector<std::string>{"run", "--block-r", "-1"},
        std::vector<std::string>{"run", "--seqlen", ""}, std::vector<std::string>{"run", "--no-such-option"},
        std::vector<std::string>{"frobnicate"}, std::vector<std::string>{"run", "--warmup", "-1"},
        std::vector<std::string>{"run", "--heads", "8", "--kv-heads", "3"},
        std::vector<std::string>{"run", "--seqlen-k", "x"}, std::vector<std::string>{"run", "--preset", "table99"},
        std::vector<std::string>{"run", "--preset", "figure2-right", "--density", "2"},
        std::vector<std::string>{"run", "--preset", "fa1-table14", "--head-dim", "0"},
        std::vector<std::string>{"run", "--preset", "fa1-table14", "--sweep", "@unknown-key@"},
        std::vector<std::string>{"run", "--sweep", "/nonexistent/sweep.json"},
        std::vector<std::string>{"run", "--sweep", "@not-json@"},
        std::vector<std::string>{"run", "--sweep", "@unknown-key@"},
        std::vector<std::string>{"run", "--sweep", "@unknown-method@"},
        std::vector<std::string>{"run", "--shard", "2/2"}, std::vector<std::string>{"run", "--shard", "abc"},
        std::vector<std::string>{"run", "--shard", "1/0"}, std::vector<std::string>{"run", "--devices", "x"},
        std::vector<std::string>{"run", "--devices", "0,0"}, std::vector<std::string>{"run", "--devices", "0,-1"},
        std::vector<std::string>{"run", "--mma", "tensor"}, std::vector<std::string>{"run", "--kv-layout", "paged:32"},
        std::vector<std::string>{"run", "--kv-layout", "paged:0"},
        std::vector<std::string>{"run", "--kv-layout", "paged:"},
        std::vector<std::string>{"run", "--kv-layout", "paged:64x"},
        std::vector<std::string>{"run", "--kv-layout", "paged:-64"},
        std::vector<std::string>{"run", "--kv-layout", "paged"},
        std::vector<std::string>{"run", "--kv-layout", "blocked:64"},
        std::vector<std::string>{"run", "--kv-layout", "contiguous,paged:100"},
        // --seqlens (issue 20): an empty length list, a lengths file that does not parse, bad grammar.
        std::vector<std::string>{"run", "--seqlens", ""}, std::vector<std::string>{"run", "--seqlens", "uniform:"},
        std::vector<std::string>{"run", "--seqlens", "uniform:5"},
        std::vector<std::string>{"run", "--seqlens", "uniform:9-3"},
        std::vector<std::string>{"run", "--seqlens", "uniform:0-0"},
        std::vector<std::string>{"run", "--seqlens", "uniform:a-b"},
        std::vector<std::string>{"run", "--seqlens", "file:"},
        std::vector<std::string>{"run", "--seqlens", "file:/nonexistent/lengths.txt"},
        std::vector<std::string>{"run", "--seqlens", "file:@lengths-empty@"},
        std::vector<std::string>{"run", "--seqlens", "file:@lengths-bad@"},
        std::vector<std::string>{"run", "--seqlens", "file:@lengths-zeros@"},
        std::vector<std::string>{"run", "--seqlens", "ragged"},
        std::vector<std::string>{"run", "--seqlens", "uniform:1-9", "--padding", "random"},
        std::vector<std::string>{"run", "--seqlens", "uniform:1-9", "--seqlen-k", "64"},
        std::vector<std::string>{"run", "--seqlens", "uniform:1-9", "--varlen-as", "sideways"},
        std::vector<std::string>{"run", "--varlen-as", "padded"},
        std::vector<std::string>{"run", "--resume", "/nonexistent/run.json"},
        std::vector<std::string>{"run", "--resume", "@not-json@"},
        std::vector<std::string>{"run", "--resume", "@unknown-key@"},  // JSON, not a result file
        std::vector<std::string>{"merge", "/nonexistent/shard0.json"},
        std::vector<std::string>{"merge", "@not-json@"}));

// Cases whose subcommand has no --out: the same one line and exit 2.
TEST(Cli, BadInputWithoutAnOutputOption) {
  for (std::vector<std::string> args : {std::vector<std::string>{"presets", "--show", "table99"},
                                        std::vector<std::string>{"merge", "-o", ::testing::TempDir() + "m.json"},
                                        std::vector<std::string>{"run", "--out", ::testing::TempDir()}}) {
    std::string err;
    EXPECT_EQ(run_cli(args, &err), 2) << args[0];
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(err.rfind("flashio: error:", 0), 0u) << err;
  }
}

TEST(Cli, AnUnfinishedJournalIsNotOverwritten) {
  const std::string out = ::testing::TempDir() + "flashio_unfinished.json";
  std::ofstream(out + "l") << "{}\n";
  std::string err;
  EXPECT_EQ(run_cli({"run", "--seqlen", "128", "--out", out}, &err), 2);  // checked before any GPU work
  EXPECT_NE(err.find("--resume"), std::string::npos) << err;
  EXPECT_EQ(std::ifstream(out + "l").get(), '{') << "the journal was touched";
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Cli, PresetsListEveryPresetWithItsPointCount) {
  std::string out;
  ASSERT_EQ(run_cli({"presets"}, nullptr, &out), 0);
  for (const char* p : {"fa1-table14", "fa1-table25", "fa1-table26", "figure2-left", "figure2-middle", "figure2-right",
                        "fa2-figure4", "fa2-figure7"})
    EXPECT_NE(out.find(p), std::string::npos) << p;
  EXPECT_NE(out.find("figure2-middle       4  FlashAttention Figure 2 middle"), std::string::npos) << out;
  EXPECT_NE(out.find("figure2-right       44  FlashAttention Figure 2 right"), std::string::npos) << out;
}

TEST(Cli, PresetShowPrintsASweepFileThatRunsTheSamePoints) {
  std::string shown, direct, via_file;
  ASSERT_EQ(run_cli({"presets", "--show", "fa2-figure5"}, nullptr, &shown), 0);
  const std::string path = ::testing::TempDir() + "flashio_shown.json";
  std::ofstream(path) << shown;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--preset", "fa2-figure5"}, nullptr, &direct), 0);
  ASSERT_EQ(run_cli({"run", "--dry-run", "--sweep", path}, nullptr, &via_file), 0);
  EXPECT_EQ(direct, via_file);
  EXPECT_EQ(std::count(direct.begin(), direct.end(), '\n'), 72);
}

TEST(Cli, DryRunOfAPresetWithAnOverrideAndAnEstimate) {
  std::string out, err;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--preset", "fa1-table16", "--seqlen", "1024,2048"}, &err, &out), 0);
  EXPECT_EQ(out.rfind("standard/fwdbwd/b:16/h:8/n:1024/d:64/fp16/pad/drop:0.1  ~", 0), 0u) << out;
  EXPECT_NE(out.find("\nstandard_fused/fwdbwd/b:16/h:8/n:1024/d:64/fp16/pad/drop:0.1  ~"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 6);  // standard, standard_fused, flash1 × 2 N
  EXPECT_NE(err.find("6 points; estimated "), std::string::npos) << err;
}

TEST(Cli, DryRunOfAShard) {
  std::string all, s0, s1;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--preset", "fa1-table23"}, nullptr, &all), 0);
  ASSERT_EQ(run_cli({"run", "--dry-run", "--preset", "fa1-table23", "--shard", "0/2"}, nullptr, &s0), 0);
  ASSERT_EQ(run_cli({"run", "--dry-run", "--preset", "fa1-table23", "--shard", "1/2"}, nullptr, &s1), 0);
  EXPECT_EQ(std::count(s0.begin(), s0.end(), '\n') + std::count(s1.begin(), s1.end(), '\n'),
            std::count(all.begin(), all.end(), '\n'));
  EXPECT_EQ(s0.find(s1.substr(0, s1.find('\n'))), std::string::npos) << "a point in both shards";
}

// The first word of each line of the plain dry run: the point names.
static std::vector<std::string> dry_run_names(const std::string& out) {
  std::vector<std::string> names;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) names.push_back(line.substr(0, line.find("  ~")));
  return names;
}

TEST(Cli, DryRunJsonHasThePlainDryRunsPointsWithTheRecordsProblemsAndFlops) {
  const std::vector<std::vector<std::string>> sweeps = {
      {"--preset", "fa1-table16", "--seqlen", "1024,2048"},  // padding and dropout
      {"--method", "flash2,standard", "--pass", "fwd,bwd", "--seqlen", "17,1013", "--batch", "2", "--heads", "8",
       "--kv-heads", "8,2", "--causal", "false,true", "--deterministic", "false,true", "--dtype", "bf16"},
      {"--method", "blocksparse_flash", "--pattern", "random,local", "--density", "0.25", "--seqlen", "512",
       "--block-c", "64", "--mma", "mma.sync"},
      {"--method", "standard", "--seqlen", "100", "--seqlen-k", "300", "--padding", "none,random", "--tokens", "200"}};
  for (const auto& axes : sweeps) {
    std::vector<std::string> plain_args = {"run", "--dry-run"}, json_args = {"run", "--dry-run", "--json"};
    plain_args.insert(plain_args.end(), axes.begin(), axes.end());
    json_args.insert(json_args.end(), axes.begin(), axes.end());
    std::string plain, text, err;
    ASSERT_EQ(run_cli(plain_args, nullptr, &plain), 0) << axes[1];
    ASSERT_EQ(run_cli(json_args, &err, &text), 0) << axes[1];
    EXPECT_EQ(err, "") << "--json writes nothing but the document";
    const nlohmann::json doc = nlohmann::json::parse(text);  // throws (fails) unless the whole stdout is JSON
    EXPECT_EQ(doc.at("schema"), "flashio/points");
    const auto names = dry_run_names(plain);
    ASSERT_EQ(doc.at("points").size(), names.size()) << axes[1];
    EXPECT_EQ(doc.at("points_total").get<size_t>(), names.size());
    EXPECT_FALSE(doc.contains("shard"));
    for (size_t i = 0; i < names.size(); ++i) {
      const nlohmann::json& pt = doc["points"][i];
      EXPECT_EQ(pt.at("point_index").get<size_t>(), i);
      EXPECT_EQ(pt.at("name"), names[i]);
      Record r;  // the record of this point, from the listed problem
      r.method = pt.at("method").get<std::string>();
      r.pass = *parse_pass(pt.at("pass").get<std::string>());
      r.problem = problem_from_json(pt.at("problem"));
      const nlohmann::json rj = to_json(r);
      EXPECT_EQ(rj.at("name"), names[i]);
      EXPECT_EQ(rj.at("problem"), pt.at("problem")) << names[i];
      EXPECT_EQ(rj.at("flops").get<double>(), pt.at("flops").get<double>()) << names[i];
      EXPECT_GT(pt.at("flops").get<double>(), 0.0);
      EXPECT_GT(pt.at("estimate_s").get<double>(), 0.0);
    }
  }
}

// Block-sparse points: "block_masks" holds each sparse problem's mask, once, as make_block_mask()
// makes it for the listed problem (what blocksparse_flash runs); dense sweeps list none.
TEST(Cli, DryRunJsonListsTheBlockMaskOfEachSparseProblem) {
  std::string text;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--json", "--method", "blocksparse_flash,blocksparse_standard", "--pass",
                     "fwd,fwdbwd", "--seqlen", "512,1000", "--pattern", "random,butterfly,local", "--density",
                     "0.3", "--sparse-block", "128,256", "--batch", "1", "--heads", "2", "--head-dim", "64", "--seed", "77"},
                    nullptr, &text),
            0);
  const nlohmann::json doc = nlohmann::json::parse(text);
  ASSERT_TRUE(doc.contains("block_masks"));
  const nlohmann::json& masks = doc["block_masks"];
  std::set<std::string> problems;
  for (const auto& pt : doc.at("points")) {
    const Problem p = problem_from_json(pt.at("problem"));
    const std::string key = pt.at("name").get<std::string>().substr(
        pt.at("method").get<std::string>().size() + 1 + pt.at("pass").get<std::string>().size() + 1);
    EXPECT_EQ(key, p.name());
    problems.insert(key);
    ASSERT_TRUE(masks.contains(key)) << key;
    Problem made = p;  // the sweep's problem, not a record's: the mask is made, not read back
    made.from_record = false;
    const BlockMask m = make_block_mask(made);
    const auto& rows = masks[key];
    ASSERT_EQ(int64_t(rows.size()), m.rows) << key;
    for (int64_t r = 0; r < m.rows; ++r) {
      const std::string row = rows[size_t(r)].get<std::string>();
      ASSERT_EQ(int64_t(row.size()), m.cols) << key;
      for (int64_t c = 0; c < m.cols; ++c) EXPECT_EQ(row[size_t(c)] == '1', m.at(r, c)) << key << " " << r << "," << c;
    }
    EXPECT_EQ(pt.at("problem").at("sparse_blocks"), nlohmann::json::array({m.rows, m.cols})) << key;
  }
  EXPECT_EQ(masks.size(), problems.size()) << "one mask per sparse problem, none other";
  EXPECT_EQ(problems.size(), 2u * 3u * 2u);
  // a random mask of density 0.3 over 4 x 4 blocks (N 512, Bs 128): round(0.3 * 16) = 5 blocks
  const std::string random_key = "b:1/h:2/n:512/d:64/fp16/sparse:random/s:0.3/bs:128";
  ASSERT_TRUE(masks.contains(random_key)) << masks.dump();
  int ones = 0;
  for (const auto& row : masks[random_key]) {
    const std::string bits = row.get<std::string>();
    ones += int(std::count(bits.begin(), bits.end(), '1'));
  }
  EXPECT_EQ(ones, 5);

  std::string dense;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--json", "--seqlen", "512", "--pattern", "none"}, nullptr, &dense), 0);
  EXPECT_FALSE(nlohmann::json::parse(dense).contains("block_masks"));
}

TEST(Cli, DryRunJsonOfAShardSaysWhichSlice) {
  std::string all, s1;
  ASSERT_EQ(run_cli({"run", "--dry-run", "--json", "--preset", "fa1-table23"}, nullptr, &all), 0);
  ASSERT_EQ(run_cli({"run", "--dry-run", "--json", "--preset", "fa1-table23", "--shard", "1/2"}, nullptr, &s1), 0);
  const auto a = nlohmann::json::parse(all), b = nlohmann::json::parse(s1);
  EXPECT_EQ(b.at("shard"), "1/2");
  EXPECT_EQ(b.at("points_total"), a.at("points_total"));
  ASSERT_LT(b.at("points").size(), a.at("points").size());
  for (const auto& pt : b["points"]) {  // each as in the whole sweep, at its index there
    const auto& same = a["points"][pt.at("point_index").get<size_t>()];
    EXPECT_EQ(pt, same);
  }
}

TEST(Cli, JsonWithoutDryRunIsBadInput) {
  std::string err, out;
  EXPECT_EQ(run_cli({"run", "--json", "--seqlen", "128", "--out", ::testing::TempDir() + "j.json"}, &err, &out), 2);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(err.rfind("flashio: error: --json: only with --dry-run", 0), 0u) << err;
  EXPECT_EQ(out, "");
  EXPECT_FALSE(std::filesystem::exists(::testing::TempDir() + "j.json"));
}

TEST(Cli, UnwritableOutputIsBadInput) {
  std::string err;
  EXPECT_EQ(run_cli({"run", "--seqlen", "128", "--out", "/nonexistent-dir/x.json"}, &err), 2);
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
}
