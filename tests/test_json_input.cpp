// Bounded, schema-checked readers and safe writes (bench/core/json_input.h, safe_write.h;
// issue 21). The CLI-level cases are tests/hostile/hostile.py.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "bench/core/json_input.h"
#include "bench/core/record.h"
#include "bench/core/safe_write.h"
#include "bench/core/sparsity.h"
#include "bench/sweep/journal.h"
#include "bench/sweep/sweep_file.h"

namespace flashio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("flashio-json-input-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(JsonInput, NestingBeyondTheLimitIsRefusedWithThePointerWhereItHappens) {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');  // crashed the readers before
  const std::string e = error_of([&] { parse_json_input(deep, "deep.json"); });
  EXPECT_NE(e.find("deep.json: /0/0/0/0"), std::string::npos) << e;
  EXPECT_NE(e.find("nested deeper than 64 levels"), std::string::npos) << e;
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_NO_THROW(parse_json_input(ok, "ok.json"));
  EXPECT_NE(error_of([&] { parse_json_input("[" + ok + "]", "x.json"); }).find("nested deeper"), std::string::npos);
}

TEST(JsonInput, NotJsonNamesTheByteAndThePointer) {
  EXPECT_NE(error_of([] { parse_json_input(R"({"a": [1, 2, )", "t.json"); }).find("t.json: /a/2: not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_json_input(R"({"seqlen": 1e999})", "s.json"); }).find("s.json: /seqlen: not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_json_input("", "e.json"); }).find("e.json: : not valid JSON at byte"), std::string::npos);
}

TEST(JsonInput, SpecialFilesAreNeverRead) {
  EXPECT_NE(error_of([] { read_input_file("/dev/zero"); }).find("not a regular file"), std::string::npos);
  const fs::path d = scratch("special");
  const std::string fifo = (d / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { read_input_file(fifo); }).find("not a regular file"), std::string::npos);  // and no hang
  EXPECT_NE(error_of([&] { read_input_file(d.string()); }).find("is a directory"), std::string::npos);
  std::ofstream(d / "big") << std::string(100, 'x');
  EXPECT_NE(error_of([&] { read_input_file((d / "big").string(), 99); }).find("100 bytes, more than the 99"),
            std::string::npos);
  fs::remove_all(d);
}

TEST(JsonInput, ResultSchemaProblemsNameTheInnermostPointer) {
  ResultFile f;
  Record r;
  r.method = "flash2";
  f.records.push_back(r);
  json doc = to_json(f);
  EXPECT_FALSE(result_file_schema().first_problem(doc)) << result_file_schema().first_problem(doc)->what;
  doc["records"][0]["problem"]["batch"] = "x";
  const auto p = result_file_schema().first_problem(doc);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pointer, "/records/0/problem/batch");
  EXPECT_NE(p->what.find("(found \"x\")"), std::string::npos) << p->what;
  doc = to_json(f);
  doc["schema_version"] = 99;
  EXPECT_EQ(result_file_schema().first_problem(doc)->pointer, "/schema_version");
}

TEST(JsonInput, NanWrittenAsNullReadsBackAsNan) {
  Record r;
  r.method = "flash2";
  r.time = TimeStats{};
  r.time->min_s = r.time->max_s = r.time->mean_s = 1e-3;
  r.time->reps = 1;
  r.time->median_s = std::nan("");
  r.check = CheckResult{};
  r.check->scope = "all rows";
  r.check->max_abs_err = std::nan("");
  const json j = json::parse(to_json(r).dump());  // nlohmann writes NaN as null
  EXPECT_TRUE(j["time"]["median_s"].is_null());
  EXPECT_FALSE(record_schema().first_problem(j)) << record_schema().first_problem(j)->what;
  const Record back = record_from_json(j);
  EXPECT_TRUE(std::isnan(back.time->median_s));
  EXPECT_TRUE(std::isnan(back.check->max_abs_err));
  EXPECT_FALSE(back.tflops());
}

TEST(JsonInput, IntegersThatDoNotFitAreRefusedNotTruncated) {
  Record r;
  r.method = "flash2";
  json j = to_json(r);
  j["problem"]["block_r"] = 4294967360ll;  // was read as tile 64
  EXPECT_THROW(record_from_json(j), std::runtime_error);
  EXPECT_TRUE(record_schema().first_problem(j));
  j = to_json(r);
  j["problem"]["batch"] = 18446744073709551615ull;  // was read as -1
  EXPECT_THROW(record_from_json(j), std::runtime_error);
  EXPECT_EQ(int_field(json{{"k", 7}}, "k", 0), 7);
  EXPECT_THROW(int_field(json{{"k", 1.5}}, "k", 0), std::runtime_error);
}

TEST(JsonInput, ARecordsPatternFileIsNeverOpenedItsEmbeddedMaskIsUsed) {
  const fs::path d = scratch("pattern");
  const std::string path = (d / "mask.txt").string();
  std::ofstream(path) << "2 2\n10\n01\n";
  Problem p;
  p.seqlen_q = 256;
  p.sparse_block = 128;
  p.pattern = "file:" + path;
  const json j = to_json(p);  // from the command line: the file is read, and embedded
  ASSERT_TRUE(j.contains("pattern_mask"));
  EXPECT_EQ(j["pattern_mask"], json::array({"10", "01"}));
  fs::remove_all(d);  // the record alone now
  const Problem back = problem_from_json(j);
  EXPECT_EQ(make_block_mask(back).density(), 0.5);
  EXPECT_EQ(to_json(back), j);
  json named = j;
  named.erase("pattern_mask");
  named["pattern"] = "file:/dev/zero";  // a result file naming a path: never opened
  const Problem foreign = problem_from_json(named);
  try {
    make_block_mask(foreign);
    FAIL() << "a record's pattern path was opened";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("never opens a path named in a result file"), std::string::npos) << e.what();
  }
  EXPECT_DOUBLE_EQ(flops(foreign, Pass::Fwd), 0.5 * 4.0 * 256 * 256 * 64);  // the record's density
}

TEST(JsonInput, MasksAndProblemsBeyondTheBoundsAreRefusedNotAllocated) {
  Problem p;
  p.seqlen_q = int64_t(1) << 40;  // rows·cols overflowed to 0 before
  p.pattern = "butterfly";
  EXPECT_THROW(make_block_mask(p), std::invalid_argument);
  EXPECT_TRUE(p.invalid_reason());
  Problem q;
  q.batch = 1000000000;
  q.heads = 1000000;
  EXPECT_NE(q.invalid_reason().value_or("").find("2^40 elements"), std::string::npos);
  EXPECT_FALSE(checked_mul(int64_t(1) << 62, 4));
}

TEST(JsonInput, JournalLastLineIsCutShortOnlyWithoutItsNewline) {
  ResultFile f;
  Record r;
  r.method = "flash2";
  json header = to_json(f);
  header.erase("records");
  header["schema"] = "flashio/journal";
  const std::string rec = to_json(r).dump();
  const std::string head = header.dump() + "\n" + rec + "\n";
  const LoadedResults cut = parse_journal_text(head + rec.substr(0, rec.size() / 2), "j.jsonl");
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.file.records.size(), 1u);
  const std::string e = error_of([&] { parse_journal_text(head + "{\"x\": 1}\n", "j.jsonl"); });
  EXPECT_NE(e.find("j.jsonl:3: "), std::string::npos) << e;
}

TEST(JsonInput, SweepFilesAreCheckedAgainstTheirSchema) {
  const std::string e = error_of([] { parse_sweep_text(R"({"seqlenz": [1024]})", "uk.json"); });
  EXPECT_NE(e.find("uk.json: /seqlenz: a key the schema does not have"), std::string::npos) << e;
  EXPECT_NE(error_of([] { parse_sweep_text(R"({"sweeps": [{"batch": "four"}]})", "b.json"); }).find("b.json: /sweeps/0/batch"),
            std::string::npos);
  EXPECT_NO_THROW(parse_sweep_text(R"({"method": "flash2", "seqlen": [128, 256], "head_dim": 64})", "ok.json"));
}

TEST(SafeWrite, OutputsThatAreInputsByIdentityAreRefused) {
  const fs::path d = scratch("identity");
  const std::string a = (d / "a.json").string();
  std::ofstream(a) << "{}";
  fs::create_directories(d / "sub");
  fs::create_symlink(a, d / "link.json");
  for (const std::string& out : {a, (d / "." / "a.json").string(), (d / "sub" / ".." / "a.json").string(),
                                 (d / "link.json").string()}) {
    const std::string e = error_of([&] { check_output(out, {a}, /*overwrite=*/true, "--out"); });
    EXPECT_NE(e.find("is the same file as the input"), std::string::npos) << out << ": " << e;
  }
  EXPECT_NE(error_of([&] { check_output(a, {}, false, "--out"); }).find("exists; pass --force"), std::string::npos);
  EXPECT_NO_THROW(check_output(a, {}, true, "--out"));
  EXPECT_NE(error_of([&] { check_output("/dev/null", {}, true, "--out"); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { check_output((d / "none" / "x.json").string(), {}, true, "--out"); }).find("does not exist"),
            std::string::npos);
  fs::remove_all(d);
}

TEST(SafeWrite, WritesThroughAUniqueTemporaryAndLeavesOthersFilesAlone) {
  const fs::path d = scratch("write");
  const std::string out = (d / "x.json").string();
  std::ofstream(out + ".tmp") << "someone else's";  // a fixed <out>.tmp was deleted before
  write_file_atomically(out, "new\n", /*overwrite=*/false);
  EXPECT_THROW(write_file_atomically(out, "again\n", /*overwrite=*/false), InputError);  // exists: not replaced
  std::ifstream in(out);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "new\n");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"x.json", "x.json.tmp"}));  // no temporary left
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
  fs::remove_all(d);
}

}  // namespace
}  // namespace flashio
