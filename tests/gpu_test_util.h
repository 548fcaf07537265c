// Shared by the GPU tests: the GPU (or none), one runner that checks every row, and the
// assertion that a point ran, passed its check against the float64 reference and was timed.
#pragma once
#include <cstdio>
#include <optional>
#include <string>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_query.h"
#include "bench/cuda/device_memory.h"
#include "bench/core/inputs.h"
#include "bench/core/method.h"
#include "bench/measure/runner.h"
#include "kernels/flash2/flash2_params.h"

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
  return m == "flash1" || m == "flash2" || m == "blocksparse_flash" || m == "flash_decode";
}

// Whether flash2's wgmma kernels run on this GPU in this build (a Hopper GPU, built with 90).
inline bool wgmma_here() { return gpu() && gpu()->compute_capability() == 90 && kernels::flash2_wgmma_compiled(); }

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

// `bytes` of host memory in a new device buffer of `alloc`.
inline DeviceBuffer upload_bytes(DeviceAllocator& alloc, const void* data, size_t bytes) {
  DeviceBuffer b(alloc, bytes);
  FLASHIO_CUDA_CHECK(cudaMemcpy(b.get(), data, bytes, cudaMemcpyHostToDevice));
  return b;
}

// A device buffer's bytes on the host (after the work that wrote it: the copy synchronises).
inline std::vector<uint8_t> download_bytes(const DeviceBuffer& b) {
  std::vector<uint8_t> h(b.bytes());
  FLASHIO_CUDA_CHECK(cudaMemcpy(h.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost));
  return h;
}

// O, LSE, dQ, dK, dV of one fwd+bwd through `method`'s plan on the inputs `in` (key lengths
// uploaded when the problem is padded), as raw bytes: for bitwise comparisons between runs
// and methods.
struct FwdBwdBytes {
  std::vector<uint8_t> o, lse, dq, dk, dv;
};

inline FwdBwdBytes run_fwdbwd_bytes(const std::string& method, const Problem& p, const HostInputs& in) {
  DeviceAllocator alloc;
  auto upload = [&](const void* data, size_t bytes) { return upload_bytes(alloc, data, bytes); };
  DeviceBuffer q = upload(in.q.data(), in.q.size() * 2), k = upload(in.k.data(), in.k.size() * 2),
               v = upload(in.v.data(), in.v.size() * 2), d_o = upload(in.d_o.data(), in.d_o.size() * 2);
  DeviceBuffer lengths;
  if (p.padding != Padding::None) lengths = upload(in.key_lengths.data(), in.key_lengths.size() * 4);
  DeviceBuffer o(alloc, in.q.size() * 2), lse(alloc, size_t(p.batch * p.heads * p.seqlen_q) * 4),
      dq(alloc, in.q.size() * 2), dk(alloc, in.k.size() * 2), dv(alloc, in.v.size() * 2);
  auto plan = builtin_registry().find(method)->plan(p, Pass::FwdBwd, *gpu(), alloc);
  AttentionBuffers buf;
  buf.q = q.get();
  buf.k = k.get();
  buf.v = v.get();
  buf.o = o.get();
  buf.lse = lse.as<float>();
  buf.key_lengths = lengths.as<int>();
  buf.d_o = d_o.get();
  buf.dq = dq.get();
  buf.dk = dk.get();
  buf.dv = dv.get();
  plan->forward(buf, nullptr);
  plan->backward(buf, nullptr);
  FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
  return {download_bytes(o), download_bytes(lse), download_bytes(dq), download_bytes(dk), download_bytes(dv)};
}

}  // namespace flashio::testing_util
