// The float64 reference made on the GPU (bench/cuda/device_reference.h) against the host's
// (bench/core/reference.h) on random problems: every row's O and LSE, dQ, and dK, dV of every
// K/V head, odd sizes, masks, dropout, GQA, Nq != Nk, both element types; and the runner saying
// in each check which one it compared with. Skips without a GPU.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "bench/cuda/device_reference.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

class DeviceReferenceGpu : public GpuTest {};

struct Case {
  int64_t batch, heads, kv_heads, nq, nk, d;
  DType dtype;
  bool causal;
  Padding padding;
  double dropout;
};

Problem problem_of(const Case& c) {
  Problem p;
  p.batch = c.batch;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.seqlen_q = c.nq;
  p.seqlen_k = c.nk;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.padding = c.padding;
  p.dropout = c.dropout;
  p.seed = 1234 + uint64_t(c.nq * 7 + c.nk + c.d);
  return p;
}

// A tensor made by the host's generator, and its copy on the GPU.
struct Tensor {
  std::vector<uint16_t> host;
  DeviceBuffer device;
  Tensor(const Problem& p, InputTensor which, int64_t elements, DeviceAllocator& alloc)
      : host(size_t(elements)), device(alloc, size_t(elements) * 2) {
    fill_normal(host.data(), 0, host.size(), p.dtype, p.seed, which);
    FLASHIO_CUDA_CHECK(cudaMemcpy(device.get(), host.data(), host.size() * 2, cudaMemcpyHostToDevice));
  }
};

// max |got - want| over max |want| (1 where want is all zero); -inf entries must match exactly.
double relative_gap(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double gap = 0, scale = 0;
  for (size_t e = 0; e < std::min(got.size(), want.size()); ++e) {
    if (std::isinf(want[e]) || std::isinf(got[e])) {
      EXPECT_EQ(got[e], want[e]) << "element " << e;
      continue;
    }
    gap = std::max(gap, std::abs(got[e] - want[e]));
    scale = std::max(scale, std::abs(want[e]));
  }
  return gap / (scale > 0 ? scale : 1.0);
}

TEST_F(DeviceReferenceGpu, AgreesWithTheHostsOnRandomProblems) {
  const Case cases[] = {
      {2, 4, 2, 17, 17, 64, DType::F16, false, Padding::None, 0.0},    // GQA 2:1, odd N
      {1, 3, 1, 33, 257, 128, DType::BF16, true, Padding::None, 0.0},  // MQA, Nq < Nk, causal top-left
      {3, 2, 2, 40, 45, 32, DType::F16, false, Padding::Random, 0.0},  // key padding
      {2, 2, 1, 65, 65, 256, DType::F16, true, Padding::None, 0.15},   // dropout, d 256
      {1, 2, 2, 1, 1, 96, DType::BF16, false, Padding::None, 0.1},     // N = 1
      {1, 4, 4, 9, 1013, 64, DType::BF16, false, Padding::Random, 0.0},  // a long key sequence
      {2, 2, 2, 70, 30, 128, DType::F16, true, Padding::Random, 0.2},  // Nq > Nk: rows past Nk see all keys
      {1, 4, 1, 200, 1100, 64, DType::F16, false, Padding::None, 0.1},  // rows and keys in several runs
      {1, 3, 1, 700, 700, 128, DType::BF16, true, Padding::Random, 0.0},  // causal steps skipped, runs
  };
  DeviceAllocator alloc;
  for (const Case& c : cases) {
    const Problem p = problem_of(c);
    SCOPED_TRACE(p.name());
    const Tensor q(p, InputTensor::Q, p.q_elements(), alloc), k(p, InputTensor::K, p.kv_elements(), alloc),
        v(p, InputTensor::V, p.kv_elements(), alloc), d_o(p, InputTensor::dO, p.q_elements(), alloc);
    const std::vector<int32_t> lengths = key_lengths(p);
    DeviceBuffer lengths_on_gpu(alloc, lengths.size() * sizeof(int32_t));
    if (!lengths.empty())
      FLASHIO_CUDA_CHECK(cudaMemcpy(lengths_on_gpu.get(), lengths.data(), lengths_on_gpu.bytes(), cudaMemcpyHostToDevice));
    HostTensors host_t;
    host_t.q = q.host.data();
    host_t.k = k.host.data();
    host_t.v = v.host.data();
    host_t.key_lengths = lengths.empty() ? nullptr : lengths.data();
    const DeviceTensors dev_t{q.device.as<uint16_t>(), k.device.as<uint16_t>(), v.device.as<uint16_t>(),
                              d_o.device.as<uint16_t>(), lengths.empty() ? nullptr : lengths_on_gpu.as<int32_t>()};
    ASSERT_TRUE(device_reference_covers(p));

    const std::vector<RowId> rows = all_rows(p);
    std::vector<double> out, lse, gpu_out, gpu_lse;
    reference_rows(p, host_t, rows, out, lse);
    device_reference_rows(p, dev_t, rows, gpu_out, gpu_lse, alloc, nullptr);
    EXPECT_LE(relative_gap(gpu_out, out), 1e-12) << "O";
    EXPECT_LE(relative_gap(gpu_lse, lse), 1e-12) << "LSE";

    std::vector<double> dq, gpu_dq;
    reference_dq_rows(p, host_t, d_o.host.data(), rows, dq);
    device_reference_dq_rows(p, dev_t, rows, gpu_dq, alloc, nullptr);
    EXPECT_LE(relative_gap(gpu_dq, dq), 1e-12) << "dQ";

    std::vector<std::pair<int64_t, int64_t>> heads;  // every K/V head, last first: one call, any order
    for (int64_t b = p.batch; b-- > 0;)
      for (int64_t hk = p.kvh(); hk-- > 0;) heads.push_back({b, hk});
    std::vector<double> gpu_dk, gpu_dv;
    device_reference_dkdv_heads(p, dev_t, heads, gpu_dk, gpu_dv, alloc, nullptr);
    const size_t per_head = size_t(p.nk() * p.head_dim);
    ASSERT_EQ(gpu_dk.size(), heads.size() * per_head);
    for (size_t n = 0; n < heads.size(); ++n) {
      const auto [b, hk] = heads[n];
      std::vector<double> dk, dv;
      reference_dkdv_head(p, host_t, d_o.host.data(), b, hk, dk, dv);
      const auto slice = [&](const std::vector<double>& all) {
        return std::vector<double>(all.begin() + long(n * per_head), all.begin() + long((n + 1) * per_head));
      };
      EXPECT_LE(relative_gap(slice(gpu_dk), dk), 1e-12) << "dK of head " << b << "," << hk;
      EXPECT_LE(relative_gap(slice(gpu_dv), dv), 1e-12) << "dV of head " << b << "," << hk;
    }
  }
}

// A sampled subset of rows in any order gives each row what the whole set gives it.
TEST_F(DeviceReferenceGpu, ARowsResultDoesNotDependOnTheOtherRowsAsked) {
  const Problem p = problem_of({2, 4, 2, 50, 1100, 64, DType::F16, false, Padding::Random, 0.0});  // key runs
  DeviceAllocator alloc;
  const Tensor q(p, InputTensor::Q, p.q_elements(), alloc), k(p, InputTensor::K, p.kv_elements(), alloc),
      v(p, InputTensor::V, p.kv_elements(), alloc), d_o(p, InputTensor::dO, p.q_elements(), alloc);
  const DeviceTensors t{q.device.as<uint16_t>(), k.device.as<uint16_t>(), v.device.as<uint16_t>(),
                        d_o.device.as<uint16_t>(), nullptr};
  const std::vector<RowId> rows = all_rows(p);
  std::vector<double> out, lse, dq;
  device_reference_rows(p, t, rows, out, lse, alloc, nullptr);
  device_reference_dq_rows(p, t, rows, dq, alloc, nullptr);
  std::vector<RowId> some;
  std::vector<size_t> at;
  for (size_t r = rows.size(); r-- > 0;)
    if (r % 7 == 3) {
      some.push_back(rows[r]);
      at.push_back(r);
    }
  std::vector<double> some_out, some_lse, some_dq;
  device_reference_rows(p, t, some, some_out, some_lse, alloc, nullptr);
  device_reference_dq_rows(p, t, some, some_dq, alloc, nullptr);
  const size_t d = size_t(p.head_dim);
  for (size_t m = 0; m < some.size(); ++m) {
    EXPECT_EQ(some_lse[m], lse[at[m]]);
    for (size_t c = 0; c < d; ++c) {
      EXPECT_EQ(some_out[m * d + c], out[at[m] * d + c]);
      EXPECT_EQ(some_dq[m * d + c], dq[at[m] * d + c]);
    }
  }
}

Point small_point(const std::string& method, Pass pass, const std::string& pattern = "") {  // N 200
  Point pt;
  pt.method = method;
  pt.pass = pass;
  pt.problem.batch = 2;
  pt.problem.heads = 4;
  pt.problem.seqlen_q = 200;
  pt.problem.head_dim = 64;
  pt.problem.causal = true;
  pt.problem.pattern = pattern;
  return pt;
}

TEST_F(DeviceReferenceGpu, EachCheckSaysWhereItsReferenceWasMade) {
  for (bool on_gpu : {true, false}) {
    RunOptions opt;
    opt.reps = 2;
    opt.warmup = 1;
    opt.reference_on_gpu = on_gpu;
    Runner runner(*gpu(), opt);
    for (Pass pass : {Pass::Fwd, Pass::FwdBwd}) {
      const Record r = runner.run(small_point("flash2", pass));
      ASSERT_EQ(r.status, Status::Ok) << r.reason;
      EXPECT_TRUE(r.check->passed);
      EXPECT_EQ(r.check->reference, on_gpu ? "gpu" : "host");
    }
    // A block-sparse problem: the host's, whatever was asked.
    const Record sparse = runner.run(small_point("blocksparse_flash", Pass::Fwd, "butterfly"));
    ASSERT_EQ(sparse.status, Status::Ok) << sparse.reason;
    EXPECT_EQ(sparse.check->reference, "host");
  }
}

}  // namespace
