// The counter pass on the GPU: calibration against kernels whose traffic is known, kernel
// names and per-kernel breakdown, records of real methods carrying both traffic levels,
// the unavailable path, and the memory footprint against cudaMemGetInfo. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "bench/cuda/cuda_check.h"
#include "bench/measure/cupti_profiler.h"
#include "bench/cuda/device_memory.h"
#include "bench/core/method.h"
#include "bench/measure/timing.h"
#include "tests/gpu_calibration_kernels.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

class GpuCounters : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    std::string why;
    session_ = CounterSession::open(*gpu(), CounterSet::Full, why);
    ASSERT_TRUE(session_) << "counters unavailable on this GPU machine: " << why;
    std::printf("%s\n", session_->describe().c_str());
    FLASHIO_CUDA_CHECK(cudaStreamCreate(&stream_));
    flusher_ = std::make_unique<L2Flusher>(alloc_, gpu()->l2_bytes);
  }
  void TearDown() override {
    flusher_.reset();
    if (stream_) cudaStreamDestroy(stream_);
  }
  nlohmann::json profile(const std::function<void()>& launch) {
    nlohmann::json c = session_->profile([&] { flusher_->flush(stream_); }, launch, stream_);
    EXPECT_EQ(c["status"], "ok") << c.dump();
    return c;
  }
  static double bytes(const nlohmann::json& c, const char* key) { return c["bytes"].value(key, -1.0); }

  std::unique_ptr<CounterSession> session_;
  DeviceAllocator alloc_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<L2Flusher> flusher_;
};

}  // namespace

// A copy much larger than L2 reads and writes its size in DRAM (±2 %). Dirty lines still
// in L2 when the kernel ends are written after it, so the buffer is ≥ 50× the L2.
TEST_F(GpuCounters, CopyCalibratesDramReadAndWrite) {
  const size_t size = size_t(std::max<int64_t>(50 * gpu()->l2_bytes, int64_t(1) << 30)) & ~size_t(0xFFFF);
  DeviceBuffer src(alloc_, size), dst(alloc_, size);
  FLASHIO_CUDA_CHECK(cudaMemset(src.get(), 1, size));
  FLASHIO_CUDA_CHECK(cudaMemset(dst.get(), 0, size));
  const auto c = profile([&] { launch_calibration_copy(src.get(), dst.get(), size, stream_); });
  const double expect = double(size);
  EXPECT_NEAR(bytes(c, "dram_read") / expect, 1.0, 0.02) << c.dump();
  EXPECT_NEAR(bytes(c, "dram_write") / expect, 1.0, 0.02) << c.dump();
  EXPECT_NEAR(bytes(c, "l2_read") / expect, 1.0, 0.02) << c.dump();
  EXPECT_NEAR(bytes(c, "l2_write") / expect, 1.0, 0.02) << c.dump();
  std::printf("copy %zu B: dram read %.4f, write %.4f, SM<-L2 %.4f, SM->L2 %.4f of the size\n", size,
              bytes(c, "dram_read") / expect, bytes(c, "dram_write") / expect, bytes(c, "l2_read") / expect,
              bytes(c, "l2_write") / expect);
}

// Re-reading a small buffer k times: the SMs read k × buffer from L2, DRAM serves it once.
TEST_F(GpuCounters, RereadShowsL2TrafficAndOneDramRead) {
  const size_t size = 4 << 20;
  const int times = 32;
  DeviceBuffer buf(alloc_, size), sink(alloc_, sizeof(unsigned));
  FLASHIO_CUDA_CHECK(cudaMemset(buf.get(), 3, size));
  const auto c = profile([&] { launch_calibration_reread(buf.get(), size, times, sink.as<unsigned>(), stream_); });
  EXPECT_NEAR(bytes(c, "l2_read") / (double(times) * double(size)), 1.0, 0.02) << c.dump();
  EXPECT_GT(bytes(c, "dram_read"), 0.9 * double(size)) << c.dump();
  EXPECT_LT(bytes(c, "dram_read"), 1.5 * double(size)) << c.dump();
  std::printf("re-read %d x %zu B: SM<-L2 %.4f of k x buffer, DRAM read %.3f buffers\n", times, size,
              bytes(c, "l2_read") / (double(times) * double(size)), bytes(c, "dram_read") / double(size));
}

// Several kernels in one call: totals are the sum, each kernel is named and counted.
TEST_F(GpuCounters, PerKernelBreakdownNamesEachKernel) {
  const size_t size = 64 << 20;
  DeviceBuffer a(alloc_, size), b(alloc_, size), sink(alloc_, sizeof(unsigned));
  FLASHIO_CUDA_CHECK(cudaMemset(a.get(), 1, size));
  const auto c = profile([&] {
    launch_calibration_copy(a.get(), b.get(), size, stream_);
    launch_calibration_reread(b.get(), size, 2, sink.as<unsigned>(), stream_);
    launch_calibration_copy(b.get(), a.get(), size, stream_);
  });
  ASSERT_EQ(c["kernels"].size(), 2u) << c.dump();
  EXPECT_NE(c["kernels"][0]["name"].get<std::string>().find("calibration_copy_kernel"), std::string::npos) << c.dump();
  EXPECT_EQ(c["kernels"][0]["launches"], 2);
  EXPECT_NE(c["kernels"][1]["name"].get<std::string>().find("calibration_reread_kernel"), std::string::npos);
  double sum = 0;
  for (const auto& k : c["kernels"]) sum += k["bytes"]["l2_read"].get<double>();
  EXPECT_NEAR(sum, bytes(c, "l2_read"), 64.0);
  EXPECT_NEAR(bytes(c, "l2_read") / (4.0 * double(size)), 1.0, 0.02) << c.dump();
}

// Real methods through the runner: both levels, every kernel named, FA-2's backward
// accumulating dQ as L2 reductions.
TEST_F(GpuCounters, RunnerRecordsCarryBothLevels) {
  RunOptions opt;
  opt.reps = 2;
  opt.warmup = 1;
  opt.counters = CounterSet::Full;
  Runner runner(*gpu(), opt);
  Problem p;
  p.batch = 2;
  p.heads = 4;
  p.seqlen_q = 1024;
  p.head_dim = 64;
  for (const char* m : {"standard", "flash2", "flash1"}) {
    for (Pass pass : {Pass::Fwd, Pass::FwdBwd}) {
      const Record r = runner.run({m, pass, p});
      ASSERT_EQ(r.status, Status::Ok) << r.name() << ": " << r.reason;
      const auto& c = r.counters;
      ASSERT_EQ(c["status"], "ok") << r.name() << ": " << c.dump();
      EXPECT_EQ(c["passes"], 1) << "the default set must fit one replay pass";
      for (const char* key : {"dram_read", "l2_read", "l2_write"}) EXPECT_GT(bytes(c, key), 0) << r.name() << " " << key;
      // Q, K, V come from DRAM once (L2 was cleaned; fused methods: 64 KiB of slack). Writes reach DRAM only as
      // lines are evicted: the fused methods' outputs (1 MiB here) stay in the 50-60 MiB L2, so
      // their count may be 0; standard's 2 x 8 MiB of S and P (fp16) go out in part.
      const double qkv = 3.0 * double(p.q_elements()) * 2;
      EXPECT_GE(bytes(c, "dram_read"), qkv) << r.name();
      if (std::string(m) == "standard")
        EXPECT_GT(bytes(c, "dram_write"), 0) << r.name();
      else  // and dO for the backward; nothing else (O and LSE are still in L2)
        EXPECT_LE(bytes(c, "dram_read"), qkv * (pass == Pass::Fwd ? 1.0 : 4.0 / 3.0) + 65536) << r.name();
      // Q, K, V are read at least once from L2 by the SMs.
      EXPECT_GE(bytes(c, "l2_read"), 3.0 * double(p.q_elements()) * 2) << r.name();
      EXPECT_GE(c["kernels"].size(), 1u);
      if (std::string(m) == "flash2" && pass == Pass::FwdBwd) EXPECT_GT(bytes(c, "l2_red"), 0) << c.dump();
      std::printf("%s: %s\n", r.name().c_str(), c["bytes"].dump().c_str());
    }
  }
}

// No CUPTI: timing still runs, each record says why there are no counters.
TEST_F(GpuCounters, MissingLibraryGivesUnavailableRecords) {
  RunOptions opt;
  opt.reps = 2;
  opt.warmup = 0;
  opt.counters = CounterSet::Full;
  opt.cupti_library = "libflashio-no-such-cupti.so";
  Runner runner(*gpu(), opt);
  Problem p;
  p.heads = 2;
  p.seqlen_q = 256;
  const Record r = runner.run({"flash2", Pass::Fwd, p});
  ASSERT_EQ(r.status, Status::Ok) << r.reason;
  EXPECT_TRUE(r.time.has_value());
  EXPECT_EQ(r.counters["status"], "unavailable");
  EXPECT_NE(r.counters["reason"].get<std::string>().find("libflashio-no-such-cupti.so"), std::string::npos)
      << r.counters.dump();
}

// The allocator's bytes against the driver's: what the plan holds while alive shows in
// cudaMemGetInfo, up to the driver's page granularity. cuBLAS's handle is the process's
// (baselines/common/cublas_handle.h): made by an earlier plan, it is not new memory to the driver,
// and the standard plan counts its bytes, measured when it was made, apart (external_bytes).
TEST_F(GpuCounters, MemoryFootprintMatchesCudaMemGetInfo) {
  Problem p;
  p.batch = 4;
  p.heads = 8;
  p.seqlen_q = 4096;
  p.head_dim = 64;
  for (const std::string m : {"standard", "flash2", "flash1"}) {
    const Method* method = builtin_registry().find(m);
    DeviceAllocator alloc;
    method->plan(p, Pass::FwdBwd, *gpu(), alloc).reset();  // the handle made (standard), kept for the process
    alloc.trim();
    FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
    size_t free_before = 0, free_after = 0, total = 0;
    FLASHIO_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
    int64_t held = 0, library = 0;
    {
      auto plan = method->plan(p, Pass::FwdBwd, *gpu(), alloc);
      FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
      FLASHIO_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
      held = alloc.current_bytes();
      library = alloc.external_bytes();
    }
    const double driver = double(free_before) - double(free_after);
    const double slack = 8.0 * (1 << 20);  // the driver's 2 MiB pages, a few buffers
    EXPECT_NEAR(driver, double(held), slack) << m;
    if (m == "standard") {
      EXPECT_GT(library, 0) << "the handle's own device memory is counted";
    } else {
      EXPECT_EQ(library, 0) << m;
    }
    std::printf("%s fwdbwd workspace: allocator %.1f MiB, cudaMemGetInfo %.1f MiB, cuBLAS's handle %.1f MiB\n", m.c_str(),
                double(held) / (1 << 20), driver / (1 << 20), double(library) / (1 << 20));
  }
}
