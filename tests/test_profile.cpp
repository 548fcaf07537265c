// `flashio profile` without a GPU: kernel names (demangled in full, anonymous namespaces kept),
// the records made from the injection library's log (per launch, per NVTX range by regex,
// counters unavailable), and the command line: bad input exits 2 with one line and no file, the
// program's exit code passes through, and its file is written even when it fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/cli/commands.h"
#include "bench/core/counters.h"
#include "bench/core/json_input.h"
#include "bench/core/profile_log.h"

using namespace flashio;
namespace fs = std::filesystem;

namespace {

// Mangled names as g++ and nvcc emit them (read with nm from a compiled file).
constexpr const char* kAnonymousSoftmax = "_ZN7flashio9baselines12_GLOBAL__N_114softmax_kernelIfEEvPKT_PS3_i";
constexpr const char* kAnonymousTagTemplate = "_ZN7flashio9baselines5tiledINS0_12_GLOBAL__N_13TagELi64EEEvT_j";
constexpr const char* kPlain = "_ZN7flashio9baselines12plain_kernelEPfi";
constexpr const char* kUnsignedTemplate = "_ZN7flashio9baselines1uIjEEvT_";

}  // namespace

TEST(KernelName, KeepsAnonymousNamespacesAndTemplateArguments) {
  // Before: cut at the first '(' — every kernel in an anonymous namespace became `flashio::baselines::`.
  EXPECT_EQ(kernel_name(kAnonymousSoftmax), "flashio::baselines::(anonymous namespace)::softmax_kernel<float>");
  EXPECT_EQ(kernel_name(kAnonymousTagTemplate),
            "flashio::baselines::tiled<flashio::baselines::(anonymous namespace)::Tag, 64>");
}

TEST(KernelName, DropsReturnTypeAndParametersOnly) {
  EXPECT_EQ(kernel_name(kPlain), "flashio::baselines::plain_kernel");
  EXPECT_EQ(kernel_name(kUnsignedTemplate), "flashio::baselines::u<unsigned int>");
  EXPECT_EQ(kernel_name("c_kernel"), "c_kernel");              // extern "C": not mangled
  EXPECT_EQ(kernel_name("ns::k<int>(float*)"), "ns::k<int>");  // already demangled
  EXPECT_EQ(kernel_name(""), "");
}

namespace {

// A log as the injection library writes it: a Hopper GPU, a copy kernel inside two pushes of
// the range "point/a" (nested in "outer"), one kernel in "point/b", one outside every range.
std::string hopper_log() {
  ProfiledDevice d;
  d.device = 0;
  d.cc_major = 9;
  d.chip = "GH100";
  d.set = CounterSet::Full;
  d.passes = 1;
  d.metrics = {"dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
               "gpu__time_duration.sum"};
  std::ostringstream s;
  s << start_line("/usr/local/cuda/lib64/libcupti.so.13").dump() << "\n" << counters_line(d).dump() << "\n";
  auto launch = [&](int64_t i, const char* name, std::vector<NvtxRange> nvtx, double read) {
    ProfiledLaunch l;
    l.launch = i;
    l.mangled = name;
    l.nvtx = std::move(nvtx);
    KernelResources r;
    r.registers_per_thread = 32;
    r.static_smem_bytes = 1024;
    r.dynamic_smem_bytes = 4096;
    r.block[0] = 256, r.block[1] = r.block[2] = 1;
    r.grid[0] = 1000, r.grid[1] = r.grid[2] = 1;
    l.resources = r;
    l.values = std::map<std::string, double>{{"dram__bytes_read.sum", read},
                                             {"dram__bytes_write.sum", 2 * read},
                                             {"lts__t_sectors_srcunit_tex_op_write.sum", 10},
                                             {"gpu__time_duration.sum", 1000}};
    s << kernel_line(l).dump() << "\n";
  };
  const NvtxRange outer{1, "outer"};
  launch(0, kAnonymousSoftmax, {outer, {2, "point/a"}}, 100);
  launch(1, kPlain, {outer, {2, "point/a"}}, 200);
  launch(2, kPlain, {outer, {3, "point/b"}}, 300);
  launch(3, kPlain, {}, 400);
  launch(4, kPlain, {outer, {4, "point/a"}}, 500);  // a second push of the same name: another record
  return s.str();
}

ProfileLog parse(const std::string& text) {
  std::istringstream in(text);
  return parse_profile_log(in);
}

}  // namespace

TEST(ProfileRecords, OneRecordPerLaunchWithNameShapeAndBytes) {
  const ProfileLog log = parse(hopper_log() + end_line(5).dump() + "\n");
  ASSERT_EQ(log.launches.size(), 5u);
  const auto records = profile_records(log, std::nullopt);
  ASSERT_EQ(records.size(), 5u);
  const auto& r = records[0];
  EXPECT_EQ(r["kind"], "kernel");
  EXPECT_EQ(r["name"], "flashio::baselines::(anonymous namespace)::softmax_kernel<float>");
  EXPECT_EQ(r["nvtx"], nlohmann::json({"outer", "point/a"}));
  const auto& c = r["counters"];
  EXPECT_EQ(c["status"], "ok");
  EXPECT_EQ(c["family"], "hopper");
  EXPECT_EQ(c["chip"], "GH100");
  EXPECT_EQ(c["bytes"]["dram_read"], 100);
  EXPECT_EQ(c["bytes"]["dram_write"], 200);
  EXPECT_EQ(c["bytes"]["l2_write"], 10 * 32);  // sectors → bytes
  EXPECT_DOUBLE_EQ(c["duration_s"].get<double>(), 1e-6);
  const auto& res = c["kernels"][0]["resources"];
  EXPECT_EQ(res["registers_per_thread"], 32);
  EXPECT_EQ(res["static_smem_bytes"], 1024);
  EXPECT_EQ(res["dynamic_smem_bytes"], 4096);
  EXPECT_EQ(res["grid"], nlohmann::json({1000, 1, 1}));
  EXPECT_EQ(res["block"], nlohmann::json({256, 1, 1}));
  EXPECT_EQ(records[3]["nvtx"], nlohmann::json::array());
  EXPECT_TRUE(profile_notes(log, std::nullopt, records).empty());
}

TEST(ProfileRecords, RangesGroupTheirKernelsByPushNotByName) {
  const ProfileLog log = parse(hopper_log() + end_line(5).dump() + "\n");
  const auto re = parse_range_pattern("^point/");
  const auto records = profile_records(log, re);
  ASSERT_EQ(records.size(), 3u);  // point/a (push 2), point/b, point/a (push 4); launch 3 is outside
  EXPECT_EQ(records[0]["kind"], "range");
  EXPECT_EQ(records[0]["name"], "point/a");
  EXPECT_EQ(records[0]["launch"], 0);
  EXPECT_EQ(records[0]["nvtx"], nlohmann::json({"outer"}));
  EXPECT_EQ(records[0]["counters"]["bytes"]["dram_read"], 300);  // 100 + 200
  ASSERT_EQ(records[0]["counters"]["kernels"].size(), 2u);       // two kernels, listed
  EXPECT_EQ(records[1]["name"], "point/b");
  EXPECT_EQ(records[1]["counters"]["bytes"]["dram_read"], 300);
  EXPECT_EQ(records[2]["name"], "point/a");
  EXPECT_EQ(records[2]["launch"], 4);
  EXPECT_EQ(records[2]["counters"]["bytes"]["dram_read"], 500);
  const auto notes = profile_notes(log, re, records);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("1 of 5 kernel launches ran outside"), std::string::npos) << notes[0];
}

TEST(ProfileRecords, LaunchesOutsideTheRangesAreCountedNotLogged) {
  // With --range the library logs only the launches inside matching ranges (2 and 3 of 0..4);
  // the end line counts them all.
  ProfiledLaunch a, b;
  a.launch = 2, a.mangled = kPlain, a.nvtx = {{7, "point/a"}};
  b.launch = 3, b.mangled = kPlain, b.nvtx = {{7, "point/a"}};
  const ProfileLog log = parse(start_line("libcupti.so.13").dump() + "\n" + kernel_line(a).dump() + "\n" +
                               kernel_line(b).dump() + "\n" + end_line(5).dump() + "\n");
  EXPECT_EQ(log.total_launches, 5);
  const auto re = parse_range_pattern("^point/");
  const auto records = profile_records(log, re);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["launch"], 2);
  EXPECT_EQ(records[0]["counters"]["kernels"][0]["launches"], 2);
  const auto notes = profile_notes(log, re, records);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "3 of 5 kernel launches ran outside the matching NVTX ranges, unprofiled");
}

TEST(ProfileRecords, MatchingRangeIsTheInnermost) {
  const std::vector<NvtxRange> open = {{1, "outer"}, {2, "point/a"}, {3, "inner"}};
  EXPECT_EQ(matching_range(open, parse_range_pattern("o")), 1);  // "point/a" is inner to "outer"
  EXPECT_EQ(matching_range(open, parse_range_pattern("^outer$")), 0);
  EXPECT_EQ(matching_range(open, parse_range_pattern("^none$")), -1);
  EXPECT_EQ(matching_range({}, parse_range_pattern(".*")), -1);
}

TEST(ProfileRecords, InnermostMatchingRangeWins) {
  const ProfileLog log = parse(hopper_log());
  const auto records = profile_records(log, parse_range_pattern("o"));  // "outer" and "point/…" both match
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0]["name"], "point/a");
  const auto outer = profile_records(log, parse_range_pattern("^outer$"));
  ASSERT_EQ(outer.size(), 1u);
  EXPECT_EQ(outer[0]["counters"]["bytes"]["dram_read"], 100 + 200 + 300 + 500);
}

TEST(ProfileRecords, NoMatchingRangeIsSaid) {
  const ProfileLog log = parse(hopper_log());
  const auto re = parse_range_pattern("^nothing$");
  const auto records = profile_records(log, re);
  EXPECT_TRUE(records.empty());
  const auto notes = profile_notes(log, re, records);
  ASSERT_GE(notes.size(), 1u);
  EXPECT_NE(notes[0].find("no kernel ran inside an NVTX range matching --range"), std::string::npos);
}

TEST(ProfileRecords, UnavailableCountersKeepNamesResourcesAndTheReason) {
  ProfiledLaunch l;
  l.launch = 0;
  l.mangled = kAnonymousSoftmax;
  KernelResources r;
  r.registers_per_thread = 40;
  l.resources = r;
  const std::string why = "cuptiRangeProfilerEnable failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  const ProfileLog log = parse(start_line("libcupti.so.13").dump() + "\n" + unavailable_line(0, why).dump() + "\n" +
                               kernel_line(l).dump());
  const auto records = profile_records(log, std::nullopt);
  ASSERT_EQ(records.size(), 1u);
  const auto& c = records[0]["counters"];
  EXPECT_EQ(c["status"], "unavailable");
  EXPECT_EQ(c["reason"], why);
  EXPECT_EQ(c["kernels"][0]["name"], "flashio::baselines::(anonymous namespace)::softmax_kernel<float>");
  EXPECT_EQ(c["kernels"][0]["resources"]["registers_per_thread"], 40);
  EXPECT_FALSE(c.contains("bytes"));
}

TEST(ProfileRecords, ACutShortLogKeepsItsCompleteLines) {
  std::string text = hopper_log();
  text.resize(text.size() - 40);  // the last line cut by a kill
  const ProfileLog log = parse(text);
  EXPECT_EQ(log.launches.size(), 4u);
  EXPECT_EQ(log.bad_lines, 1);
  const auto notes = profile_notes(log, std::nullopt, profile_records(log, std::nullopt));
  bool said_exit = false, said_lines = false;
  for (const auto& n : notes) {
    said_exit = said_exit || n.find("did not exit through exit()") != std::string::npos;
    said_lines = said_lines || n.find("1 unreadable lines") != std::string::npos;
  }
  EXPECT_TRUE(said_exit);
  EXPECT_TRUE(said_lines);
}

TEST(ProfileRecords, NoCudaAndNoKernelAreSaid) {
  EXPECT_EQ(profile_notes(ProfileLog{}, std::nullopt, nlohmann::json::array()).at(0),
            "the program never initialised CUDA: no kernel was launched");
  const ProfileLog started = parse(start_line("libcupti.so.13").dump() + "\n" + end_line(0).dump());
  EXPECT_EQ(profile_notes(started, std::nullopt, nlohmann::json::array()).at(0), "the program launched no kernel");
}

TEST(ProfileRecords, RangePatternRefusedInOneLine) {
  try {
    parse_range_pattern("(");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("--range: '(' is not a regular expression"), 0u) << e.what();
  }
}

// ---- the command line ------------------------------------------------------------------------

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / fs::path("flashio-profile-test-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

int profile(std::vector<std::string> args, std::string* err = nullptr) {
  args.insert(args.begin(), {"flashio", "profile"});
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int rc = flashio_main(args);
  const std::string e = testing::internal::GetCapturedStderr();
  testing::internal::GetCapturedStdout();
  if (err) *err = e;
  return rc;
}

int lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(ProfileCli, BadInputIsOneLineExitTwoAndNoFile) {
  TempDir dir;
  const std::string out = (dir.path / "p.json").string();
  const fs::path data = dir.path / "data", garbage = dir.path / "garbage";
  std::ofstream(data) << "not a program\n";
  std::ofstream(garbage) << "\x7f"
                         << "ELF garbage";
  fs::permissions(data, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(garbage, fs::perms::owner_all);
  const std::vector<std::string> inputs = {"data", "garbage"};
  const std::vector<std::vector<std::string>> cases = {
      {"--out", out},                                         // no command
      {"--out", out, "--"},                                   // no command after --
      {"--out", out, "--", "flashio-no-such-command-xyz"},    // not in $PATH
      {"--out", out, "--", (dir.path / "missing").string()},  // no such file
      {"--out", out, "--", data.string()},                    // not executable
      {"--out", out, "--", garbage.string()},                 // executable, but not a program
      {"--out", out, "--counters", "off", "--", "true"},
      {"--out", out, "--counters", "all", "--", "true"},
      {"--out", out, "--cache-control", "some", "--", "true"},
      {"--out", out, "--range", "[", "--", "true"},
      {"--out", (dir.path / "no-folder" / "p.json").string(), "--", "true"},
  };
  for (const auto& c : cases) {
    std::string err;
    EXPECT_EQ(profile(c, &err), 2) << testing::PrintToString(c);
    EXPECT_EQ(lines(err), 1) << err;
    EXPECT_EQ(err.rfind("flashio: error: ", 0), 0u) << err;
    auto files = dir.files();
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files, inputs) << testing::PrintToString(c);
  }
}

TEST(ProfileCli, TheProgramsExitCodePassesThroughAndItsFileIsWritten) {
  TempDir dir;
  const std::string out = (dir.path / "p.json").string();
  std::string err;
  ASSERT_EQ(profile({"--out", out, "--", "sh", "-c", "exit 7"}, &err), 7) << err;
  const nlohmann::json doc = read_result_document(out);  // checked against results/schema.json
  EXPECT_EQ(doc["producer"], "flashio profile");
  EXPECT_EQ(doc["profile"]["exit_code"], 7);
  EXPECT_EQ(doc["profile"]["cache_control"], "all");  // the default, as ncu's
  EXPECT_EQ(doc["profile"]["command"], nlohmann::json({"sh", "-c", "exit 7"}));
  EXPECT_EQ(doc["profile"]["records"], nlohmann::json::array());
  EXPECT_EQ(doc["records"], nlohmann::json::array());
  ASSERT_FALSE(doc["profile"]["notes"].empty());  // no kernel: a line says why
  EXPECT_NE(err.find("flashio: note: "), std::string::npos) << err;
  // An existing output is kept without --force, replaced with it; a signal is 128 + N.
  EXPECT_EQ(profile({"--out", out, "--", "true"}), 2);
  EXPECT_EQ(profile({"--force", "--out", out, "--", "sh", "-c", "kill -TERM $$"}), 128 + 15);
  EXPECT_EQ(read_result_document(out)["profile"]["exit_code"], 128 + 15);
  EXPECT_EQ(dir.files(), std::vector<std::string>{"p.json"});  // no log or temporary left behind
}

TEST(ProfileCli, CtrlCIsTheProgramsToHandle) {
  // SIGINT reaches flashio too (one process group): it waits for the program and writes its file.
  TempDir dir;
  const std::string out = (dir.path / "p.json").string();
  ASSERT_EQ(profile({"--out", out, "--", "sh", "-c", "kill -INT $PPID; sleep 0.2; exit 4"}), 4);
  EXPECT_EQ(read_result_document(out)["profile"]["exit_code"], 4);
  ASSERT_EQ(profile({"--force", "--out", out, "--", "sh", "-c", "kill -INT $$; exit 0"}), 128 + SIGINT);
}

TEST(ProfileCli, TheCommandMayFollowTheOptionsWithoutDashes) {
  TempDir dir;
  const std::string out = (dir.path / "p.json").string();
  ASSERT_EQ(profile({"--counters", "dram", "--cache-control", "none", "-o", out, "sh", "-c", "exit 0", "--out", "x"}), 0);
  const nlohmann::json doc = read_result_document(out);
  EXPECT_EQ(doc["profile"]["set"], "dram");
  EXPECT_EQ(doc["profile"]["cache_control"], "none");
  EXPECT_EQ(doc["profile"]["command"], nlohmann::json({"sh", "-c", "exit 0", "--out", "x"}));
}
