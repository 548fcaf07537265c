// Results people can use (issue 18): `flashio export` (tidy CSV / JSON Lines / Google Benchmark
// JSON), typed --json of report, compare and predict, `compare --baseline` (A/B with bootstrap
// intervals and exit 3), `report` keeping every record, `predict --gpu-spec`. No GPU needed: the
// committed result files and small synthetic ones.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "analysis/ab_compare.h"
#include "analysis/export.h"
#include "analysis/gpus.h"
#include "bench/cli/commands.h"
#include "bench/cli/run_outputs.h"
#include "bench/core/record.h"
#include "bench/sweep/table.h"

using namespace flashio;
using namespace flashio::analysis;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSource = FLASHIO_SOURCE_DIR;

struct Captured {
  int rc;
  std::string out, err;
};

Captured cli(std::vector<std::string> args) {
  args.insert(args.begin(), "flashio");
  std::fflush(stdout);
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int rc = flashio_main(args);
  Captured c{rc, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
  return c;
}

std::vector<std::string> committed_files() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(kSource + "/results"))
    if (e.path().extension() == ".json" && e.path().filename() != "schema.json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  files.push_back(kSource + "/results/published/a100-flashattention-paper.json");
  return files;
}

json load(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// RFC 4180 fields of one line (quotes doubled inside quoted fields).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out{""};
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string temp(const std::string& name) { return (fs::temp_directory_path() / ("flashio-i18-" + name)).string(); }

// A small result file: one GPU, two points whose repetitions are `base` times the factors.
json synthetic(const std::string& revision, double scale_a, double scale_b, bool samples = true,
               const std::string& gpu = "NVIDIA H100 80GB HBM3") {
  json doc = {{"schema", "flashio/result"},
              {"schema_version", kSchemaVersion},
              {"run_id", "r-" + revision},
              {"created", "2026-11-25T00:00:00Z"},
              {"producer", "flashio"},
              {"command_line", "synthetic"},
              {"build", {{"git_revision", revision}, {"git_dirty", false}}},
              {"device", {{"name", gpu}}},
              {"records", json::array()}};
  // A fixed spread of ±2 % around the median, 20 repetitions.
  auto reps = [](double median) {
    std::vector<double> s;
    for (int i = 0; i < 20; ++i) s.push_back(median * (1.0 + 0.02 * (double((i * 7) % 20) / 19.0 * 2 - 1)));
    return s;
  };
  int k = 0;
  for (const auto& [name, scale] : std::vector<std::pair<std::string, double>>{
           {"flash2/fwd/b:1/h:16/n:4096/d:64/fp16", scale_a}, {"flash2/fwd/b:1/h:16/n:8192/d:64/fp16", scale_b}}) {
    const double median = 1e-3 * (k + 1) * scale;
    std::vector<double> s = reps(median);
    std::vector<double> sorted = s;
    std::sort(sorted.begin(), sorted.end());
    json t = {{"median_s", 0.5 * (sorted[9] + sorted[10])},
              {"min_s", sorted.front()},
              {"max_s", sorted.back()},
              {"mean_s", median},
              {"stddev_s", 0.01 * median},
              {"reps", 20},
              {"warmup", 2},
              {"l2_flushed", true},
              {"clock", "cuda_events"}};
    if (samples) t["samples_s"] = s;
    doc["records"].push_back(
        {{"name", name},
         {"method", "flash2"},
         {"pass", "fwd"},
         {"problem",
          {{"batch", 1},
           {"heads", 16},
           {"kv_heads", 16},
           {"seqlen_q", 4096 << k},
           {"seqlen_k", 4096 << k},
           {"head_dim", 64},
           {"dtype", "fp16"},
           {"causal", false},
           {"padding", "none"},
           {"dropout", 0.0},
           {"seed", 0},
           {"softmax_scale", 0.125}}},
         {"status", "ok"},
         {"device_index", 0},
         {"counters", {{"status", "not_collected"}}},
         {"flops", 1e9},
         {"time", t}});
    ++k;
  }
  return doc;
}

std::string write(const std::string& name, const json& doc) {
  const std::string p = temp(name);
  std::ofstream(p) << doc.dump();
  return p;
}

}  // namespace

// --- export --------------------------------------------------------------------------------------

TEST(Export, CsvHasOneRowPerRecordOfEveryCommittedFileWithNumbersInSiUnits) {
  const auto files = committed_files();
  size_t records = 0;
  for (const auto& f : files) records += load(f)["records"].size();
  std::vector<std::string> args{"export"};
  args.insert(args.end(), files.begin(), files.end());
  const Captured c = cli(args);
  ASSERT_EQ(c.rc, 0) << c.err;
  const auto lines = lines_of(c.out);
  ASSERT_EQ(lines.size(), records + 1);
  const auto header = csv_fields(lines[0]);
  EXPECT_EQ(header.size(), export_columns().size());
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"gpu",
                           "revision",
                           "run_id",
                           "method",
                           "kernel_path",
                           "pass",
                           "batch",
                           "heads",
                           "kv_heads",
                           "seqlen_q",
                           "seqlen_k",
                           "head_dim",
                           "dtype",
                           "causal",
                           "dropout",
                           "median_s",
                           "min_s",
                           "max_s",
                           "flop_per_s",
                           "percent_of_peak",
                           "dram_read_bytes",
                           "l2_read_bytes",
                           "memory_total_bytes",
                           "check_error_ratio",
                           "status",
                           "reason"})
    EXPECT_TRUE(col.count(need)) << need;
  for (size_t i = 1; i < lines.size(); ++i) ASSERT_EQ(csv_fields(lines[i]).size(), header.size()) << lines[i];

  // The first record of the H100 DRAM-level file, cell by cell against the file.
  const std::string file = kSource + "/results/nvidia-h100-dram-level.json";
  const json rec = load(file)["records"][0];
  const auto row = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
    const auto f = csv_fields(l);
    return f[col["file"]] == file && f[col["name"]] == rec["name"];
  });
  ASSERT_NE(row, lines.end());
  const auto f = csv_fields(*row);
  EXPECT_EQ(f[col["gpu"]], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(f[col["revision"]], load(file)["build"]["git_revision"].get<std::string>());
  EXPECT_EQ(f[col["kernel_path"]], "wgmma");
  EXPECT_EQ(std::stod(f[col["median_s"]]), rec["time"]["median_s"].get<double>());  // seconds, exactly
  const double tf = rec["flops"].get<double>() / rec["time"]["median_s"].get<double>();
  EXPECT_DOUBLE_EQ(std::stod(f[col["flop_per_s"]]), tf);
  EXPECT_DOUBLE_EQ(std::stod(f[col["percent_of_peak"]]), 100 * tf / 989e12);  // H100 SXM dense fp16
  EXPECT_EQ(std::stod(f[col["dram_read_bytes"]]), 817664);
  EXPECT_EQ(std::stod(f[col["memory_total_bytes"]]), 1052672);
  EXPECT_EQ(f[col["status"]], "ok");
  EXPECT_EQ(f[col["reason"]], "");
  // No cell carries a unit: every numeric column parses as a number or is empty.
  for (const char* numeric : {"median_s", "flop_per_s", "dram_read_bytes", "memory_total_bytes", "check_error_ratio"})
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::string cell = csv_fields(lines[i])[col[numeric]];
      if (cell.empty()) continue;
      size_t pos = 0;
      std::stod(cell, &pos);
      ASSERT_EQ(pos, cell.size()) << numeric << ": " << cell;
    }
}

TEST(Export, JsonLinesAreTypedAndSkippedRecordsKeepTheirReason) {
  const std::string file = kSource + "/results/nvidia-h100-memory.json";
  const Captured c = cli({"export", "--format", "jsonl", file});
  ASSERT_EQ(c.rc, 0) << c.err;
  const auto lines = lines_of(c.out);
  ASSERT_EQ(lines.size(), load(file)["records"].size());
  int skipped = 0;
  for (const auto& l : lines) {
    const json o = json::parse(l);
    ASSERT_EQ(o.size(), export_columns().size());
    EXPECT_TRUE(o["seqlen_q"].is_number_integer());
    EXPECT_TRUE(o["causal"].is_boolean());
    if (o["status"] == "skipped") {
      ++skipped;
      EXPECT_TRUE(o["median_s"].is_null());
      EXPECT_FALSE(o["reason"].get<std::string>().empty());
    } else {
      EXPECT_TRUE(o["median_s"].is_number());
    }
  }
  EXPECT_EQ(skipped, 3);  // standard from N 16384: its score buffers exceed the GPU
}

TEST(Export, GbenchHasGoogleBenchmarksShapeAndNamesOfFlashioGbench) {
  // A committed file as files before time.samples_s were written: one benchmark per ok record.
  json without_samples = load(kSource + "/results/nvidia-h100-memory.json");
  for (auto& r : without_samples["records"])
    if (r.contains("time")) r["time"].erase("samples_s");
  const std::string file = write("no-samples.json", without_samples);
  const Captured c = cli({"export", "--format", "gbench", file});
  ASSERT_EQ(c.rc, 0) << c.err;
  const json g = json::parse(c.out);
  ASSERT_TRUE(g.contains("context") && g["context"].is_object());
  EXPECT_EQ(g["context"]["json_schema_version"], 1);  // what tools/gbench/util.py checks
  ASSERT_TRUE(g.contains("benchmarks") && g["benchmarks"].is_array());
  EXPECT_EQ(g["benchmarks"].size(), 27u);  // the ok records; the 3 skipped are left out
  EXPECT_NE(c.err.find("3 records without a time"), std::string::npos) << c.err;
  std::map<std::string, double> by_name;
  const json doc = load(file);
  for (const auto& r : doc["records"])
    if (r["status"] == "ok") by_name[r["name"].get<std::string>() + "/manual_time"] = r["time"]["median_s"];
  for (const auto& b : g["benchmarks"]) {
    for (const char* key : {"name", "run_name", "run_type", "iterations", "real_time", "cpu_time", "time_unit"})
      EXPECT_TRUE(b.contains(key)) << key;
    EXPECT_EQ(b["time_unit"], "ms");
    EXPECT_EQ(b["run_type"], "iteration");
    ASSERT_TRUE(by_name.count(b["name"])) << b["name"];
    EXPECT_DOUBLE_EQ(b["real_time"].get<double>(), by_name[b["name"]] * 1e3);  // no samples: the median
  }
}

TEST(Export, GbenchGivesEachRepetitionAndTheAggregatesWhenSamplesArePresent) {
  const json doc = synthetic("aaaaaaa", 1.0, 1.0);
  const std::string p = write("samples.json", doc);
  const Captured c = cli({"export", "--format", "gbench", p});
  ASSERT_EQ(c.rc, 0) << c.err;
  const json g = json::parse(c.out);
  ASSERT_EQ(g["benchmarks"].size(), 2u * (20 + 3));
  std::map<std::string, int> iterations;
  std::set<std::string> aggregates;
  for (const auto& b : g["benchmarks"]) {
    if (b["run_type"] == "iteration") {
      EXPECT_EQ(b["repetitions"], 20);
      EXPECT_EQ(b["repetition_index"], iterations[b["name"]]);
      ++iterations[b["name"]];
    } else {
      EXPECT_EQ(b["run_type"], "aggregate");
      aggregates.insert(b["name"].get<std::string>());
    }
  }
  EXPECT_EQ(iterations["flash2/fwd/b:1/h:16/n:4096/d:64/fp16/manual_time"], 20);
  EXPECT_TRUE(aggregates.count("flash2/fwd/b:1/h:16/n:4096/d:64/fp16/manual_time_median"));
  // The first repetition in ms, as run.
  EXPECT_DOUBLE_EQ(g["benchmarks"][0]["real_time"].get<double>(),
                   doc["records"][0]["time"]["samples_s"][0].get<double>() * 1e3);
  fs::remove(p);
}

TEST(Export, WritesTheOutputFileWholeOrNotAtAll) {
  const std::string out = temp("export.csv");
  fs::remove(out);
  const Captured ok = cli({"export", kSource + "/results/nvidia-h100-dsweep.json", "-o", out});
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_TRUE(ok.out.empty());
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(lines_of(text).size(), 1 + load(kSource + "/results/nvidia-h100-dsweep.json")["records"].size());
  EXPECT_FALSE(fs::exists(out + ".tmp"));
  fs::remove(out);
}

// Bad input for export and compare --baseline: one line on stderr, exit 2, no output file.
TEST(Export, BadInputIsOneLineExitTwoAndNoFile) {
  const std::string good = kSource + "/results/nvidia-h100-dsweep.json";
  const std::string truncated = temp("truncated.json");
  {
    std::ifstream in(good);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(truncated) << text.substr(0, text.size() / 2);
  }
  const std::string foreign = write("foreign.json", json{{"benchmarks", json::array()}});
  json v0 = load(good);
  v0["schema_version"] = 0;
  const std::string old_version = write("v0.json", v0);
  json v9 = load(good);
  v9["schema_version"] = kSchemaVersion + 1;
  const std::string newer = write("v9.json", v9);
  const std::string out = temp("bad-out.csv");
  fs::remove(out);
  const std::vector<std::vector<std::string>> cases = {
      {"export", temp("does-not-exist.json"), "-o", out},
      {"export", truncated, "-o", out},
      {"export", foreign, "-o", out},
      {"export", good, old_version, "-o", out},  // mixed schema versions
      {"export", newer, "-o", out},
      {"export", good, "--format", "xml", "-o", out},
      {"export", good, "-o", "/nonexistent-dir/x.csv"},
      {"compare", "--baseline", good, truncated},
      {"compare", "--baseline", good, foreign},
      {"compare", "--baseline", good, good, "--threshold", "five"},
      {"compare", good, good, "--threshold", "5%"},  // a threshold needs a baseline
  };
  for (const auto& args : cases) {
    const Captured c = cli(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(c.rc, 2) << joined << c.err;
    EXPECT_EQ(std::count(c.err.begin(), c.err.end(), '\n'), 1) << joined << c.err;
    EXPECT_TRUE(c.out.empty()) << joined;
    EXPECT_FALSE(fs::exists(out)) << joined;
    EXPECT_FALSE(fs::exists(out + ".tmp")) << joined;
  }
  for (const auto& p : {truncated, foreign, old_version, newer}) fs::remove(p);
}

// --- typed --json ---------------------------------------------------------------------------------

TEST(TypedJson, ReportCompareAndPredictGiveNumbersInSiUnitsNotStringsWithUnits) {
  const std::string h100 = kSource + "/results/nvidia-h100-fa2.json";
  const std::string h200 = kSource + "/results/nvidia-h200-fa2.json";
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"report", "--json", h100},
                                             {"compare", "--json", h100, h200},
                                             {"predict", "--json", "--gpu", "h100-sxm", "-n", "4096"}}) {
    const Captured c = cli(args);
    ASSERT_EQ(c.rc, 0) << args[0] << c.err;
    const json tables = json::parse(c.out);
    ASSERT_TRUE(tables.is_array());
    int numbers = 0;
    const std::regex number_with_unit("[0-9.]+ ?(×|%|[kMGT]?i?B|ms|us|s)");
    for (const auto& t : tables) {
      ASSERT_EQ(t["columns"].size(), t["rows"][0].size()) << t["title"];
      for (size_t i = 0; i < t["columns"].size(); ++i) {
        const std::string unit = t["columns"][i]["unit"];
        for (const auto& row : t["rows"]) {
          const json& v = row[i];
          if (!unit.empty() && unit != "ratio") {
            EXPECT_TRUE(v.is_number() || v.is_null()) << t["title"] << " " << t["columns"][i]["name"] << ": " << v;
          }
          if (v.is_number()) ++numbers;
          if (v.is_string())  // no number with a unit inside a string ("3.20×", "275.74 MB", "1.5 ms")
            EXPECT_FALSE(std::regex_match(v.get<std::string>(), number_with_unit)) << v;
        }
      }
    }
    EXPECT_GT(numbers, 0) << args[0];
  }
  // The runtime of one point, in seconds as in the file.
  const json rep = json::parse(cli({"report", "--json", kSource + "/results/nvidia-h100-dsweep.json"}).out);
  const json rec = load(kSource + "/results/nvidia-h100-dsweep.json")["records"][0];
  bool found = false;
  for (const auto& t : rep)
    if (t["title"].get<std::string>().rfind("Runtime", 0) == 0) {
      EXPECT_EQ(t["columns"][1]["unit"], "s");
      for (const auto& row : t["rows"])
        for (size_t i = 1; i < row.size(); ++i) found = found || row[i] == rec["time"]["median_s"];
    }
  EXPECT_TRUE(found);
}

// --- report keeps every record ----------------------------------------------------------------------

TEST(ReportKeepsEveryRecord, EachTimedRecordHasARuntimeCellAndTheOthersAreListed) {
  for (const auto& file : committed_files()) {
    const json doc = load(file);
    size_t timed = 0, untimed = 0;
    for (const auto& r : doc["records"])
      (r["status"] == "ok" && r.contains("time") && r["time"]["median_s"].get<double>() > 0 ? timed : untimed)++;
    const Captured c = cli({"report", "--json", file});
    ASSERT_EQ(c.rc, 0) << file;
    size_t cells = 0, listed = 0;
    for (const auto& t : json::parse(c.out)) {
      const std::string title = t["title"];
      if (title.rfind("Runtime (ms)", 0) == 0)
        for (const auto& row : t["rows"])
          for (size_t i = 1; i < row.size(); ++i) cells += row[i].is_number();
      if (title.rfind("Points without a time", 0) == 0) listed += t["rows"].size();
    }
    EXPECT_EQ(cells, timed) << file;
    EXPECT_EQ(listed, untimed) << file;
  }
}

TEST(ReportKeepsEveryRecord, AForcedMmaPathGetsItsOwnRow) {
  const Captured c = cli({"report", kSource + "/results/nvidia-h100-fa2.json"});
  ASSERT_EQ(c.rc, 0);
  EXPECT_NE(c.out.find("| flash2 [mma:mma.sync] |"), std::string::npos) << c.out.substr(0, 3000);
  EXPECT_NE(c.out.find("| flash2 |"), std::string::npos);
}

// --- compare: labels and unmatched points -----------------------------------------------------------

TEST(Compare, ColumnsAreLabelledByFileAndUnmatchedPointsAreListed) {
  json a = synthetic("1111111aaaa", 1.0, 1.0);
  json b = synthetic("1111111aaaa", 1.0, 1.0);
  b["records"].erase(1);  // b lacks the n:8192 point
  const std::string pa = write("label-a.json", a), pb = write("label-b.json", b);
  const Captured c = cli({"compare", pa, pb});
  ASSERT_EQ(c.rc, 0) << c.err;
  // Same GPU, same revision: the file names tell the columns apart.
  EXPECT_NE(c.out.find("NVIDIA H100 80GB HBM3 @1111111 (flashio-i18-label-a.json) ms"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("NVIDIA H100 80GB HBM3 @1111111 (flashio-i18-label-b.json) ms"), std::string::npos);
  EXPECT_NE(c.out.find("Points in one file only"), std::string::npos);
  EXPECT_NE(c.out.find(
                "| flash2/fwd/b:1/h:16/n:8192/d:64/fp16 | NVIDIA H100 80GB HBM3 @1111111 (flashio-i18-label-a.json) |"),
            std::string::npos)
      << c.out;
  fs::remove(pa);
  fs::remove(pb);
}

// --- compare --baseline ------------------------------------------------------------------------------

TEST(AbCompare, BootstrapIntervalHoldsTheTrueRatioAndIsReproducible) {
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) {
    const double noise = 1.0 + 0.01 * std::sin(1.7 * i);  // ±1 %
    a.push_back(1e-3 * noise);
    b.push_back(1.10e-3 * (1.0 + 0.01 * std::cos(2.3 * i)));
  }
  const AbOptions opt;
  const RatioInterval r = bootstrap_median_ratio(a, b, opt);
  EXPECT_NEAR(r.ratio, 1.10, 0.02);
  EXPECT_LT(r.lo, r.ratio);
  EXPECT_GT(r.hi, r.ratio);
  EXPECT_GT(r.lo, 1.05);  // 10 % slower with 1 % noise: far from 1
  EXPECT_LT(r.hi - r.lo, 0.05);
  const RatioInterval again = bootstrap_median_ratio(a, b, opt);
  EXPECT_EQ(again.lo, r.lo);
  EXPECT_EQ(again.hi, r.hi);
  const RatioInterval same = bootstrap_median_ratio(a, a, opt);
  EXPECT_LE(same.lo, 1.0);
  EXPECT_GE(same.hi, 1.0);
}

TEST(AbCompare, ExitsThreeOnlyWhenAPointIsSignificantlySlowerThanTheThreshold) {
  const std::string base = write("ab-base.json", synthetic("aaaaaaa", 1.0, 1.0));
  const std::string same = write("ab-same.json", synthetic("bbbbbbb", 1.0, 1.0));
  const std::string slower = write("ab-slower.json", synthetic("ccccccc", 1.0, 1.10));  // one point 10 % slower
  const std::string faster = write("ab-faster.json", synthetic("ddddddd", 0.80, 1.0));  // one point 20 % faster
  const std::string nosamples = write("ab-nosamples.json", synthetic("eeeeeee", 1.0, 1.30, false));

  Captured c = cli({"compare", "--baseline", base, same});
  EXPECT_EQ(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("no significant change"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("NVIDIA H100 80GB HBM3 @bbbbbbb against the baseline NVIDIA H100 80GB HBM3 @aaaaaaa"),
            std::string::npos);

  c = cli({"compare", "--baseline", base, slower});
  EXPECT_EQ(c.rc, 3) << c.out;
  EXPECT_NE(c.out.find("| 1.100 |"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("SLOWER"), std::string::npos);
  EXPECT_NE(c.err.find("1 matched points are slower"), std::string::npos) << c.err;
  EXPECT_EQ(cli({"compare", "--baseline", base, slower, "--threshold", "15%"}).rc, 0);  // 10 % is within 15 %
  EXPECT_EQ(cli({"compare", "--baseline", base, slower, "--threshold", "0.05"}).rc, 3);

  c = cli({"compare", "--baseline", base, faster});
  EXPECT_EQ(c.rc, 0);
  EXPECT_NE(c.out.find("faster"), std::string::npos);

  // 30 % slower without samples: the ratio, no interval, not judged, and said so.
  c = cli({"compare", "--baseline", base, nosamples});
  EXPECT_EQ(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("| 1.300 |"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("no samples: not judged"), std::string::npos);
  EXPECT_NE(c.err.find("have no time samples"), std::string::npos) << c.err;

  // Typed: ratio a number, the interval a pair.
  c = cli({"compare", "--json", "--baseline", base, slower});
  EXPECT_EQ(c.rc, 3);
  const json t = json::parse(c.out)[0];
  EXPECT_TRUE(t["rows"][1][3].is_number());
  EXPECT_TRUE(t["rows"][1][4].is_array());
  EXPECT_GT(t["rows"][1][4][0].get<double>(), 1.0);

  // Several files against one baseline: any regression fails the gate.
  EXPECT_EQ(cli({"compare", "--baseline", base, same, slower}).rc, 3);
  for (const auto& p : {base, same, slower, faster, nosamples}) fs::remove(p);
}

TEST(AbCompare, UnmatchedAndFailedPointsAreListedNotDropped) {
  json a = synthetic("aaaaaaa", 1.0, 1.0);
  json b = synthetic("bbbbbbb", 1.0, 1.0);
  b["records"][1]["status"] = "error";
  b["records"][1]["reason"] = "correctness check failed";
  b["records"][1].erase("time");
  json extra = b["records"][0];
  extra["name"] = "flash2/fwd/b:1/h:16/n:16384/d:64/fp16";
  b["records"].push_back(extra);
  a["records"].push_back(a["records"][0]);
  a["records"][2]["name"] = "flash2/fwd/b:1/h:16/n:2048/d:64/fp16";
  const std::string pa = write("un-a.json", a), pb = write("un-b.json", b);
  const Captured c = cli({"compare", "--baseline", pa, pb});
  EXPECT_EQ(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("n:2048/d:64/fp16 | NVIDIA H100 80GB HBM3 @aaaaaaa | NVIDIA H100 80GB HBM3 @bbbbbbb | only in "
                       "the baseline"),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("n:16384/d:64/fp16 | NVIDIA H100 80GB HBM3 @aaaaaaa | NVIDIA H100 80GB HBM3 @bbbbbbb | not in "
                       "the baseline"),
            std::string::npos);
  EXPECT_NE(c.out.find("this file error: correctness check failed"), std::string::npos);
  fs::remove(pa);
  fs::remove(pb);
}

// --- predict --gpu-spec and the new GPUs --------------------------------------------------------------

TEST(Predict, AGpuDescribedByDeviceJsonPlusPeakFlopsIsModelled) {
  // `flashio device --json` of the H100 in results/, with the datasheet's peak added.
  json spec = load(kSource + "/results/nvidia-h100-dram-level.json")["device"];
  spec["peak_fp16_tensor_flops"] = 989e12;
  const std::string p = write("spec.json", spec);
  const Captured c = cli({"predict", "--json", "--gpu-spec", p, "--gpu", "h100-sxm", "-n", "4096,16384"});
  ASSERT_EQ(c.rc, 0) << c.err;
  const json t = json::parse(c.out);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_NE(t[0]["title"].get<std::string>().find("NVIDIA H100 80GB HBM3: 132 SMs"), std::string::npos);
  // The device's own figures (132 SMs, 228 KiB, L2 50 MiB) are the built-in H100 SXM's: the same
  // tiles and bytes (the roofline differs by the bandwidth's last digits: 3.352 vs 3.35 TB/s).
  ASSERT_EQ(t[0]["rows"].size(), t[1]["rows"].size());
  for (size_t r = 0; r < t[0]["rows"].size(); ++r)
    for (size_t i = 0; i < 7; ++i) EXPECT_EQ(t[0]["rows"][r][i], t[1]["rows"][r][i]) << r << " " << i;

  spec.erase("peak_fp16_tensor_flops");
  const std::string no_peak = write("spec-no-peak.json", spec);
  const Captured bad = cli({"predict", "--gpu-spec", no_peak});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("peak_fp16_tensor_flops"), std::string::npos) << bad.err;
  EXPECT_EQ(cli({"predict", "-n", "1024"}).rc, 2);  // neither --gpu nor --gpu-spec
  fs::remove(p);
  fs::remove(no_peak);
}

TEST(Predict, H100PcieL40sAndRtx4090AreBuiltInAndFoundByTheirDeviceNames) {
  EXPECT_EQ(find_gpu("NVIDIA H100 PCIe")->key, "h100-pcie");
  EXPECT_EQ(find_gpu("NVIDIA H100 80GB HBM3")->key, "h100-sxm");  // the PCIe alias does not catch the SXM
  EXPECT_EQ(find_gpu("NVIDIA L40S")->key, "l40s");
  EXPECT_EQ(find_gpu("NVIDIA GeForce RTX 4090")->key, "rtx4090");
  EXPECT_EQ(find_gpu("NVIDIA L4")->key, "l4");
  const Captured c = cli({"predict", "--gpu", "h100-pcie,l40s,rtx4090", "-n", "4096", "--pass", "fwd,fwdbwd"});
  ASSERT_EQ(c.rc, 0) << c.err;
  for (const char* name : {"NVIDIA H100 PCIe: 114 SMs", "NVIDIA L40S: 142 SMs", "NVIDIA GeForce RTX 4090: 128 SMs"})
    EXPECT_NE(c.out.find(name), std::string::npos) << name;
}

// --- run's summary line ---------------------------------------------------------------------------

TEST(RunSummary, CountsEveryStatusZerosIncluded) {
  std::vector<Record> records(4);
  records[1].status = Status::Skipped;
  records[2].status = Status::Error;
  records[3].status = Status::Error;
  EXPECT_EQ(format_status_counts(records), "ok 1 · skipped 1 · oom 0 · error 2");
  EXPECT_EQ(format_status_counts({}), "ok 0 · skipped 0 · oom 0 · error 0");
}

// --- run --csv, --md ------------------------------------------------------------------------------

TEST(RunOutputs, CsvAndMarkdownBesideTheJsonHoldEveryRecord) {
  const std::string src = kSource + "/results/nvidia-h100-memory.json";
  const ResultFile file = read_result_file(src);
  const std::string csv = temp("run.csv"), md = temp("run.md");
  write_run_outputs(file, "run.json", csv, md);
  std::ifstream c(csv), m(md);
  const std::string ctext((std::istreambuf_iterator<char>(c)), {}), mtext((std::istreambuf_iterator<char>(m)), {});
  EXPECT_EQ(lines_of(ctext).size(), file.records.size() + 1);
  EXPECT_EQ(csv_fields(lines_of(ctext)[1])[0], "run.json");
  EXPECT_NE(mtext.find("### Runtime (ms)"), std::string::npos);
  EXPECT_NE(mtext.find("### Points without a time"), std::string::npos);  // its 3 skipped records
  fs::remove(csv);
  fs::remove(md);
  // A folder that vanished after the up-front check: a runtime failure (exit 1), nothing left behind.
  EXPECT_THROW(write_run_outputs(file, "run.json", "/nonexistent-dir/x.csv", ""), std::runtime_error);
}

TEST(RunOutputs, AnUnwritableCsvOrMdIsBadInputBeforeAnyGpuWork) {
  for (const char* opt : {"--csv", "--md"}) {
    const Captured c = cli({"run", "--seqlen", "128", "--out", temp("r.json"), opt, "/nonexistent-dir/x"});
    EXPECT_EQ(c.rc, 2) << opt << c.err;
    EXPECT_NE(c.err.find(opt), std::string::npos) << c.err;
  }
}
