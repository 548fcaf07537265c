// Packed variable lengths on the GPU (issue 20): flash2's forward on packed sequences checked
// against the float64 reference on every real row through the runner (odd length sets with a
// sequence of length 0, lengths 1, 17, 1013; fp16 and bf16; causal; GQA; d 32-256; both
// instruction paths on Hopper); the packed outputs equal the padded twin's rows bit for bit
// (same tile, same visiting order); nothing is written past the packed O and L. Skips without a
// GPU. Filter: --gtest_filter='*Varlen*'.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "bench/core/varlen.h"
#include "bench/cuda/device_inputs.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

struct VarlenCase {
  std::vector<int32_t> lengths;
  int64_t heads, kv_heads, d;
  DType dtype;
  bool causal;
  std::string mma;  // "" = the method's choice (wgmma on Hopper for d 64, 128)
};

Problem problem_of(const VarlenCase& c) {
  Problem p;
  p.seqlens = "file:gpu-test-lengths";
  p.seq_lengths = c.lengths;
  p.batch = int64_t(c.lengths.size());
  p.seqlen_q = *std::max_element(c.lengths.begin(), c.lengths.end());
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.mma = c.mma;
  p.seed = 0x7a41e2 + uint64_t(std::accumulate(c.lengths.begin(), c.lengths.end(), int64_t(0)));
  return p;
}

std::string case_name(const testing::TestParamInfo<VarlenCase>& info) {
  const VarlenCase& c = info.param;
  std::string lengths;
  for (int32_t l : c.lengths) lengths += fmt::format("_{}", l);
  return fmt::format("L{}_h{}_kvh{}_d{}_{}{}{}", lengths, c.heads, c.kv_heads, c.d, to_string(c.dtype),
                     c.causal ? "_causal" : "", c.mma.empty() ? "" : "_" + std::string(c.mma == "wgmma" ? "wgmma" : "mmasync"));
}

const std::vector<int32_t> kOdd = {0, 1, 17, 1013};
const std::vector<int32_t> kOddShuffled = {1013, 17, 0, 1, 300, 0};

std::vector<VarlenCase> all_cases() {
  std::vector<VarlenCase> out;
  for (const auto& lengths : {kOdd, kOddShuffled})
    for (bool causal : {false, true})
      for (DType t : {DType::F16, DType::BF16})
        for (const char* mma : {"", "mma.sync"}) out.push_back({lengths, 4, 4, 128, t, causal, mma});
  for (int64_t d : {32, 64, 96, 256})
    for (bool causal : {false, true}) out.push_back({kOddShuffled, 4, 4, d, DType::F16, causal, ""});
  out.push_back({kOdd, 8, 2, 64, DType::BF16, true, ""});           // GQA 8:2
  out.push_back({kOdd, 8, 1, 128, DType::F16, false, "mma.sync"});  // MQA
  out.push_back({{1}, 2, 2, 64, DType::F16, false, ""});            // one token
  out.push_back({{4097, 129, 128, 127, 2}, 2, 2, 64, DType::F16, true, ""});  // tile edges
  return out;
}

}  // namespace

class GpuVarlen : public GpuParamTest<VarlenCase> {};

TEST_P(GpuVarlen, MatchesReferenceOnEveryRealRow) {
  const VarlenCase& c = GetParam();
  FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(c.dtype);
  if (c.mma == "wgmma" && !wgmma_here()) GTEST_SKIP() << "no wgmma kernels here";
  const Problem p = problem_of(c);
  ASSERT_FALSE(p.invalid_reason()) << *p.invalid_reason();
  const Record r = expect_ok({"flash2", Pass::Fwd, p});
  if (r.status != Status::Ok) return;
  EXPECT_EQ(r.check->rows_checked, p.heads * p.total_tokens());
  EXPECT_TRUE(r.check->lse_checked);
  ASSERT_TRUE(r.tiles.has_value());
  if (c.mma == "mma.sync") EXPECT_EQ(r.tiles->mma, "mma.sync");
  // The padded twin (the key-padding path on the same values) also passes its check.
  Problem padded = p;
  padded.varlen_padded = true;
  expect_ok({"flash2", Pass::Fwd, padded});
}

INSTANTIATE_TEST_SUITE_P(Forward, GpuVarlen, testing::ValuesIn(all_cases()), case_name);

namespace {

struct Outputs {
  std::vector<uint16_t> o;
  std::vector<float> lse;
};

// flash2's forward on p's inputs made on the GPU by the suite's generators (packed or padded), O
// and L poisoned (0xFF: NaN) before and copied back whole; `guard` elements past the end of each
// buffer are allocated, poisoned and returned as well.
Outputs run_forward(const Problem& p, int64_t guard) {
  DeviceAllocator alloc;
  const auto cu64 = cu_seqlens(p);
  const std::vector<int32_t> cu(cu64.begin(), cu64.end());
  DeviceBuffer cu_dev(alloc, cu.size() * 4), lengths(alloc, p.seq_lengths.size() * 4);
  FLASHIO_CUDA_CHECK(cudaMemcpy(cu_dev.get(), cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
  FLASHIO_CUDA_CHECK(cudaMemcpy(lengths.get(), p.seq_lengths.data(), p.seq_lengths.size() * 4, cudaMemcpyHostToDevice));
  DeviceBuffer q(alloc, size_t(p.q_elements()) * 2), k(alloc, size_t(p.kv_elements()) * 2),
      v(alloc, size_t(p.kv_elements()) * 2);
  if (p.packed()) {
    const VarlenGeometry gq{p.batch, p.heads, p.total_tokens(), p.seqlen_q, p.head_dim},
        gk{p.batch, p.kvh(), p.total_tokens(), p.seqlen_q, p.head_dim};
    generate_varlen_inputs_on_device(q.as<uint16_t>(), cu_dev.as<int32_t>(), gq, p.dtype, p.seed, InputTensor::Q, nullptr);
    generate_varlen_inputs_on_device(k.as<uint16_t>(), cu_dev.as<int32_t>(), gk, p.dtype, p.seed, InputTensor::K, nullptr);
    generate_varlen_inputs_on_device(v.as<uint16_t>(), cu_dev.as<int32_t>(), gk, p.dtype, p.seed, InputTensor::V, nullptr);
  } else {
    generate_inputs_on_device(q.as<uint16_t>(), size_t(p.q_elements()), p.dtype, p.seed, InputTensor::Q, nullptr);
    generate_inputs_on_device(k.as<uint16_t>(), size_t(p.kv_elements()), p.dtype, p.seed, InputTensor::K, nullptr);
    generate_inputs_on_device(v.as<uint16_t>(), size_t(p.kv_elements()), p.dtype, p.seed, InputTensor::V, nullptr);
  }
  DeviceBuffer o(alloc, size_t(p.q_elements() + guard) * 2), lse(alloc, size_t(p.lse_elements() + guard) * 4);
  FLASHIO_CUDA_CHECK(cudaMemset(o.get(), 0xFF, o.bytes()));
  FLASHIO_CUDA_CHECK(cudaMemset(lse.get(), 0xFF, lse.bytes()));
  auto plan = builtin_registry().find("flash2")->plan(p, Pass::Fwd, *gpu(), alloc);
  AttentionBuffers buf;
  buf.q = q.get();
  buf.k = k.get();
  buf.v = v.get();
  buf.o = o.get();
  buf.lse = lse.as<float>();
  if (p.packed()) buf.cu_seqlens = cu_dev.as<int>();
  else buf.key_lengths = lengths.as<int>();
  plan->forward(buf, nullptr);
  FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
  Outputs out;
  out.o.resize(o.bytes() / 2);
  out.lse.resize(lse.bytes() / 4);
  FLASHIO_CUDA_CHECK(cudaMemcpy(out.o.data(), o.get(), o.bytes(), cudaMemcpyDeviceToHost));
  FLASHIO_CUDA_CHECK(cudaMemcpy(out.lse.data(), lse.get(), lse.bytes(), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace

// The packed kernel and the key-padding kernel on the same values, with the same tile (the
// padded twin forced to the varlen kernel's tile): every real row's O and L equal bit for bit;
// every packed element is written, and nothing past the packed buffers (a length-0 sequence
// outputs nothing, a tile past a sequence's end writes nothing).
TEST(GpuVarlenLayout, PackedEqualsPaddedBitForBitAndWritesNothingElse) {
  if (!gpu()) GTEST_SKIP() << "no GPU: GPU tests skipped";
  for (bool causal : {false, true})
    for (const char* mma : {"mma.sync", ""}) {
      Problem p = problem_of({kOddShuffled, 4, 2, 128, DType::F16, causal, mma});
      const Record probe = full_check_runner().run({"flash2", Pass::Fwd, p});
      ASSERT_EQ(probe.status, Status::Ok) << probe.reason;
      Problem padded = p;
      padded.varlen_padded = true;
      padded.block_r = probe.tiles->block_r;  // the same tile: the same arithmetic per row
      padded.block_c = probe.tiles->block_c;
      padded.mma = probe.tiles->mma;
      SCOPED_TRACE(fmt::format("causal {} tile {}x{} {}", causal, padded.block_r, padded.block_c, padded.mma));
      constexpr int64_t kGuard = 4096;
      const Outputs a = run_forward(p, kGuard), b = run_forward(padded, 0);
      const auto cu = cu_seqlens(p);
      const int64_t T = p.total_tokens(), d = p.head_dim, n = p.seqlen_q;
      for (int64_t h = 0; h < p.heads; ++h)
        for (int64_t s = 0; s < p.batch; ++s)
          for (int64_t i = 0; i < p.seq_lengths[size_t(s)]; ++i) {
            const int64_t packed_row = h * T + cu[size_t(s)] + i, padded_row = (s * p.heads + h) * n + i;
            ASSERT_EQ(std::memcmp(&a.o[size_t(packed_row * d)], &b.o[size_t(padded_row * d)], size_t(d) * 2), 0)
                << "O of head " << h << " sequence " << s << " row " << i;
            ASSERT_EQ(std::memcmp(&a.lse[size_t(packed_row)], &b.lse[size_t(padded_row)], 4), 0)
                << "L of head " << h << " sequence " << s << " row " << i;
          }
      for (int64_t e = p.q_elements(); e < p.q_elements() + kGuard; ++e)
        ASSERT_EQ(a.o[size_t(e)], 0xFFFF) << "O written past the packed buffer at " << e;
      for (int64_t e = p.lse_elements(); e < p.lse_elements() + kGuard; ++e)
        ASSERT_EQ(std::memcmp(&a.lse[size_t(e)], "\xff\xff\xff\xff", 4), 0) << "L written past the buffer at " << e;
    }
}

TEST(GpuVarlenLayout, BackwardAndOtherMethodsSkipWithTheReason) {
  if (!gpu()) GTEST_SKIP() << "no GPU: GPU tests skipped";
  const Problem p = problem_of({kOdd, 2, 2, 64, DType::F16, false, ""});
  const Record bwd = full_check_runner().run({"flash2", Pass::Bwd, p});
  EXPECT_EQ(bwd.status, Status::Skipped);
  EXPECT_NE(bwd.reason.find("varlen backward"), std::string::npos) << bwd.reason;
  const Record standard = full_check_runner().run({"standard", Pass::Fwd, p});
  EXPECT_EQ(standard.status, Status::Skipped);
  EXPECT_NE(standard.reason.find("packed variable-length"), std::string::npos) << standard.reason;
  // The padded twin runs the existing key-padding backward, checked.
  Problem padded = p;
  padded.varlen_padded = true;
  expect_ok({"flash2", Pass::FwdBwd, padded});
  expect_ok({"standard", Pass::Fwd, padded});
}
