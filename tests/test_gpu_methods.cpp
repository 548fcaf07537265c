// GPU methods against the float64 reference, every row checked, through the same runner
// path a sweep uses (poisoned outputs, check before timing). Skips without a GPU.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bench/measure/timing.h"
#include "kernels/flash2/flash2_params.h"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::testing_util;

namespace {

struct Case {
  std::string method;
  int64_t n;
  int64_t d;
  DType dtype;
  bool causal;
  std::string mma;  // Problem::mma: "" (the method's choice), "mma.sync", "wgmma"
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string mma = c.mma;
  for (char& ch : mma)
    if (ch == '.') ch = '_';
  return fmt::format("{}{}_n{}_d{}_{}{}", c.method, mma.empty() ? "" : "_" + mma, c.n, c.d, to_string(c.dtype),
                     c.causal ? "_causal" : "");
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const char* m : {"standard", "standard_fused", "flash2", "flash2_mma_sync", "flash2_wgmma"})
    for (int64_t n : {1, 17, 1013, 4097})
      for (int64_t d : {64, 128})
        for (DType t : {DType::F16, DType::BF16})
          for (bool causal : {false, true}) {
            const std::string name = m;
            if (name == "flash2_mma_sync") {
              out.push_back({"flash2", n, d, t, causal, "mma.sync"});
            } else if (name == "flash2_wgmma") {
              out.push_back({"flash2", n, d, t, causal, "wgmma"});
            } else {
              out.push_back({name, n, d, t, causal, ""});
            }
          }
  return out;
}

}  // namespace

class GpuMethod : public GpuParamTest<Case> {};

TEST_P(GpuMethod, MatchesReferenceOnEveryRow) {
  const Case& c = GetParam();
  if (is_fused_method(c.method)) FLASHIO_SKIP_BF16_WITHOUT_FUSED_KERNELS(c.dtype);
  if (c.mma == "wgmma" && !wgmma_here()) GTEST_SKIP() << "no wgmma kernels on this GPU / in this build";
  Problem p;
  p.batch = c.n > 1000 ? 1 : 2;
  p.heads = 2;
  p.seqlen_q = c.n;
  p.head_dim = c.d;
  p.dtype = c.dtype;
  p.causal = c.causal;
  p.mma = c.mma;
  const Record r = expect_ok({c.method, Pass::Fwd, p});
  if (r.status == Status::Ok && c.method == "flash2") {
    // The method's choice on a Hopper GPU is the wgmma kernel: a silent fallback fails here.
    const std::string expected = c.mma.empty() ? (wgmma_here() ? "wgmma" : "mma.sync") : c.mma;
    ASSERT_TRUE(r.tiles.has_value());
    EXPECT_EQ(r.tiles->mma, expected);
    EXPECT_EQ(r.tiles->smem_layout, expected == "wgmma" ? "swizzle128" : "padded");
  }
}

INSTANTIATE_TEST_SUITE_P(Forward, GpuMethod, testing::ValuesIn(all_cases()), case_name);

class GpuFeatures : public GpuTest {};

// time_gpu runs the host work it is given once the warm-up calls are enqueued (the runner's check
// comparison), and the timed calls only when that work says so; a point's phases stay apart (the
// comparison's seconds are check, not timed) and add up to at most its total.
TEST_F(GpuFeatures, TimedCallsFollowTheHostWorkDuringTheWarmUpOnlyWhenItPasses) {
  DeviceAllocator alloc;
  DeviceBuffer buf(alloc, size_t(1) << 24);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  for (const bool passes : {false, true}) {
    int launches = 0, at_warming = -1;
    auto launch = [&] {
      ++launches;
      FLASHIO_CUDA_CHECK(cudaMemsetAsync(buf.get(), launches, buf.bytes(), s));
    };
    const auto t = time_gpu(launch, 3, 5, nullptr, s, [&] {
      at_warming = launches;
      return passes;
    });
    EXPECT_EQ(at_warming, 3);  // called once the warm-up launches are enqueued
    EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);  // synchronised: nothing left running
    if (!passes) {
      EXPECT_FALSE(t.has_value());
      EXPECT_EQ(launches, 3);
      continue;
    }
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(launches, 8);
    EXPECT_EQ(t->reps, 5);
    EXPECT_EQ(t->warmup, 3);
  }
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);

  Problem p;
  p.batch = 2;
  p.heads = 4;
  p.seqlen_q = 1024;
  p.head_dim = 64;
  for (Pass pass : {Pass::Fwd, Pass::FwdBwd}) {
    const Record r = expect_ok({"flash2", pass, p});
    ASSERT_TRUE(r.phases.has_value());
    const PhaseTimes& ph = *r.phases;
    EXPECT_GT(ph.check_s, 0.0);
    EXPECT_GT(ph.timed_s, 0.0);
    EXPECT_LE(ph.inputs_s + ph.reference_s + ph.plan_s + ph.check_s + ph.timed_s + ph.counters_s, ph.total_s * (1 + 1e-9));
  }
}

TEST_F(GpuFeatures, KeyPaddingGqaAndUnequalLengths) {
  const std::pair<const char*, const char*> methods[] = {
      {"standard", ""}, {"standard_fused", ""}, {"flash2", ""}, {"flash2", "mma.sync"}};
  for (const auto& [m, mma] : methods) {
    Problem p;
    p.mma = mma;
    p.batch = 3;
    p.heads = 8;
    p.kv_heads = 2;
    p.seqlen_q = 300;
    p.seqlen_k = 517;
    p.head_dim = 64;
    p.padding = Padding::Random;
    expect_ok({m, Pass::Fwd, p});
    p.causal = true;
    p.dtype = DType::BF16;
    expect_ok({m, Pass::Fwd, p});
  }
}

TEST_F(GpuFeatures, EveryFlash2TileAndHeadDim) {
  for (int d : {32, 64, 96, 128, 256}) {
    kernels::KernelTile tiles[16];
    int n = kernels::flash2_fwd_tiles(d, tiles, 8);
    ASSERT_GT(n, 0) << d;
    if (wgmma_here()) n += kernels::flash2_fwd_wgmma_tiles(d, false, tiles + n, 8);
    for (int i = 0; i < n; ++i) {
      if (tiles[i].smem_bytes > gpu()->smem_per_block_optin) continue;
      for (bool causal : {false, true}) {
        Problem p;
        p.batch = 2;
        p.heads = 3;
        p.seqlen_q = 333;
        p.head_dim = d;
        p.causal = causal;
        p.block_r = tiles[i].block_r;
        p.block_c = tiles[i].block_c;
        p.mma = tiles[i].wgmma ? "wgmma" : "mma.sync";
        const Record r = expect_ok({"flash2", Pass::Fwd, p});
        if (r.tiles) EXPECT_EQ(r.tiles->mma, p.mma);
      }
    }
  }
}

// What scripts/ptx_paths.sh reads: the fused kernels' code as loaded here. A PTX-only build
// (CMAKE_CUDA_ARCHITECTURES=75-virtual) shows compute_75 code running as this GPU's sm_XY.
TEST_F(GpuFeatures, FusedKernelArchIsReported) {
  const DeviceInfo& d = *gpu();
  std::printf("fused kernels: compute_%d code running as sm_%d on sm_%d\n", d.kernel_ptx_arch, d.kernel_binary_arch,
              d.compute_capability());
  EXPECT_GE(d.kernel_ptx_arch, 75);
  EXPECT_LE(d.kernel_ptx_arch, d.compute_capability());
  EXPECT_EQ(d.kernel_binary_arch, d.compute_capability());
}

// The `reference` method (baselines/reference: the float64 rows of bench/core/reference.cpp,
// copied to and from the device) against softmax(scale·QKᵀ)·V written out here from its
// definition, in float64, sharing no code with bench/core/reference.cpp: O on every row to the
// rounding of the output dtype, LSE to float's. Odd shapes on purpose: N = 1, Nq ≠ Nk both
// ways, causal (top-left: key j visible to query i iff j <= i) with Nq > Nk, key padding, GQA,
// and d 32, 64, 128. (The runner's own check of this method compares it with itself, so it
// proves only that the method runs; this test is the one that can fail.)
TEST_F(GpuFeatures, ReferenceMethodMatchesANaiveFloat64Softmax) {
  struct Shape {
    int64_t batch, heads, kv_heads, nq, nk, d;
    bool causal;
    Padding padding;
    DType dtype;
  };
  const Shape shapes[] = {{1, 1, 1, 1, 1, 64, false, Padding::None, DType::BF16},
                          {2, 4, 2, 17, 29, 32, true, Padding::Random, DType::F16},
                          {2, 2, 1, 33, 13, 128, true, Padding::None, DType::F16},
                          {3, 2, 2, 5, 41, 64, false, Padding::Random, DType::BF16}};
  for (const Shape& sh : shapes) {
    Problem p;
    p.batch = sh.batch;
    p.heads = sh.heads;
    p.kv_heads = sh.kv_heads;
    p.seqlen_q = sh.nq;
    p.seqlen_k = sh.nk;
    p.head_dim = sh.d;
    p.causal = sh.causal;
    p.padding = sh.padding;
    p.dtype = sh.dtype;
    const std::string name = point_name("reference", Pass::Fwd, p);
    expect_ok({"reference", Pass::Fwd, p});  // the runner's path (its check is the method itself)
    const HostInputs in = make_inputs(p, false);

    // The method's forward on device buffers.
    DeviceAllocator alloc;
    auto upload = [&](const void* data, size_t bytes) { return upload_bytes(alloc, data, bytes); };
    DeviceBuffer q = upload(in.q.data(), in.q.size() * 2), k = upload(in.k.data(), in.k.size() * 2),
                 v = upload(in.v.data(), in.v.size() * 2);
    DeviceBuffer lengths;
    if (p.padding != Padding::None) lengths = upload(in.key_lengths.data(), in.key_lengths.size() * 4);
    const int64_t rows = p.batch * p.heads * p.seqlen_q;
    DeviceBuffer o(alloc, in.q.size() * 2), lse(alloc, size_t(rows) * 4);
    auto plan = builtin_registry().find("reference")->plan(p, Pass::Fwd, *gpu(), alloc);
    AttentionBuffers buf;
    buf.q = q.get();
    buf.k = k.get();
    buf.v = v.get();
    buf.o = o.get();
    buf.lse = lse.as<float>();
    buf.key_lengths = lengths.as<int>();
    plan->forward(buf, nullptr);
    FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<uint16_t> o_got(in.q.size());
    std::vector<float> lse_got(static_cast<size_t>(rows));
    FLASHIO_CUDA_CHECK(cudaMemcpy(o_got.data(), o.get(), o_got.size() * 2, cudaMemcpyDeviceToHost));
    FLASHIO_CUDA_CHECK(cudaMemcpy(lse_got.data(), lse.get(), lse_got.size() * 4, cudaMemcpyDeviceToHost));

    // softmax(scale·QKᵀ)·V, row by row, from the definition.
    const int64_t d = p.head_dim, group = p.heads / p.kvh();
    const double scale = 1.0 / std::sqrt(double(d));
    // The output is rounded to the dtype (a 10- or 7-bit fraction; fp16 subnormals step 2^-24):
    // the method may round twice (double → float → dtype), so one unit in the last place.
    const double rel = p.dtype == DType::F16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    const double abs_floor = p.dtype == DType::F16 ? std::ldexp(1.0, -24) : 0.0;
    auto val = [&](const std::vector<uint16_t>& t, int64_t e) { return double(to_float(p.dtype, t[size_t(e)])); };
    int o_bad = 0, lse_bad = 0;
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.heads; ++h)
        for (int64_t i = 0; i < p.seqlen_q; ++i) {
          const int64_t row = (b * p.heads + h) * p.seqlen_q + i, kvrow0 = (b * p.kvh() + h / group) * p.nk();
          const int64_t len = p.padding != Padding::None ? in.key_lengths[size_t(b)] : p.nk();
          std::vector<double> s;
          for (int64_t j = 0; j < len && (!p.causal || j <= i); ++j) {
            double dot = 0;
            for (int64_t c = 0; c < d; ++c) dot += val(in.q, row * d + c) * val(in.k, (kvrow0 + j) * d + c);
            s.push_back(scale * dot);
          }
          double mx = -INFINITY, sum = 0;
          for (double x : s) mx = std::max(mx, x);
          for (double x : s) sum += std::exp(x - mx);
          const double want_lse = s.empty() ? -INFINITY : mx + std::log(sum);
          const float got_lse = lse_got[size_t(row)];
          const bool lse_ok = s.empty()
                                  ? std::isinf(got_lse) && got_lse < 0
                                  : std::abs(double(got_lse) - want_lse) <= 1e-6 * std::max(1.0, std::abs(want_lse));
          if (!lse_ok && ++lse_bad <= 3)
            ADD_FAILURE() << name << " LSE row " << row << ": method " << got_lse << ", naive " << want_lse;
          for (int64_t c = 0; c < d; ++c) {
            double want = 0;
            for (size_t j = 0; j < s.size(); ++j)
              want += std::exp(s[j] - mx) / sum * val(in.v, (kvrow0 + int64_t(j)) * d + c);
            const double got = val(o_got, row * d + c);
            if (!(std::abs(got - want) <= rel * std::abs(want) + abs_floor) && ++o_bad <= 3)
              ADD_FAILURE() << name << " O[" << row << "][" << c << "]: method " << got << ", naive " << want;
          }
        }
    EXPECT_EQ(o_bad, 0) << name;
    EXPECT_EQ(lse_bad, 0) << name;
  }
}

// The standard methods' backward (Algorithm 3) and dropout against the float64 reference, for
// `standard` (separate masking, softmax, dropout kernels; the backward reads the stored mask)
// and `standard_fused`: O, dQ on every row and dK, dV on every K/V head, for each pass (bwd
// times backward() again from the forward that the check ran, so a backward that destroys its
// inputs — P, P_drop, the mask — fails there).
class StandardMethods : public GpuParamTest<std::string> {};

TEST_P(StandardMethods, BackwardAndDropoutMatchReference) {
  const std::string method = GetParam();
  const Pass passes[] = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
  for (int64_t n : {1, 17, 1013})
    for (int64_t d : {64, 128})
      for (DType t : {DType::F16, DType::BF16})
        for (bool causal : {false, true})
          for (double dropout : {0.0, 0.17}) {
            Problem p;
            p.batch = n > 1000 ? 1 : 2;
            p.heads = 2;
            p.seqlen_q = n;
            p.head_dim = d;
            p.dtype = t;
            p.causal = causal;
            p.dropout = dropout;
            for (Pass pass : passes) expect_ok({method, pass, p});  // innermost: one reference per problem
          }
  // GQA (4 query heads per K/V head), key padding, Nq != Nk, and Nk odd (no 16-byte rows: the
  // elementwise kernels' scalar path).
  for (DType t : {DType::F16, DType::BF16})
    for (bool causal : {false, true})
      for (int64_t nk : {517, 512}) {
        Problem p;
        p.batch = 3;
        p.heads = 8;
        p.kv_heads = 2;
        p.seqlen_q = 300;
        p.seqlen_k = nk;
        p.head_dim = 64;
        p.dtype = t;
        p.causal = causal;
        p.padding = Padding::Random;
        p.dropout = 0.17;
        for (Pass pass : passes) expect_ok({method, pass, p});
      }
}

INSTANTIATE_TEST_SUITE_P(Both, StandardMethods, testing::Values("standard", "standard_fused"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

// `standard` and `standard_fused` draw the same dropout mask (the shared Philox generator; the
// first stores it, the second redraws it) and differ only in where intermediates are rounded:
// their O, dQ, dK, dV agree to a few fp16/bf16 ulps of the tensor's scale. A mask differing in
// even a few percent of the elements moves O by tens of percent of its scale at these sizes.
TEST_F(GpuFeatures, StandardAndStandardFusedAgreeWithDropoutAndMasks) {
  struct Shape {
    int64_t batch, heads, kv_heads, nq, nk;
    bool causal;
    Padding padding;
  };
  const Shape shapes[] = {{2, 2, 2, 17, 17, false, Padding::None},
                          {1, 2, 2, 1013, 1013, true, Padding::None},
                          {3, 8, 2, 300, 517, false, Padding::Random},
                          {2, 4, 4, 256, 256, true, Padding::Random}};
  for (const Shape& sh : shapes)
    for (DType t : {DType::F16, DType::BF16}) {
      Problem p;
      p.batch = sh.batch;
      p.heads = sh.heads;
      p.kv_heads = sh.kv_heads;
      p.seqlen_q = sh.nq;
      p.seqlen_k = sh.nk;
      p.head_dim = 64;
      p.dtype = t;
      p.causal = sh.causal;
      p.padding = sh.padding;
      p.dropout = 0.1;
      const HostInputs in = make_inputs(p, true);
      const FwdBwdBytes a = run_fwdbwd_bytes("standard", p, in), b = run_fwdbwd_bytes("standard_fused", p, in);
      const std::string name = point_name("standard", Pass::FwdBwd, p);
      auto compare = [&](const char* what, const std::vector<uint8_t>& x, const std::vector<uint8_t>& y) {
        ASSERT_EQ(x.size(), y.size()) << what;
        const size_t count = x.size() / 2;
        std::vector<float> fx(count), fy(count);
        float scale = 0.f;
        for (size_t e = 0; e < count; ++e) {
          fx[e] = to_float(t, reinterpret_cast<const uint16_t*>(x.data())[e]);
          fy[e] = to_float(t, reinterpret_cast<const uint16_t*>(y.data())[e]);
          scale = std::max(scale, std::abs(fy[e]));
        }
        const float tolerance = (t == DType::BF16 ? 0.03f : 0.01f) * scale;
        size_t worst = 0;
        for (size_t e = 0; e < count; ++e)
          if (!(std::abs(fx[e] - fy[e]) <= tolerance) && std::abs(fx[e] - fy[e]) >= std::abs(fx[worst] - fy[worst]))
            worst = e;
        EXPECT_LE(std::abs(fx[worst] - fy[worst]), tolerance)
            << name << " " << what << "[" << worst << "]: standard " << fx[worst] << ", standard_fused " << fy[worst]
            << " (scale " << scale << ")";
      };
      compare("O", a.o, b.o);
      compare("dQ", a.dq, b.dq);
      compare("dK", a.dk, b.dk);
      compare("dV", a.dv, b.dv);
    }
}

// The unfused `standard` keeps the dropout mask for its backward: one byte per score element
// more workspace than `standard_fused`, only with dropout.
TEST_F(GpuFeatures, StandardStoresTheDropoutMaskInItsWorkspace) {
  Problem p;
  p.batch = 2;
  p.heads = 3;
  p.seqlen_q = 256;
  p.head_dim = 64;
  const int64_t elements = p.batch * p.heads * p.seqlen_q * p.seqlen_q;
  for (Pass pass : {Pass::Fwd, Pass::FwdBwd})
    for (double dropout : {0.0, 0.1}) {
      p.dropout = dropout;
      const Record a = expect_ok({"standard", pass, p}), b = expect_ok({"standard_fused", pass, p});
      ASSERT_TRUE(a.memory && b.memory);
      EXPECT_EQ(a.memory->workspace_bytes - b.memory->workspace_bytes, dropout > 0 ? elements : 0)
          << to_string(pass) << " dropout " << dropout;
      ASSERT_TRUE(a.tiles && b.tiles);
      EXPECT_EQ(a.tiles->elementwise, "separate");
      EXPECT_EQ(b.tiles->elementwise, "fused");
    }
}
