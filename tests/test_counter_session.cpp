// The CUPTI profiler's unavailable path, which needs no GPU: no library, counters off, a capture
// without CUPTI. Part of the CPU tests in a build with CUDA (the profiler is CUDA code).
#include <gtest/gtest.h>

#include "bench/core/counters.h"
#include "bench/core/record.h"
#include "bench/core/schema.h"
#include "bench/measure/cupti_profiler.h"
#include "tests/schema_test_util.h"

using namespace flashio;

TEST(CountersUnavailable, MissingLibrarySaysWhyAndRecordsValidate) {
  DeviceInfo dev;
  dev.cc_major = 9;
  std::string why;
  auto session = CounterSession::open(dev, CounterSet::Full, why, "libflashio-no-such-cupti.so");
  EXPECT_EQ(session, nullptr);
  EXPECT_NE(why.find("CUPTI library not loadable"), std::string::npos) << why;
  EXPECT_NE(why.find("libflashio-no-such-cupti.so"), std::string::npos) << why;

  Record r;
  r.method = "flash2";
  r.counters = counters_unavailable(why);
  const nlohmann::json j = to_json(r);
  EXPECT_TRUE(validate_schema(record_schema(), j).empty());
  EXPECT_EQ(record_from_json(j).counters["status"], "unavailable");
}

TEST(CountersUnavailable, OffIsNotCollected) {
  std::string why;
  EXPECT_EQ(CounterSession::open(DeviceInfo{}, CounterSet::Off, why), nullptr);
  EXPECT_NE(why.find("off"), std::string::npos);
}

// Without a loadable CUPTI the capture still runs the launch, once, and reports no kernels.
TEST(CountersUnavailable, CaptureWithoutCuptiRunsTheLaunchOnceAndReportsNothing) {
  int runs = 0;
  const nlohmann::json k = capture_kernels([&] { ++runs; }, nullptr, "libflashio-no-such-cupti.so");
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(k.is_array());
  EXPECT_TRUE(k.empty());
}
