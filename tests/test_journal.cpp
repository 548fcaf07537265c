// Nothing lost: the journal keeps every complete record through a kill (SIGKILL included),
// resume skips what it holds, merge joins shard files. No GPU needed: records are made here.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "bench/cli/commands.h"
#include "bench/core/json_input.h"
#include "bench/sweep/journal.h"
#include "bench/sweep/shard.h"
#include "bench/sweep/sweep_file.h"

using namespace flashio;
namespace fs = std::filesystem;

namespace {

// A path of this test's own: ctest runs the tests of one binary as parallel processes, and two
// fixtures writing the same file name would race.
std::string temp(const std::string& name) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string p = ::testing::TempDir() + "flashio_journal_" + test->test_suite_name() + "_" + test->name() + "_" + name;
  fs::remove(p);
  return p;
}

int run_cli(std::vector<std::string> args, std::string* err = nullptr, std::string* out = nullptr) {
  args.insert(args.begin(), "flashio");
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int rc = flashio_main(args);
  const std::string e = testing::internal::GetCapturedStderr(), o = testing::internal::GetCapturedStdout();
  if (err) *err = e;
  if (out) *out = o;
  return rc;
}

// The sweep the CLI tests below run: 2 methods × 4 sequence lengths.
const std::vector<std::string> kAxes = {"--method", "standard,flash2", "--seqlen", "128,256,512,1024", "--batch",
                                        "1",        "--heads",         "16",       "--head-dim",       "64"};

std::vector<Point> sweep_points() {
  SweepSpec s;
  s.methods = {"standard", "flash2"};
  s.seqlen = {128, 256, 512, 1024};
  return expand(s);
}

Record record_of(const Point& p, size_t index, Status status = Status::Ok) {
  Record r;
  r.method = p.method;
  r.pass = p.pass;
  r.problem = p.problem;
  r.status = status;
  r.point_index = int64_t(index);
  if (status == Status::Ok) r.time = TimeStats{1e-3, 1e-3, 1e-3, 1e-3, 0, 10, 2};
  if (status == Status::Error) r.reason = "an illegal memory access was encountered";
  return r;
}

ResultFile header(const std::string& gpu) {
  ResultFile f;
  f.run_id = "0123456789abcdef";
  f.created = "2026-11-22T00:00:00Z";
  f.command_line = "flashio run";
  f.device = {{"name", gpu}, {"index", 0}};
  return f;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  for (char c : text)
    if (c == '\n')
      out.push_back(line), line.clear();
    else
      line += c;
  return out;
}

}  // namespace

TEST(Journal, PathBesideTheResultFile) {
  EXPECT_EQ(journal_path("results/x.json"), "results/x.jsonl");
  EXPECT_EQ(journal_path("out"), "out.jsonl");
}

TEST(Journal, RoundTripsHeaderAndRecords) {
  const std::string path = temp("roundtrip.jsonl");
  const auto points = sweep_points();
  {
    JournalWriter w(path, header("GPU A"));
    for (size_t i = 0; i < 3; ++i) w.append(record_of(points[i], i));
  }
  const LoadedResults r = read_results_any(path);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.file.run_id, "0123456789abcdef");
  EXPECT_EQ(r.file.device["name"], "GPU A");
  ASSERT_EQ(r.file.records.size(), 3u);
  EXPECT_EQ(r.file.records[2].name(), points[2].name());
  EXPECT_EQ(r.file.records[2].point_index, 2);
}

TEST(Journal, AResumedRunRewritesItsJournalWithTheKeptRecordsFirst) {
  // Resuming from the journal itself: it is replaced (temporary file + rename) by the header
  // and the kept records, and new records are appended after them.
  const std::string path = temp("rewrite.jsonl");
  const auto points = sweep_points();
  {
    JournalWriter w(path, header("GPU A"));
    for (size_t i = 0; i < 3; ++i) w.append(record_of(points[i], i));
  }
  ResultFile kept = read_results_any(path).file;
  kept.records.erase(kept.records.begin() + 1);  // say point 1 was an error, to run again
  {
    JournalWriter w(path, kept);
    w.append(record_of(points[1], 1));
  }
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  const auto r = read_results_any(path).file;
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0].point_index, 0);
  EXPECT_EQ(r.records[1].point_index, 2);
  EXPECT_EQ(r.records[2].point_index, 1);
}

TEST(Journal, ACutShortLastLineIsSkippedAndTheRestKept) {
  const std::string path = temp("killed.jsonl");
  const auto points = sweep_points();
  {
    JournalWriter w(path, header("GPU A"));
    for (size_t i = 0; i < 3; ++i) w.append(record_of(points[i], i));
  }
  const std::string full = to_json(record_of(points[3], 3)).dump();
  for (size_t cut : {size_t(1), full.size() / 2, full.size() - 1}) {  // killed mid-write
    const std::string copy = temp("killed_copy.jsonl");
    fs::copy_file(path, copy);
    std::ofstream(copy, std::ios::app) << full.substr(0, cut);
    const LoadedResults r = read_results_any(copy);
    EXPECT_TRUE(r.truncated) << cut;
    EXPECT_EQ(r.file.records.size(), 3u) << cut;
  }
}

TEST(Journal, ABadLineInTheMiddleIsRefused) {
  const std::string path = temp("corrupt.jsonl");
  const auto points = sweep_points();
  {
    JournalWriter w(path, header("GPU A"));
    w.append(record_of(points[0], 0));
  }
  std::ofstream(path, std::ios::app) << "{\"garbage\n" << to_json(record_of(points[1], 1)).dump() << "\n";
  try {
    read_results_any(path);
    FAIL();
  } catch (const InputError& e) {  // one line: the file, its line, the pointer, the problem
    EXPECT_NE(std::string(e.what()).find("corrupt.jsonl:3: : not valid JSON"), std::string::npos) << e.what();
  }
}

TEST(Journal, SurvivesSigkillAtAnyMoment) {
  // A child appends records as fast as it can; SIGKILL lands at an arbitrary moment. Every
  // record that reached the file is complete and readable.
  const std::string path = temp("sigkill.jsonl");
  const auto points = sweep_points();
  for (int trial = 0; trial < 3; ++trial) {
    fs::remove(path);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      JournalWriter w(path, header("GPU A"));
      for (size_t i = 0;; ++i) w.append(record_of(points[i % points.size()], i));
    }
    for (int waited = 0; waited < 2000; ++waited) {  // until it has written a few records
      std::error_code ec;
      if (fs::exists(path, ec) && fs::file_size(path, ec) > 6000) break;
      usleep(1000);
    }
    usleep(useconds_t(trial * 700));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    const LoadedResults r = read_results_any(path);
    EXPECT_GE(r.file.records.size(), 3u);
    for (size_t i = 0; i < r.file.records.size(); ++i) EXPECT_EQ(r.file.records[i].point_index, int64_t(i));
  }
}

TEST(Resume, SkipsEveryCompleteRecordOfAKilledRun) {
  // The journal of a killed run: points 0, 1, 2 done (2 an error), 3 cut short by the kill.
  const std::string path = temp("resume.jsonl");
  const auto points = sweep_points();
  {
    JournalWriter w(path, header("GPU A"));
    w.append(record_of(points[0], 0));
    w.append(record_of(points[1], 1, Status::Skipped));
    w.append(record_of(points[2], 2, Status::Error));
  }
  std::ofstream(path, std::ios::app) << to_json(record_of(points[3], 3)).dump().substr(0, 100);
  std::vector<std::string> args = {"run", "--dry-run", "--resume", path};
  args.insert(args.end(), kAxes.begin(), kAxes.end());
  std::string err, out;
  ASSERT_EQ(run_cli(args, &err, &out), 0) << err;
  const auto listed = lines_of(out);
  ASSERT_EQ(listed.size(), points.size() - 2) << out;  // ok and skipped kept; the error and the cut point re-run
  EXPECT_EQ(listed[0].substr(0, listed[0].find("  ~")), points[2].name());
  EXPECT_EQ(listed[1].substr(0, listed[1].find("  ~")), points[3].name());
  EXPECT_NE(err.find("cut-short line"), std::string::npos) << err;
  EXPECT_NE(err.find("2 already in"), std::string::npos) << err;
}

TEST(Resume, AcceptsTheFinalResultFileToo) {
  const std::string path = temp("resume_final.json");
  const auto points = sweep_points();
  ResultFile f = header("GPU A");
  for (size_t i = 0; i < 5; ++i) f.records.push_back(record_of(points[i], i));
  write_result_file(f, path);
  std::vector<std::string> args = {"run", "--dry-run", "--resume", path};
  args.insert(args.end(), kAxes.begin(), kAxes.end());
  std::string out;
  ASSERT_EQ(run_cli(args, nullptr, &out), 0);
  EXPECT_EQ(lines_of(out).size(), points.size() - 5) << out;
}

TEST(Resume, WithAShardKeepsOnlyTheShardsPoints) {
  const std::string path = temp("resume_shard.json");
  const auto points = sweep_points();
  ResultFile f = header("GPU A");
  for (size_t i = 0; i < points.size(); ++i) f.records.push_back(record_of(points[i], i));
  write_result_file(f, path);
  std::vector<std::string> args = {"run", "--dry-run", "--resume", path, "--shard", "1/2"};
  args.insert(args.end(), kAxes.begin(), kAxes.end());
  std::string out, err;
  ASSERT_EQ(run_cli(args, &err, &out), 0);
  EXPECT_TRUE(out.empty()) << out;
  EXPECT_NE(err.find("0 points (shard 1/2 of 8), 4 already in"), std::string::npos) << err;
}

class Merge : public testing::Test {
 protected:
  // The sweep split into two shard files, as two Slurm tasks would write them.
  void SetUp() override {
    points_ = sweep_points();
    for (int i = 0; i < 2; ++i) {
      ResultFile f = header(i == 0 ? "GPU A" : gpu_b_);
      f.wall_s = 10.0 + i;
      for (size_t k : shard_indices(points_, {i, 2}, 5, 2)) f.records.push_back(record_of(points_[k], k));
      shards_.push_back(temp("shard" + std::to_string(i) + ".json"));
      write_result_file(f, shards_.back());
    }
    out_ = temp("merged.json");
  }
  std::vector<Point> points_;
  std::vector<std::string> shards_;
  std::string out_;
  std::string gpu_b_ = "GPU A";
};

TEST_F(Merge, JoinsShardsBackIntoSweepOrder) {
  std::string err;
  ASSERT_EQ(run_cli({"merge", shards_[1], shards_[0], "-o", out_}, &err), 0) << err;
  const ResultFile f = read_result_file(out_);
  ASSERT_EQ(f.records.size(), points_.size());
  for (size_t i = 0; i < points_.size(); ++i) EXPECT_EQ(f.records[i].name(), points_[i].name());
  EXPECT_EQ(f.run_id, "0123456789abcdef");  // one run's shards keep its id
  // Each shard's wall time, in the order given; the merged file has no wall time of its own.
  EXPECT_FALSE(f.wall_s.has_value());
  ASSERT_EQ(f.merged_from.size(), 2u);
  EXPECT_EQ(f.merged_from[0]["file"], shards_[1]);
  EXPECT_EQ(f.merged_from[0]["wall_s"], 11.0);
  EXPECT_EQ(f.merged_from[1]["wall_s"], 10.0);
}

TEST_F(Merge, RefusesAPointTwice) {
  std::string err;
  EXPECT_EQ(run_cli({"merge", shards_[0], shards_[0], "-o", out_}, &err), 2);
  EXPECT_NE(err.find("is in both"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out_));
}

class MergeMixed : public Merge {
 protected:
  void SetUp() override {
    gpu_b_ = "GPU B";
    Merge::SetUp();
  }
};

TEST_F(MergeMixed, RefusesMixedGpusUnlessTold) {
  std::string err;
  EXPECT_EQ(run_cli({"merge", shards_[0], shards_[1], "-o", out_}, &err), 2);
  EXPECT_NE(err.find("--allow-mixed-gpus"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(fs::exists(out_));
  ASSERT_EQ(run_cli({"merge", shards_[0], shards_[1], "-o", out_, "--allow-mixed-gpus"}, &err), 0) << err;
  const ResultFile f = read_result_file(out_);
  EXPECT_EQ(f.records.size(), points_.size());
  EXPECT_EQ(f.devices.size(), 2u);
}

TEST(MergeJournal, ReadsAKilledShardsJournal) {
  const std::string path = temp("merge_killed.jsonl"), out = temp("merge_killed_out.json");
  const auto points = sweep_points();
  {
    JournalWriter w(path, header("GPU A"));
    w.append(record_of(points[0], 0));
  }
  std::ofstream(path, std::ios::app) << "{\"name\": \"flash2/fw";
  std::string err;
  ASSERT_EQ(run_cli({"merge", path, "-o", out}, &err), 0) << err;
  EXPECT_EQ(read_result_file(out).records.size(), 1u);
  EXPECT_NE(err.find("cut-short"), std::string::npos);
}
