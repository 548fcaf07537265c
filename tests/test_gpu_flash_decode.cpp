// flash_decode on the GPU: the float64 check of every row through the runner (odd key and
// query counts, GQA 32:8 and MQA, batch 1 and 3, d 64/128/256, fp16 and bf16, causal, key
// padding, contiguous and paged K/V), and the paged layout giving the contiguous one's O and L
// bit for bit. Skips without a GPU. Filter: --gtest_filter='*FlashDecode*'.
#include <fmt/format.h>

#include <cstring>

#include "kernels/flash_decode/flash_decode_configs.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

struct DecodeCase {
  int64_t batch, heads, kv_heads, nq, nk, d;
  DType dtype;
  bool causal;
  bool padding;
  int page;  // 0: contiguous
};

Problem problem_of(const DecodeCase& c) {
  Problem p;
  p.batch = c.batch;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.seqlen_q = c.nq;
  p.seqlen_k = c.nk;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.padding = c.padding ? Padding::Random : Padding::None;
  p.kv_page = c.page;
  p.seed = 0xdec0de + uint64_t(c.nk * 7 + c.nq);
  return p;
}

std::string case_name(const testing::TestParamInfo<DecodeCase>& info) {
  const DecodeCase& c = info.param;
  return fmt::format("b{}_h{}_kvh{}_nq{}_nk{}_d{}_{}{}{}_{}", c.batch, c.heads, c.kv_heads, c.nq, c.nk, c.d,
                     to_string(c.dtype), c.causal ? "_causal" : "", c.padding ? "_pad" : "",
                     c.page ? fmt::format("paged{}", c.page) : std::string("contiguous"));
}

std::vector<DecodeCase> all_cases() {
  std::vector<DecodeCase> out;
  // Odd sizes: every key count × query count, GQA 32:8 and MQA 8:1, both layouts (fp16, d 128).
  for (int64_t nk : {1, 17, 1013, 4097})
    for (int64_t nq : {1, 3, 16})
      for (auto [h, kvh] : {std::pair<int64_t, int64_t>{32, 8}, {8, 1}})
        for (int page : {0, 64}) out.push_back({nq == 3 ? 1 : 3, h, kvh, nq, nk, 128, DType::F16, false, false, page});
  // Head dims 64 and 256, bf16.
  for (int64_t d : {64, 256})
    for (DType t : {DType::F16, DType::BF16})
      for (int page : {0, 64}) out.push_back({3, 32, 8, 3, 1013, d, t, false, false, page});
  for (int page : {0, 64}) out.push_back({3, 32, 8, 1, 4097, 128, DType::BF16, false, false, page});
  // Causal (top-left: query i sees keys 0..i), Nq <= Nk and Nq > Nk.
  for (int64_t nq : {1, 3, 16})
    for (int64_t nk : {1, 17, 1013})
      for (int page : {0, 64}) out.push_back({3, 32, 8, nq, nk, 128, DType::F16, true, false, page});
  out.push_back({3, 8, 1, 16, 4097, 64, DType::BF16, true, false, 64});
  // Key padding: each sequence its own length, the last page partly used.
  for (int64_t nk : {1013, 4097})
    for (int page : {0, 64}) out.push_back({3, 32, 8, 3, nk, 128, DType::F16, false, true, page});
  // Larger pages.
  for (int page : {128, 256}) out.push_back({3, 32, 8, 1, 4097, 128, DType::F16, false, false, page});
  return out;
}

}  // namespace

class GpuFlashDecode : public GpuParamTest<DecodeCase> {};

TEST_P(GpuFlashDecode, MatchesReferenceOnEveryRow) {
  const DecodeCase& c = GetParam();
  FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(c.dtype);
  const Problem p = problem_of(c);
  const Record r = expect_ok({"flash_decode", Pass::Fwd, p});
  if (r.status != Status::Ok) return;
  ASSERT_TRUE(r.tiles.has_value());
  EXPECT_EQ(r.tiles->block_r, kernels::kDecodeBlockM);
  EXPECT_EQ(r.tiles->block_c, kernels::kDecodeBlockN);
  EXPECT_GE(r.tiles->splits, 1);
  // The record's split count is the plan's: the one the CPU-side rule picks for this GPU.
  EXPECT_EQ(r.tiles->splits, kernels::flash_decode_split(p, gpu()->sm_count, gpu()->smem_per_sm).splits);
}

INSTANTIATE_TEST_SUITE_P(Forward, GpuFlashDecode, testing::ValuesIn(all_cases()), case_name);

// The cases above reach both epilogues: one split (the block writes O) and several (the last split
// to finish combines them).
TEST(GpuFlashDecodeSplits, TheCasesRunBothOneAndSeveralSplits) {
  if (!gpu()) GTEST_SKIP() << "no GPU: GPU tests skipped";
  bool one = false, several = false;
  for (const DecodeCase& c : all_cases()) {
    const int s = kernels::flash_decode_split(problem_of(c), gpu()->sm_count, gpu()->smem_per_sm).splits;
    one = one || s == 1;
    several = several || s > 1;
  }
  EXPECT_TRUE(one);
  EXPECT_TRUE(several);
}

TEST(GpuFlashDecodeSplits, BackwardIsSkippedWithTheReason) {
  if (!gpu()) GTEST_SKIP() << "no GPU: GPU tests skipped";
  Problem p = problem_of({1, 8, 8, 1, 100, 128, DType::F16, false, false, 0});
  const Record r = full_check_runner().run({"flash_decode", Pass::Bwd, p});
  EXPECT_EQ(r.status, Status::Skipped);
  EXPECT_NE(r.reason.find("forward only"), std::string::npos) << r.reason;
  p.kv_page = 64;
  const Record f2 = full_check_runner().run({"flash2", Pass::Fwd, p});
  EXPECT_EQ(f2.status, Status::Skipped);
  EXPECT_NE(f2.reason.find("paged"), std::string::npos) << f2.reason;
}

namespace {

struct DecodeBytes {
  std::vector<uint8_t> o, lse;
  int splits = 0;
};

// O and L of one flash_decode forward on the logical inputs `in`, stored contiguous (p.kv_page
// = 0) or in p's pages (the block table of kv_pages_of), as raw bytes.
DecodeBytes run_decode_bytes(const Problem& p, const HostInputs& in) {
  DeviceAllocator alloc;
  auto upload = [&](const void* data, size_t bytes) {
    DeviceBuffer b(alloc, bytes);
    FLASHIO_CUDA_CHECK(cudaMemcpy(b.get(), data, bytes, cudaMemcpyHostToDevice));
    return b;
  };
  std::vector<uint16_t> k = in.k, v = in.v;
  KvPages pages;
  if (p.paged()) {  // the logical K/V moved into their pages; unused slots hold NaN (0xFFFF)
    pages = kv_pages_of(p);
    k.assign(size_t(pages.elements()), 0xFFFF);
    v.assign(size_t(pages.elements()), 0xFFFF);
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t hk = 0; hk < p.kvh(); ++hk)
        for (int64_t key = 0; key < p.nk(); ++key)
          for (int64_t c = 0; c < p.head_dim; ++c) {
            const size_t from = size_t(((b * p.kvh() + hk) * p.nk() + key) * p.head_dim + c);
            const size_t to = size_t(pages.offset(b, hk, key, c, p.kvh(), p.head_dim));
            k[to] = in.k[from];
            v[to] = in.v[from];
          }
  }
  DeviceBuffer q_d = upload(in.q.data(), in.q.size() * 2), k_d = upload(k.data(), k.size() * 2),
               v_d = upload(v.data(), v.size() * 2);
  DeviceBuffer table, lengths;
  if (p.paged()) table = upload(pages.table.data(), pages.table.size() * 4);
  if (p.padding != Padding::None) lengths = upload(in.key_lengths.data(), in.key_lengths.size() * 4);
  DeviceBuffer o(alloc, in.q.size() * 2), lse(alloc, size_t(p.batch * p.heads * p.seqlen_q) * 4);
  auto plan = builtin_registry().find("flash_decode")->plan(p, Pass::Fwd, *gpu(), alloc);
  AttentionBuffers buf;
  buf.q = q_d.get();
  buf.k = k_d.get();
  buf.v = v_d.get();
  buf.o = o.get();
  buf.lse = lse.as<float>();
  buf.key_lengths = lengths.as<int>();
  buf.block_table = table.as<int>();
  plan->forward(buf, nullptr);
  FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
  auto down = [](const DeviceBuffer& b) {
    std::vector<uint8_t> h(b.bytes());
    FLASHIO_CUDA_CHECK(cudaMemcpy(h.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost));
    return h;
  };
  return {down(o), down(lse), plan->tiles().splits};
}

}  // namespace

class GpuFlashDecodePaged : public GpuTest {};

TEST_F(GpuFlashDecodePaged, PagedGivesTheContiguousOutputsBitForBit) {
  for (DType t : {DType::F16, DType::BF16})
    for (int page : {64, 256})
      for (bool padding : {false, true})
        for (int64_t nk : {17, 4097}) {
          if (t == DType::BF16 && !fused_bf16_available()) continue;
          Problem p = problem_of({3, 32, 8, 3, nk, 128, t, false, padding, 0});
          const HostInputs in = make_inputs(p, false);
          const DecodeBytes contiguous = run_decode_bytes(p, in);
          p.kv_page = page;
          const DecodeBytes paged = run_decode_bytes(p, in);
          EXPECT_EQ(paged.splits, contiguous.splits) << p.name();
          EXPECT_TRUE(paged.o == contiguous.o) << p.name() << ": O differs";
          EXPECT_TRUE(paged.lse == contiguous.lse) << p.name() << ": L differs";
          // Not vacuous: the outputs are finite numbers, not the poison or zeros.
          bool nonzero = false;
          for (uint8_t x : contiguous.o) nonzero = nonzero || x != 0;
          EXPECT_TRUE(nonzero) << p.name();
        }
}
