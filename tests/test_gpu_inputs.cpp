// Inputs made on the GPU: the same bits as the host's generator, and the runner's sampled
// check (host copies of the checked heads only, compared with the GPU's) with and without the
// next problem prepared ahead. Skips without a GPU.
#include <vector>

#include "bench/cuda/device_inputs.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

class InputsGpu : public GpuTest {};

TEST_F(InputsGpu, TheGpuMakesTheHostsBits) {
  DeviceAllocator alloc;
  // 2^25 + 777 words: every chunk boundary of a 32M-element tensor (the size of the FA-2
  // setting's Q at 16k tokens, model dim 2048) and a ragged end.
  const size_t n = (size_t(1) << 25) + 777;
  DeviceBuffer buf(alloc, n * 2);
  std::vector<uint16_t> host(n), got(n);
  for (DType dtype : {DType::F16, DType::BF16})
    for (InputTensor tensor : {InputTensor::Q, InputTensor::K, InputTensor::V, InputTensor::dO}) {
      const uint64_t seed = 42 + uint64_t(tensor);
      generate_inputs_on_device(buf.as<uint16_t>(), n, dtype, seed, tensor, nullptr);
      FLASHIO_CUDA_CHECK(cudaMemcpy(got.data(), buf.get(), n * 2, cudaMemcpyDeviceToHost));
      fill_normal(host.data(), 0, n, dtype, seed, tensor);
      size_t differ = 0;
      for (size_t i = 0; i < n; ++i) differ += got[i] != host[i];
      EXPECT_EQ(differ, 0u) << to_string(dtype) << " tensor " << uint64_t(tensor);
    }
}

// A problem too large to check every row: the host makes only the sampled heads' inputs.
Point sampled_point(const std::string& method, Pass pass, bool causal) {
  Point pt;
  pt.method = method;
  pt.pass = pass;
  pt.problem.batch = 3;
  pt.problem.heads = 8;
  pt.problem.kv_heads = 2;
  pt.problem.seqlen_q = 1013;
  pt.problem.head_dim = 64;
  pt.problem.causal = causal;
  return pt;
}

TEST_F(InputsGpu, SampledChecksPassWithAndWithoutPrefetch) {
  RunOptions opt;
  opt.reps = 2;
  opt.warmup = 1;
  opt.check_budget_macs = 2.5e9;  // rows sampled from four heads (3.2e9 for all), dK/dV of two K/V heads
  Runner runner(*gpu(), opt);
  for (bool causal : {false, true}) {
    const std::vector<Point> group = {sampled_point("flash2", Pass::Fwd, causal),
                                      sampled_point("flash2", Pass::FwdBwd, causal),
                                      sampled_point("standard", Pass::FwdBwd, causal)};
    if (causal) runner.prefetch(group);  // the second problem is prepared ahead
    for (const Point& pt : group) {
      const Record r = runner.run(pt);
      ASSERT_EQ(r.status, Status::Ok) << pt.name() << ": " << r.reason;
      EXPECT_EQ(r.check->scope, "sampled rows") << pt.name();
      EXPECT_LT(r.check->rows_checked, r.check->rows_total) << pt.name();
      if (pt.pass != Pass::Fwd) EXPECT_NE(r.check->grad_scope.find("2 of 6 K/V heads"), std::string::npos)
          << r.check->grad_scope;
    }
  }
}

}  // namespace

namespace {

// The allocator keeps a released block for the next request of its size (device_memory.h): the
// same address comes back, the byte counts are of the blocks in use, trim() frees what is kept,
// and a request the GPU cannot meet frees the kept blocks before it fails.
class DeviceMemoryGpu : public GpuTest {};

TEST_F(DeviceMemoryGpu, AReleasedBlockServesTheNextRequestOfItsSize) {
  DeviceAllocator alloc;
  const size_t mb = size_t(1) << 20;
  void* a = alloc.allocate(3 * mb);
  alloc.release(a, 3 * mb);
  EXPECT_EQ(alloc.current_bytes(), 0);
  EXPECT_EQ(alloc.kept_bytes(), 3 * mb);
  void* other = alloc.allocate(5 * mb);  // another size: a new block
  EXPECT_NE(other, a);
  void* again = alloc.allocate(3 * mb);
  EXPECT_EQ(again, a);
  EXPECT_EQ(alloc.kept_bytes(), 0u);
  EXPECT_EQ(alloc.current_bytes(), int64_t(8 * mb));
  EXPECT_EQ(alloc.peak_bytes(), int64_t(8 * mb));
  alloc.release(again, 3 * mb);
  alloc.release(other, 5 * mb);
  EXPECT_EQ(alloc.kept_bytes(), 8 * mb);
  alloc.trim();
  EXPECT_EQ(alloc.kept_bytes(), 0u);
  EXPECT_EQ(alloc.current_bytes(), 0);
}

// What a runner keeps from one problem for the next: the smaller blocks (inputs, outputs), the
// largest freed first.
TEST_F(DeviceMemoryGpu, TrimToFreesTheLargestKeptBlocksFirst) {
  DeviceAllocator alloc;
  const size_t mb = size_t(1) << 20;
  void* small = alloc.allocate(1 * mb);
  void* middle = alloc.allocate(2 * mb);
  void* large = alloc.allocate(4 * mb);
  alloc.release(small, 1 * mb);
  alloc.release(middle, 2 * mb);
  alloc.release(large, 4 * mb);
  alloc.trim_to(6 * mb);  // 7 MiB kept: the 4 MiB block goes
  EXPECT_EQ(alloc.kept_bytes(), 3 * mb);
  EXPECT_EQ(alloc.allocate(2 * mb), middle);
  EXPECT_EQ(alloc.allocate(1 * mb), small);
  alloc.release(small, 1 * mb);
  alloc.release(middle, 2 * mb);
  alloc.trim_to(3 * mb);  // nothing to free
  EXPECT_EQ(alloc.kept_bytes(), 3 * mb);
  alloc.trim_to(0);
  EXPECT_EQ(alloc.kept_bytes(), 0u);
}

TEST_F(DeviceMemoryGpu, ARequestTooLargeFreesTheKeptBlocksAndFails) {
  DeviceAllocator alloc;
  size_t free_bytes = 0, total = 0;
  FLASHIO_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const size_t kept = size_t(64) << 20;
  alloc.release(alloc.allocate(kept), kept);
  ASSERT_EQ(alloc.kept_bytes(), kept);
  try {
    alloc.allocate(2 * total);
    FAIL() << "allocated twice the GPU's memory";
  } catch (const CudaError& e) {
    EXPECT_TRUE(e.out_of_memory()) << e.what();
  }
  EXPECT_EQ(alloc.kept_bytes(), 0u);  // freed before the second try
  EXPECT_EQ(alloc.current_bytes(), 0);
}

}  // namespace
