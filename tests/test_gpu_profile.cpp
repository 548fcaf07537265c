// `flashio profile` on the GPU: tests/profile_target.cu run under it, its records checked against
// what the program is known to do — DRAM bytes of a copy of known size, the full demangled name of
// a kernel in an anonymous namespace, the NVTX range records, the program's exit code passed
// through, and the kernels before an abort still written. Skips without a GPU.
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/core/json_input.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;
namespace fs = std::filesystem;

namespace {

// The test programs beside this binary (build/tests/): flashio in build/, the target here.
fs::path binary_folder() { return fs::read_symlink("/proc/self/exe").parent_path(); }
std::string flashio_binary() {
  const char* env = std::getenv("FLASHIO_BIN");
  return env && *env ? env : (binary_folder() / ".." / "flashio").lexically_normal().string();
}
std::string target_binary() { return (binary_folder() / "flashio_profile_target").string(); }

class GpuProfile : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    dir_ = fs::temp_directory_path() / fmt::format("flashio-gpu-profile-{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Large against L2 (at most one L2 of dirty lines is written after the copy ends): ±2 %.
    bytes_ = size_t(std::max<int64_t>(50 * gpu()->l2_bytes, int64_t(1) << 30)) & ~size_t(0xFFFF);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `flashio profile OPTIONS -- target ARGS`; returns flashio's exit status and the file.
  int profile(const std::string& options, const std::string& target_args, nlohmann::json& doc) {
    const std::string out = (dir_ / "profile.json").string();
    fs::remove(out);
    const std::string cmd = fmt::format("'{}' profile --out '{}' {} -- '{}' --bytes {} {} 2>'{}'", flashio_binary(),
                                        out, options, target_binary(), bytes_, target_args, (dir_ / "stderr").string());
    const int status = std::system(cmd.c_str());
    std::ifstream err(dir_ / "stderr");
    std::string line;
    while (std::getline(err, line)) std::printf("  %s\n", line.c_str());
    doc = fs::exists(out) ? read_result_document(out) : nlohmann::json();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static const nlohmann::json* find(const nlohmann::json& records, const std::string& name) {
    for (const auto& r : records)
      if (r["name"] == name) return &r;
    return nullptr;
  }

  fs::path dir_;
  size_t bytes_ = 0;
};

}  // namespace

TEST_F(GpuProfile, CopyBytesAndFullKernelNamesPerLaunch) {
  nlohmann::json doc;
  ASSERT_EQ(profile("--counters full", "", doc), 0);
  const auto& records = doc["profile"]["records"];
  ASSERT_EQ(records.size(), 4u) << doc["profile"].dump(1);  // fill, evict, copy, scale
  const nlohmann::json* copy = find(records, "flashio::testing_util::calibration_copy_kernel");
  ASSERT_TRUE(copy) << records.dump(1);
  const auto& c = (*copy)["counters"];
  ASSERT_EQ(c["status"], "ok") << c.dump();
  const double size = double(bytes_);
  EXPECT_NEAR(c["bytes"]["dram_read"].get<double>() / size, 1.0, 0.02) << c.dump();
  EXPECT_NEAR(c["bytes"]["dram_write"].get<double>() / size, 1.0, 0.02) << c.dump();
  EXPECT_NEAR(c["bytes"]["l2_read"].get<double>() / size, 1.0, 0.02) << c.dump();
  EXPECT_NEAR(c["bytes"]["l2_write"].get<double>() / size, 1.0, 0.02) << c.dump();
  EXPECT_GT(c["duration_s"].get<double>(), 0.0);
  const auto& res = c["kernels"][0]["resources"];
  EXPECT_EQ(res["grid"], nlohmann::json({2048, 1, 1}));
  EXPECT_EQ(res["block"], nlohmann::json({256, 1, 1}));
  EXPECT_GT(res["registers_per_thread"].get<int>(), 0);
  EXPECT_EQ((*copy)["nvtx"], nlohmann::json({"target/copy"}));
  std::printf("copy %zu B under injection: dram read %.4f, write %.4f, SM<-L2 %.4f, SM->L2 %.4f of the size\n", bytes_,
              c["bytes"]["dram_read"].get<double>() / size, c["bytes"]["dram_write"].get<double>() / size,
              c["bytes"]["l2_read"].get<double>() / size, c["bytes"]["l2_write"].get<double>() / size);
  // A kernel in an anonymous namespace keeps its whole name.
  const nlohmann::json* scale = find(records, "(anonymous namespace)::scale_kernel<float>");
  ASSERT_TRUE(scale) << records.dump(1);
  EXPECT_EQ((*scale)["counters"]["status"], "ok");
  EXPECT_EQ(doc["device"]["name"], gpu()->name);
}

TEST_F(GpuProfile, RangesGroupTheirKernelsAndTheExitCodePassesThrough) {
  nlohmann::json doc;
  ASSERT_EQ(profile("--counters dram --range '^target/'", "--exit 3", doc), 3);
  EXPECT_EQ(doc["profile"]["exit_code"], 3);
  EXPECT_EQ(doc["profile"]["range"], "^target/");
  const auto& records = doc["profile"]["records"];
  ASSERT_EQ(records.size(), 2u) << doc["profile"].dump(1);
  EXPECT_EQ(records[0]["kind"], "range");
  EXPECT_EQ(records[0]["name"], "target/copy");
  EXPECT_EQ(records[1]["name"], "target/scale");
  const auto& c = records[0]["counters"];
  ASSERT_EQ(c["status"], "ok") << c.dump();
  EXPECT_EQ(c["set"], "dram");
  EXPECT_NEAR(c["bytes"]["dram_read"].get<double>() / double(bytes_), 1.0, 0.02) << c.dump();
  EXPECT_FALSE(c["bytes"].contains("l2_read"));  // not in the dram set
  EXPECT_EQ(c["kernels"][0]["name"], "flashio::testing_util::calibration_copy_kernel");
  // The two kernels outside the ranges are left out, and a line says so.
  EXPECT_EQ(doc["profile"]["launches"], 4);
  ASSERT_FALSE(doc["profile"]["notes"].empty());
}

// --cache-control all (the default) cleans the L2 before each profiled kernel, as ncu's default
// does: the scale kernel reads the 1 MiB the kernel before it just wrote from DRAM (all) or from L2
// (none). The clean's own launches appear nowhere: the records and the launch count are the program's.
TEST_F(GpuProfile, CacheControlCleansTheL2BeforeEachKernelAndLeavesNoRecordOfIt) {
  for (const std::string mode : {"all", "none"}) {
    nlohmann::json doc;
    ASSERT_EQ(profile("--counters dram --cache-control " + mode, "--warm", doc), 0) << mode;
    EXPECT_EQ(doc["profile"]["cache_control"], mode);
    const auto& records = doc["profile"]["records"];
    ASSERT_EQ(records.size(), 5u) << doc["profile"].dump(1);  // fill, evict, copy, warm, scale
    EXPECT_EQ(doc["profile"]["launches"], 5);
    for (const auto& n : doc["profile"]["notes"])
      EXPECT_EQ(n.get<std::string>().find("not cleaned"), std::string::npos) << n;
    const nlohmann::json* scale = find(records, "(anonymous namespace)::scale_kernel<float>");
    ASSERT_TRUE(scale) << records.dump(1);
    ASSERT_EQ((*scale)["counters"]["status"], "ok") << (*scale)["counters"].dump();
    const double read = (*scale)["counters"]["bytes"]["dram_read"].get<double>(), mib = 1 << 20;
    std::printf("--cache-control %s: the scale kernel reads %.3f MiB from DRAM\n", mode.c_str(), read / mib);
    if (mode == "all")
      EXPECT_GT(read, 0.9 * mib);
    else
      EXPECT_LT(read, 0.5 * mib);
  }
}

TEST_F(GpuProfile, KernelsBeforeAnAbortAreWritten) {
  nlohmann::json doc;
  ASSERT_EQ(profile("", "--abort", doc), 128 + SIGABRT);
  ASSERT_TRUE(doc.is_object());
  // Each launch's counters are decoded when the next starts: all but the last are there.
  const auto& records = doc["profile"]["records"];
  ASSERT_GE(records.size(), 3u) << doc["profile"].dump(1);
  EXPECT_EQ(records[2]["name"], "flashio::testing_util::calibration_copy_kernel");
  EXPECT_EQ(records[2]["counters"]["status"], "ok");
}

// A CUDA graph captured in the global mode (where any synchronisation breaks the capture) and
// launched twice: the program runs to its end, the kernels outside the graph have their records,
// and a note says the graph's kernels have none.
TEST_F(GpuProfile, ACudaGraphIsCapturedAndRunsUnprofiledWithANote) {
  for (const char* cache : {"all", "none"}) {
    nlohmann::json doc;
    ASSERT_EQ(profile(fmt::format("--counters dram --cache-control {}", cache), "--graph", doc), 0) << cache;
    const auto& records = doc["profile"]["records"];
    EXPECT_EQ(records.size(), 4u) << cache << ": " << doc["profile"].dump(1);  // fill, evict, copy, scale
    EXPECT_TRUE(find(records, "flashio::testing_util::calibration_copy_kernel")) << cache;
    std::string notes;
    for (const auto& n : doc["profile"]["notes"]) notes += n.get<std::string>() + "\n";
    EXPECT_NE(notes.find("1 kernel launches were captured into CUDA graphs and 2 graph launches ran"),
              std::string::npos)
        << cache << ": " << notes;
  }
}
