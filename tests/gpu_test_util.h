// Shared by the GPU tests: the GPU (or none), one runner that checks every row, and the
// assertion that a point ran, passed its check against the float64 reference and was timed.
#pragma once
#include <cstdio>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "bench/device_info.h"
#include "bench/runner.h"

namespace flashio::testing_util {

inline std::optional<DeviceInfo> gpu() {
  static const std::optional<DeviceInfo> dev = [] { return query_device(0, nullptr); }();
  return dev;
}

inline Runner& full_check_runner() {
  RunOptions opt;
  opt.reps = 2;
  opt.warmup = 1;
  opt.check_budget_macs = 2e11;  // every row, and dK/dV of every K/V head, at test sizes
  static Runner r(*gpu(), opt);
  return r;
}

// False when this binary's fused kernels are compute_75 code (a 75-virtual PTX build, JIT-compiled
// on a newer GPU; scripts/ptx_paths.sh): their bf16 mma traps, and the methods skip bf16 points.
inline bool fused_bf16_available() { return !gpu() || gpu()->kernel_ptx_arch == 0 || gpu()->kernel_ptx_arch >= 80; }

inline bool is_fused_method(const std::string& m) {
  return m == "flash1" || m == "flash2" || m == "blocksparse_flash";
}

inline std::string no_bf16_message() {
  return "bf16 skipped: the fused kernels are compute_" + std::to_string(gpu()->kernel_ptx_arch) + " code";
}

// In a test body: skips the test (with a message) for bf16 where the fused kernels cannot run it.
#define FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(dtype)                                        \
  do {                                                                                         \
    if ((dtype) == ::flashio::DType::BF16 && !::flashio::testing_util::fused_bf16_available()) \
      GTEST_SKIP() << ::flashio::testing_util::no_bf16_message();                              \
  } while (0)

inline Record expect_ok(const Point& pt) {
  const Record r = full_check_runner().run(pt);
  if (pt.problem.dtype == DType::BF16 && is_fused_method(pt.method) && !fused_bf16_available()) {
    // The point must be refused in words, not trap: a skipped record is this build's right answer.
    EXPECT_EQ(r.status, Status::Skipped) << pt.name();
    EXPECT_NE(r.reason.find("compute_"), std::string::npos) << pt.name() << ": " << r.reason;
    std::printf("[ SKIPPED  ] %s: %s\n", pt.name().c_str(), no_bf16_message().c_str());
    return r;
  }
  EXPECT_EQ(r.status, Status::Ok) << pt.name() << ": " << r.reason;
  if (r.status == Status::Ok) {
    EXPECT_TRUE(r.check && r.check->passed) << pt.name();
    EXPECT_EQ(r.check->scope, "all rows") << pt.name();
    EXPECT_GT(r.time->median_s, 0.0) << pt.name();
  }
  return r;
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu()) GTEST_SKIP() << "no GPU: GPU tests skipped";
  }
};

// The same for parameterized GPU tests.
template <typename Param>
class GpuParamTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (!gpu()) GTEST_SKIP() << "no GPU: GPU tests skipped";
  }
};

}  // namespace flashio::testing_util
