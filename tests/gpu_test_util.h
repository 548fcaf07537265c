// Shared by the GPU tests: the GPU (or none), one runner that checks every row, and the
// assertion that a point ran, passed its check against the float64 reference and was timed.
#pragma once
#include <optional>

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

inline Record expect_ok(const Point& pt) {
  const Record r = full_check_runner().run(pt);
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
