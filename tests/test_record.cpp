// Records and result files: JSON round trip, atomic write, and validation against
// results/schema.json (the documented schema).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "bench/core/json_input.h"
#include "bench/core/record.h"
#include "bench/core/schema.h"

using namespace flashio;
using nlohmann::json;

namespace {

json load_schema() {
  std::ifstream in(std::string(FLASHIO_SOURCE_DIR) + "/results/schema.json");
  EXPECT_TRUE(in.good());
  return json::parse(in);
}

Record ok_record() {
  Record r;
  r.method = "flash2";
  r.problem.batch = 4;
  r.problem.heads = 16;
  r.problem.seqlen_q = 4096;
  r.problem.head_dim = 128;
  r.problem.causal = true;
  r.status = Status::Ok;
  r.tiles = Tiles{128, 64, 4, 2, 104448};
  r.check = CheckResult{true, 1e-3, 2e-3, 0.25, 1e-4, 1e-2, 1000, 262144, true, "sampled rows"};
  r.time = TimeStats{1e-3, 0.9e-3, 1.2e-3, 1.01e-3, 5e-5, 30, 5, true, "cuda_events"};
  r.memory = MemoryStats{100, 200, 0};
  r.phases = PhaseTimes{0.25, 1.5, 0.01, 0.05, 0.4, 0.2, 2.5};
  r.phases->started_s = 7.25;
  return r;
}

ResultFile sample_file() {
  ResultFile f;
  f.run_id = "0123456789abcdef";
  f.created = "2026-11-22T01:00:00Z";
  f.command_line = "flashio run";
  f.build = {{"git_revision", "abc"}, {"git_dirty", false}};
  DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.sm_count = 132;
  f.device = to_json(d);
  f.wall_s = 12.5;
  f.merged_from = json::array({{{"file", "a.json"}, {"run_id", "1"}, {"wall_s", 7.5}},
                               {{"file", "b.json"}, {"run_id", "2"}, {"wall_s", nullptr}}});
  f.records.push_back(ok_record());
  Record skipped;
  skipped.method = "standard";
  skipped.status = Status::Skipped;
  skipped.reason = "too large";
  f.records.push_back(skipped);
  Record failed = ok_record();
  failed.status = Status::Error;
  failed.reason = "correctness check failed";
  failed.time.reset();
  failed.check->passed = false;
  failed.check->worst_ratio = std::nan("");
  f.records.push_back(failed);
  return f;
}

}  // namespace

TEST(Record, NameIsGoogleBenchmarkStyle) {
  EXPECT_EQ(ok_record().name(), "flash2/fwd/b:4/h:16/n:4096/d:128/fp16/causal");
}

TEST(Record, TflopsFromMedian) {
  const Record r = ok_record();
  // 4·B·H·N²·d / 2 (causal) / 1 ms
  const double expected = 4.0 * 4 * 16 * 4096.0 * 4096.0 * 128 / 2 / 1e-3 / 1e12;
  ASSERT_TRUE(r.tflops().has_value());
  EXPECT_NEAR(*r.tflops(), expected, 1e-9 * expected);
}

TEST(Record, JsonRoundTripKeepsEveryField) {
  const ResultFile f = sample_file();
  const json j = to_json(f);
  const ResultFile back = result_file_from_json(json::parse(j.dump()));
  EXPECT_EQ(to_json(back).dump(), j.dump());
  EXPECT_TRUE(std::isnan(back.records[2].check->worst_ratio));  // NaN survives as null
  EXPECT_EQ(back.records[1].reason, "too large");
  ASSERT_TRUE(back.wall_s.has_value());
  EXPECT_EQ(*back.wall_s, 12.5);
  ASSERT_TRUE(back.records[0].phases.has_value());
  EXPECT_EQ(back.records[0].phases->reference_s, 1.5);
  EXPECT_EQ(back.records[0].phases->total_s, 2.5);
  EXPECT_EQ(back.records[0].phases->started_s, 7.25);
  EXPECT_FALSE(back.records[1].phases.has_value());  // a skipped point has none
}

TEST(Record, WrittenFileConformsToSchema) {
  const std::string path = ::testing::TempDir() + "flashio_record_test.json";
  write_result_file(sample_file(), path);
  std::ifstream in(path);
  const json doc = json::parse(in);
  const auto errors = validate_schema(load_schema(), doc);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::remove(path.c_str());
}

TEST(Record, SchemaRejectsBrokenRecords) {
  const json schema = load_schema();
  json doc = to_json(sample_file());
  doc["records"][0]["status"] = "fine";
  doc["records"][1]["problem"].erase("head_dim");
  doc["records"][0]["time"]["median_s"] = 0.0;  // no zeros as data
  doc["records"][2]["surprise"] = 1;
  doc["records"][0]["phases_s"]["timed"] = -1.0;  // a negative time
  const auto errors = validate_schema(schema, doc);
  ASSERT_EQ(errors.size(), 5u);
  auto named = [&](const char* what) {
    return std::any_of(errors.begin(), errors.end(), [&](const std::string& e) { return e.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(named("status"));
  EXPECT_TRUE(named("phases_s"));
}

TEST(Record, RepetitionSamplesKeepTheirOrderRoundTripAndConformToTheSchema) {
  ResultFile f = sample_file();
  f.records[0].time->samples_s = {1.2e-3, 0.9e-3, 1.0e-3};  // as run: not sorted
  f.records[0].time->reps = 3;
  const json j = to_json(f);
  EXPECT_EQ(j["records"][0]["time"]["samples_s"], json::array({1.2e-3, 0.9e-3, 1.0e-3}));
  EXPECT_FALSE(j["records"][2].contains("time"));
  const ResultFile back = result_file_from_json(json::parse(j.dump()));
  EXPECT_EQ(back.records[0].time->samples_s, (std::vector<double>{1.2e-3, 0.9e-3, 1.0e-3}));
  EXPECT_TRUE(validate_schema(load_schema(), j).empty());
  json bad = j;
  bad["records"][0]["time"]["samples_s"][1] = -1e-3;
  const auto errors = validate_schema(load_schema(), bad);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("samples_s/1"), std::string::npos) << errors[0];
}

TEST(Record, ReadingRejectsForeignFiles) {
  EXPECT_THROW(result_file_from_json(json{{"hello", 1}}), std::runtime_error);
  json newer = to_json(sample_file());
  newer["schema_version"] = kSchemaVersion + 1;
  EXPECT_THROW(result_file_from_json(newer), std::runtime_error);
  EXPECT_THROW(read_result_file("/nonexistent/flashio.json"), InputError);  // one line, exit 2
}

TEST(Record, CommittedResultFilesConformToSchemaAndRead) {
  const json schema = load_schema();
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(FLASHIO_SOURCE_DIR) + "/results")) {
    if (entry.path().extension() != ".json" || entry.path().filename() == "schema.json") continue;
    ++files;
    std::ifstream in(entry.path());
    const json doc = json::parse(in);
    const auto errors = validate_schema(schema, doc);
    EXPECT_TRUE(errors.empty()) << entry.path() << ": " << errors.front();
    const ResultFile f = read_result_file(entry.path().string());
    // A `flashio profile` file keeps its records in profile.records (records: []).
    const bool profile = doc.contains("profile");
    EXPECT_TRUE(profile ? !doc["profile"]["records"].empty() : !f.records.empty()) << entry.path();
    for (const auto& r : f.records) {
      if (r.status != Status::Ok || f.producer == "published") continue;  // published: a paper's figure, no check
      // An ok record was checked and passed before it was timed, and its time is real.
      ASSERT_TRUE(r.check.has_value()) << r.name();
      EXPECT_TRUE(r.check->passed) << r.name();
      ASSERT_TRUE(r.time.has_value()) << r.name();
      EXPECT_GT(r.time->median_s, 0.0) << r.name();
    }
  }
  EXPECT_GT(files, 0);
}
