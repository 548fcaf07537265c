// The flashio command line without a GPU: help, list, dry runs, and bad input (one line,
// exit code 2, no output file).
#include <filesystem>

#include <gtest/gtest.h>

#include "bench/cli/commands.h"
#include "bench/device_info.h"

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

class BadInput : public testing::TestWithParam<std::vector<std::string>> {};

TEST_P(BadInput, OneLineExitTwoNoFile) {
  const std::string out = ::testing::TempDir() + "flashio_bad_input.json";
  std::filesystem::remove(out);
  std::vector<std::string> args = GetParam();
  args.push_back("--out");
  args.push_back(out);
  std::string err;
  EXPECT_EQ(run_cli(args, &err), 2);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(err.rfind("flashio: error:", 0), 0u) << err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

INSTANTIATE_TEST_SUITE_P(
    Cli, BadInput,
    testing::Values(std::vector<std::string>{"run", "--head-dim", "0"},
                    std::vector<std::string>{"run", "--head-dim", "abc"},
                    std::vector<std::string>{"run", "--seqlen", "-5"},
                    std::vector<std::string>{"run", "--seqlen", "12x"},
                    std::vector<std::string>{"run", "--batch", "0"},
                    std::vector<std::string>{"run", "--heads", "6", "--kv-heads", "4"},
                    std::vector<std::string>{"run", "--dtype", "fp8"},
                    std::vector<std::string>{"run", "--method", "flash9"},
                    std::vector<std::string>{"run", "--pass", "sideways"},
                    std::vector<std::string>{"run", "--causal", "maybe"},
                    std::vector<std::string>{"run", "--dropout", "1.0"},
                    std::vector<std::string>{"run", "--dropout", "-0.1"},
                    std::vector<std::string>{"run", "--padding", "left"},
                    std::vector<std::string>{"run", "--tokens", "1000", "--seqlen", "512"},
                    std::vector<std::string>{"run", "--model-dim", "100", "--head-dim", "64"},
                    std::vector<std::string>{"run", "--reps", "0"},
                    std::vector<std::string>{"run", "--block-r", "-1"},
                    std::vector<std::string>{"run", "--seqlen", ""},
                    std::vector<std::string>{"run", "--no-such-option"},
                    std::vector<std::string>{"frobnicate"}));

TEST(Cli, UnwritableOutputIsBadInput) {
  std::string err;
  EXPECT_EQ(run_cli({"run", "--seqlen", "128", "--out", "/nonexistent-dir/x.json"}, &err), 2);
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
}
