// flash_decode on the GPU: the float64 check of every row through the runner (odd key and
// query counts, GQA 32:8 and MQA, batch 1 and 3, d 64/128/256, fp16 and bf16, causal, key
// padding, contiguous and paged K/V), and the paged layout giving the contiguous one's O and L
// bit for bit. Varlen decode (--seqlens with --seqlen-q: K/V packed, each sequence its own key
// length and split count): the float64 check of every row (lengths 0, 1, 17, 1013, 4097; Nq 1 and
// 4; GQA 32:8 and MHA; d 64/128/256; fp16 and bf16; causal; one and several splits), the padded
// twin on flash_decode and flash2, and equal lengths giving the dense kernel's O and L bit for bit,
// launch after launch. Paged varlen decode (--kv-layout paged:P with a varlen decode: each
// sequence's keys in ⌈L_b/P⌉ pages of its own, shuffled): the float64 check of every row (the odd
// lengths above, none a multiple of a page, one 0; pages of 64, 128, 256), the packed layout's O and
// L bit for bit with the pages' unused slots poisoned, and its padded twin (dense pages, key
// lengths). Skips without a GPU. Filter: --gtest_filter='*FlashDecode*'.
#include <fmt/format.h>

#include <cstring>

#include "bench/core/varlen.h"
#include "bench/cuda/device_inputs.h"
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

// O and L (raw bytes) of flash_decode's plan for p on the inputs `in_buf` holds (Q, K, V and
// whatever layout arrays p needs), after `launches` launches on the same buffers, O and L
// poisoned (NaN) before each: every element must be written again, and the split counters must
// be left at zero for the next launch.
DecodeBytes launch_decode(const Problem& p, AttentionBuffers buf, DeviceAllocator& alloc, int launches) {
  DeviceBuffer o(alloc, size_t(p.q_elements()) * 2), lse(alloc, size_t(p.lse_elements()) * 4);
  auto plan = builtin_registry().find("flash_decode")->plan(p, Pass::Fwd, *gpu(), alloc);
  buf.o = o.get();
  buf.lse = lse.as<float>();
  for (int i = 0; i < launches; ++i) {
    FLASHIO_CUDA_CHECK(cudaMemset(o.get(), 0xFF, o.bytes()));
    FLASHIO_CUDA_CHECK(cudaMemset(lse.get(), 0xFF, lse.bytes()));
    plan->forward(buf, nullptr);
  }
  FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
  return {download_bytes(o), download_bytes(lse), plan->tiles().splits};
}

// O and L of one flash_decode forward on the logical inputs `in`, stored contiguous (p.kv_page
// = 0) or in p's pages (the block table of kv_pages_of), as raw bytes.
DecodeBytes run_decode_bytes(const Problem& p, const HostInputs& in) {
  DeviceAllocator alloc;
  auto upload = [&](const void* data, size_t bytes) { return upload_bytes(alloc, data, bytes); };
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
  AttentionBuffers buf;
  buf.q = q_d.get();
  buf.k = k_d.get();
  buf.v = v_d.get();
  buf.key_lengths = lengths.as<int>();
  buf.block_table = table.as<int>();
  return launch_decode(p, buf, alloc, 1);
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

// Varlen decode (Problem::key_varlen): K/V packed [Hkv, T, d] through cu_seqlens, Q, O, L dense.
namespace {

struct VarlenDecodeCase {
  std::vector<int32_t> lengths;  // key lengths
  int64_t heads, kv_heads, nq, d;
  DType dtype;
  bool causal;
};

const std::vector<int32_t> kOddKeys = {17, 0, 4097, 1, 1013};  // odd sizes, one empty; 4097: several splits
const std::vector<int32_t> kShortKeys = {200, 0, 17, 1, 256};  // at most 4 tiles: one split each

Problem varlen_problem_of(const VarlenDecodeCase& c) {
  Problem p;
  p.seqlens = "file:lengths.txt";  // the lengths given, as a resolved file: spec holds them
  p.seq_lengths = c.lengths;
  p.batch = int64_t(c.lengths.size());
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.seqlen_q = c.nq;
  p.seqlen_k = *std::max_element(c.lengths.begin(), c.lengths.end());
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.seed = 0x7a1de + uint64_t(c.nq * 31 + c.d);
  return p;
}

std::string varlen_case_name(const testing::TestParamInfo<VarlenDecodeCase>& info) {
  const VarlenDecodeCase& c = info.param;
  return fmt::format("{}_h{}_kvh{}_nq{}_d{}_{}{}", c.lengths == kOddKeys ? "odd" : "short", c.heads, c.kv_heads, c.nq,
                     c.d, to_string(c.dtype), c.causal ? "_causal" : "");
}

std::vector<VarlenDecodeCase> varlen_cases() {
  std::vector<VarlenDecodeCase> out;
  for (const auto& lengths : {kOddKeys, kShortKeys})
    for (int64_t nq : {1, 4})
      for (auto [h, kvh] : {std::pair<int64_t, int64_t>{32, 8}, {8, 8}})
        out.push_back({lengths, h, kvh, nq, 128, DType::F16, false});
  for (int64_t d : {64, 256})
    for (DType t : {DType::F16, DType::BF16}) out.push_back({kOddKeys, 32, 8, 4, d, t, false});
  out.push_back({kOddKeys, 32, 8, 1, 128, DType::BF16, false});
  for (int64_t nq : {1, 4}) out.push_back({kOddKeys, 32, 8, nq, 128, DType::F16, true});
  return out;
}

}  // namespace

class GpuFlashDecodeVarlen : public GpuParamTest<VarlenDecodeCase> {};

TEST_P(GpuFlashDecodeVarlen, MatchesReferenceOnEveryRow) {
  const VarlenDecodeCase& c = GetParam();
  FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(c.dtype);
  const Problem p = varlen_problem_of(c);
  ASSERT_TRUE(p.key_varlen() && p.packed());
  ASSERT_FALSE(p.invalid_reason()) << *p.invalid_reason();
  const Record r = expect_ok({"flash_decode", Pass::Fwd, p});  // inputs verified against the host's bit for bit
  if (r.status != Status::Ok) return;
  ASSERT_TRUE(r.tiles.has_value());
  EXPECT_EQ(r.tiles->splits, kernels::flash_decode_split(p, gpu()->sm_count, gpu()->smem_per_sm).splits);
  ASSERT_TRUE(r.check.has_value());
  EXPECT_EQ(r.check->rows_checked, p.batch * p.heads * p.seqlen_q);  // every sequence's Nq rows, L = 0 too
  EXPECT_TRUE(r.check->lse_checked);
}

INSTANTIATE_TEST_SUITE_P(Forward, GpuFlashDecodeVarlen, testing::ValuesIn(varlen_cases()), varlen_case_name);

// The cases reach a grid of one split and grids of several, where short sequences still have one
// split (their block writes O) and the long one several (its last split combines them).
TEST(GpuFlashDecodeVarlenSplits, TheCasesRunOneAndSeveralSplitsPerSequence) {
  if (!gpu()) GTEST_SKIP() << "no GPU: GPU tests skipped";
  bool one_grid = false, mixed = false;
  for (const VarlenDecodeCase& c : varlen_cases()) {
    const Problem p = varlen_problem_of(c);
    const auto s = kernels::flash_decode_split(p, gpu()->sm_count, gpu()->smem_per_sm);
    one_grid = one_grid || s.splits == 1;
    int fewest = s.splits;
    for (int32_t len : p.seq_lengths)
      fewest = std::min(
          fewest, kernels::decode_sequence_splits(kernels::decode_tiles(len, p.seqlen_q, p.causal), s.tiles_per_split));
    mixed = mixed || (s.splits > 1 && fewest == 1);
  }
  EXPECT_TRUE(one_grid);
  EXPECT_TRUE(mixed);
}

// The padded twin (K/V [B, Hkv, longest, d], key lengths) of the same sequences: the key-padding
// path of flash_decode and flash2, checked the same way.
TEST(GpuFlashDecodeVarlenSplits, ThePaddedTwinRunsOnFlashDecodeAndFlash2) {
  if (!gpu()) GTEST_SKIP() << "no GPU: GPU tests skipped";
  Problem p = varlen_problem_of({kOddKeys, 32, 8, 4, 128, DType::F16, false});
  p.varlen_padded = true;
  for (const char* m : {"flash_decode", "flash2"}) expect_ok({m, Pass::Fwd, p});
}

namespace {

// O and L (raw bytes) of flash_decode on p's inputs made on the GPU by the suite's generators,
// packed (p.packed()) or dense, after `launches` launches on the same buffers (the split counters
// must be left at zero for the next).
DecodeBytes run_generated_decode_bytes(const Problem& p, int launches) {
  DeviceAllocator alloc;
  DeviceBuffer q(alloc, size_t(p.q_elements()) * 2), k(alloc, size_t(p.kv_elements()) * 2),
      v(alloc, size_t(p.kv_elements()) * 2), cu_dev;
  generate_inputs_on_device(q.as<uint16_t>(), size_t(p.q_elements()), p.dtype, p.seed, InputTensor::Q, nullptr);
  if (p.packed()) {
    const auto cu64 = cu_seqlens(p);
    const std::vector<int32_t> cu(cu64.begin(), cu64.end());
    cu_dev = DeviceBuffer(alloc, cu.size() * 4);
    FLASHIO_CUDA_CHECK(cudaMemcpy(cu_dev.get(), cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
    const VarlenGeometry g{p.batch, p.kvh(), p.total_tokens(), p.nk(), p.head_dim};
    generate_varlen_inputs_on_device(k.as<uint16_t>(), cu_dev.as<int32_t>(), g, p.dtype, p.seed, InputTensor::K,
                                     nullptr);
    generate_varlen_inputs_on_device(v.as<uint16_t>(), cu_dev.as<int32_t>(), g, p.dtype, p.seed, InputTensor::V,
                                     nullptr);
  } else {
    generate_inputs_on_device(k.as<uint16_t>(), size_t(p.kv_elements()), p.dtype, p.seed, InputTensor::K, nullptr);
    generate_inputs_on_device(v.as<uint16_t>(), size_t(p.kv_elements()), p.dtype, p.seed, InputTensor::V, nullptr);
  }
  AttentionBuffers buf;
  buf.q = q.get();
  buf.k = k.get();
  buf.v = v.get();
  buf.cu_seqlens = cu_dev.as<int>();
  return launch_decode(p, buf, alloc, launches);
}

}  // namespace

// Sequences of one length: the packed kernel reads the dense kernel's values at other addresses and
// splits them alike, so O and L are the dense ones bit for bit — also on the third launch (the
// counters left at zero).
TEST_F(GpuFlashDecodePaged, VarlenOfEqualLengthsGivesTheDenseOutputsBitForBit) {
  for (int64_t keys : {1013, 4096})
    for (int64_t nq : {1, 4}) {
      Problem packed = varlen_problem_of({std::vector<int32_t>(3, int32_t(keys)), 32, 8, nq, 128, DType::F16, false});
      Problem dense = packed;
      dense.seqlens.clear();
      dense.seq_lengths.clear();
      const DecodeBytes a = run_generated_decode_bytes(packed, 3), b = run_generated_decode_bytes(dense, 1);
      ASSERT_EQ(a.splits, b.splits) << packed.name() << ": the varlen and dense split rules differ here";
      EXPECT_TRUE(a.o == b.o) << packed.name() << ": O differs";
      EXPECT_TRUE(a.lse == b.lse) << packed.name() << ": L differs";
      bool nonzero = false;
      for (uint8_t x : a.o) nonzero = nonzero || (x != 0 && x != 0xFF);
      EXPECT_TRUE(nonzero) << packed.name();
    }
}

// Paged varlen decode (Problem::paged_varlen): K/V in pages of each sequence's own through the
// block table, the lengths through cu_seqlens; Q, O, L dense.
namespace {

struct PagedVarlenCase {
  VarlenDecodeCase c;
  int page;
};

std::vector<PagedVarlenCase> paged_varlen_cases() {
  std::vector<PagedVarlenCase> out;
  for (int page : {64, 256})
    for (int64_t nq : {1, 4})
      for (auto [h, kvh] : {std::pair<int64_t, int64_t>{32, 8}, {8, 8}})
        out.push_back({{kOddKeys, h, kvh, nq, 128, DType::F16, false}, page});
  for (int64_t d : {64, 256})
    for (DType t : {DType::F16, DType::BF16}) out.push_back({{kOddKeys, 32, 8, 4, d, t, false}, 128});
  for (int64_t nq : {1, 4}) out.push_back({{kOddKeys, 32, 8, nq, 128, DType::F16, true}, 64});
  out.push_back({{kShortKeys, 32, 8, 1, 128, DType::F16, false}, 64});  // one split per sequence
  return out;
}

Problem paged_varlen_problem_of(const PagedVarlenCase& c) {
  Problem p = varlen_problem_of(c.c);
  p.kv_page = c.page;
  return p;
}

std::string paged_varlen_case_name(const testing::TestParamInfo<PagedVarlenCase>& info) {
  return varlen_case_name({info.param.c, info.index}) + fmt::format("_paged{}", info.param.page);
}

// O and L of flash_decode on a varlen decode's logical inputs `in` (the padded twin's tensors):
// K/V packed [Hkv, T, d] (p.packed_kv()) or in p's pages (p.paged_varlen(), kv_pages_of), with
// every slot no real key holds poisoned (NaN, 0xFFFF): a read past a sequence's keys shows.
DecodeBytes run_varlen_decode_bytes(const Problem& p, const HostInputs& in, int launches) {
  DeviceAllocator alloc;
  auto upload = [&](const void* data, size_t bytes) { return upload_bytes(alloc, data, bytes); };
  const auto cu64 = cu_seqlens(p);
  const std::vector<int32_t> cu(cu64.begin(), cu64.end());
  const int64_t d = p.head_dim, total = p.total_tokens();
  KvPages pages;
  if (p.paged()) pages = kv_pages_of(p);
  const size_t elements = size_t(p.paged() ? pages.elements() : p.kvh() * total * d);
  std::vector<uint16_t> k(elements, 0xFFFF), v(elements, 0xFFFF);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t hk = 0; hk < p.kvh(); ++hk)
      for (int64_t key = 0; key < p.seq_lengths[size_t(b)]; ++key)
        for (int64_t c = 0; c < d; ++c) {
          const size_t from = size_t(((b * p.kvh() + hk) * p.nk() + key) * d + c);
          const size_t to = size_t(p.paged() ? pages.offset(b, hk, key, c, p.kvh(), d)
                                             : (hk * total + cu64[size_t(b)] + key) * d + c);
          k[to] = in.k[from];
          v[to] = in.v[from];
        }
  DeviceBuffer q_d = upload(in.q.data(), in.q.size() * 2), k_d = upload(k.data(), k.size() * 2),
               v_d = upload(v.data(), v.size() * 2), cu_d = upload(cu.data(), cu.size() * 4), table;
  if (p.paged()) table = upload(pages.table.data(), pages.table.size() * 4);
  AttentionBuffers buf;
  buf.q = q_d.get();
  buf.k = k_d.get();
  buf.v = v_d.get();
  buf.cu_seqlens = cu_d.as<int>();
  buf.block_table = table.as<int>();
  return launch_decode(p, buf, alloc, launches);
}

}  // namespace

class GpuFlashDecodePagedVarlen : public GpuParamTest<PagedVarlenCase> {};

TEST_P(GpuFlashDecodePagedVarlen, MatchesReferenceOnEveryRow) {
  const PagedVarlenCase& c = GetParam();
  FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(c.c.dtype);
  const Problem p = paged_varlen_problem_of(c);
  ASSERT_TRUE(p.paged_varlen());
  ASSERT_FALSE(p.invalid_reason()) << *p.invalid_reason();
  const Record r = expect_ok({"flash_decode", Pass::Fwd, p});  // the pages verified against the host's heads
  if (r.status != Status::Ok) return;
  ASSERT_TRUE(r.tiles.has_value());
  EXPECT_EQ(r.tiles->splits, kernels::flash_decode_split(p, gpu()->sm_count, gpu()->smem_per_sm).splits);
  ASSERT_TRUE(r.check.has_value());
  EXPECT_EQ(r.check->rows_checked, p.batch * p.heads * p.seqlen_q);  // every sequence's Nq rows, L = 0 too
  EXPECT_TRUE(r.check->lse_checked);
}

INSTANTIATE_TEST_SUITE_P(Forward, GpuFlashDecodePagedVarlen, testing::ValuesIn(paged_varlen_cases()),
                         paged_varlen_case_name);

class GpuFlashDecodePagedVarlenLayout : public GpuTest {};

// The same sequences packed and paged: the same splits and arithmetic at other addresses, so O and
// L bit for bit — with every slot past a sequence's keys NaN in both layouts, and on the third
// launch (the counters left at zero). Not vacuous: O holds numbers, and the empty sequence's are 0.
TEST_F(GpuFlashDecodePagedVarlenLayout, PagedGivesThePackedOutputsBitForBit) {
  for (DType t : {DType::F16, DType::BF16})
    for (int page : {64, 128})
      for (bool causal : {false, true}) {
        if (t == DType::BF16 && !fused_bf16_available()) continue;
        Problem packed = varlen_problem_of({kOddKeys, 32, 8, 4, 128, t, causal});
        const HostInputs in = make_inputs(packed, false);
        Problem paged = packed;
        paged.kv_page = page;
        const DecodeBytes a = run_varlen_decode_bytes(packed, in, 1), b = run_varlen_decode_bytes(paged, in, 3);
        ASSERT_EQ(a.splits, b.splits) << paged.name();
        EXPECT_TRUE(a.o == b.o) << paged.name() << ": O differs";
        EXPECT_TRUE(a.lse == b.lse) << paged.name() << ": L differs";
        bool number = false;
        for (size_t i = 0; i + 1 < b.o.size(); i += 2) {
          const uint16_t x = uint16_t(b.o[i] | (b.o[i + 1] << 8));
          number = number || (x != 0 && x != 0xFFFF);
        }
        EXPECT_TRUE(number) << paged.name();
        const size_t empty = size_t(1 * paged.heads * paged.seqlen_q * paged.head_dim) * 2;  // sequence 1: L = 0
        for (size_t i = 0; i < empty; i += 2)  // ±0: the sign bit aside, every bit 0
          ASSERT_EQ(uint16_t(b.o[empty + i] | (b.o[empty + i + 1] << 8)) & 0x7FFF, 0)
              << paged.name() << ": the empty sequence's O is not 0 at byte " << i;
      }
}

// The padded twin of a paged varlen decode: dense pages of the longest length, key lengths = the
// lengths (the dense kernel's key padding over pages), checked the same way.
TEST_F(GpuFlashDecodePagedVarlenLayout, ThePaddedTwinRunsOnFlashDecode) {
  Problem p = paged_varlen_problem_of({{kOddKeys, 32, 8, 4, 128, DType::F16, false}, 64});
  p.varlen_padded = true;
  ASSERT_FALSE(p.paged_varlen());
  expect_ok({"flash_decode", Pass::Fwd, p});
}
