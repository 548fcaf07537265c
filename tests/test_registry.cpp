// The registry must hold every built-in method: a method dropped by the linker or by a
// lost registration line fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "baselines/standard/standard_plan.h"
#include "bench/core/method.h"
#include "tests/device_test_util.h"

using namespace flashio;

TEST(Registry, EveryMethodDescribesItself) {
  for (const Method* m : builtin_registry().all()) {
    const MethodInfo i = m->info();
    EXPECT_FALSE(i.summary.empty()) << i.name;
    EXPECT_FALSE(i.passes.empty()) << i.name;
    EXPECT_FALSE(i.dtypes.empty()) << i.name;
    EXPECT_TRUE(i.where == "gpu" || i.where == "cpu") << i.name;
  }
}

namespace {
DeviceInfo h100() { return testing_util::test_h100(); }
}  // namespace

namespace {

// The methods the build registers: NAME of every `flashio_add_method(NAME FOLDER)` line of the
// top-level CMakeLists.txt, in order (cmake/FlashioMethods.cmake generates the registry from them).
std::vector<std::string> registration_lines() {
  std::ifstream in(std::string(FLASHIO_SOURCE_DIR) + "/CMakeLists.txt");
  const std::regex line(R"(^\s*flashio_add_method\((\w+)\s+\S+\))");
  std::vector<std::string> names;
  for (std::string text; std::getline(in, text);)
    if (std::smatch m; std::regex_search(text, m, line)) names.push_back(m[1]);
  return names;
}

}  // namespace

TEST(Registry, HoldsEveryMethodOfTheRegistrationLinesInTheirOrder) {
  const auto lines = registration_lines();
  ASSERT_GE(lines.size(), 7u) << "CMakeLists.txt's flashio_add_method() lines were not found";
  EXPECT_EQ(builtin_registry().names(), lines);
  for (const char* want :
       {"reference", "standard", "standard_fused", "flash1", "flash2", "blocksparse_flash", "blocksparse_standard"})
    EXPECT_NE(std::find(lines.begin(), lines.end(), want), lines.end()) << want << " has no registration line";
}

// In a build with CUDA every method has its launch side; without, none has, and plan() says why.
TEST(Registry, LaunchSideMatchesTheBuild) {
  for (const Method* m : builtin_registry().all()) EXPECT_EQ(m->can_launch(), bool(FLASHIO_HAS_CUDA)) << m->name();
#if !FLASHIO_HAS_CUDA
  static char storage[1];  // never used: plan() refuses before it would allocate
  try {
    builtin_registry().find("flash2")->plan(Problem{}, Pass::Fwd, h100(), reinterpret_cast<DeviceAllocator&>(storage));
    ADD_FAILURE() << "plan() ran without CUDA";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("built without CUDA"), std::string::npos) << e.what();
  }
#endif
}

TEST(Registry, SupportsSaysNoInWords) {
  const Method* flash2 = builtin_registry().find("flash2");
  ASSERT_NE(flash2, nullptr);
  Problem p;
  p.head_dim = 80;
  Support s = flash2->supports(p, Pass::Fwd, h100());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("head dims"), std::string::npos) << s.reason;

  p.head_dim = 64;
  p.block_r = 96;
  p.block_c = 48;
  s = flash2->supports(p, Pass::Fwd, h100());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("96x48"), std::string::npos) << s.reason;

  DeviceInfo t4 = h100();
  t4.cc_major = 7;
  t4.cc_minor = 5;
  p = Problem{};
  p.dtype = DType::BF16;
  s = flash2->supports(p, Pass::Fwd, t4);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("bf16"), std::string::npos) << s.reason;
}

TEST(Registry, DeterministicBackwardIsHonouredOrRefusedInWords) {
  Problem p;
  p.seqlen_q = 256;
  p.deterministic = true;
  for (const char* m : {"standard", "flash1", "flash2"}) {
    const Method* method = builtin_registry().find(m);
    EXPECT_TRUE(method->info().deterministic) << m;
    EXPECT_TRUE(method->supports(p, Pass::FwdBwd, h100()).ok) << m << ": " << method->supports(p, Pass::FwdBwd, h100()).reason;
  }
  p.pattern = "butterfly";
  const Method* sparse = builtin_registry().find("blocksparse_flash");
  const Support s = sparse->supports(p, Pass::Bwd, h100());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("no deterministic backward"), std::string::npos) << s.reason;
  EXPECT_TRUE(sparse->supports(p, Pass::Fwd, h100()).ok) << "the forward is deterministic already";
  EXPECT_TRUE(builtin_registry().find("blocksparse_standard")->supports(p, Pass::Bwd, h100()).ok);
}

TEST(Registry, Bf16FusedKernelsNeedCompute80Code) {
  DeviceInfo ptx75 = h100();  // an H100 running a CMAKE_CUDA_ARCHITECTURES=75-virtual build
  ptx75.kernel_ptx_arch = 75;
  ptx75.kernel_binary_arch = 90;
  Problem p;
  p.dtype = DType::BF16;
  for (const char* m : {"flash1", "flash2"}) {
    const Support s = builtin_registry().find(m)->supports(p, Pass::Fwd, ptx75);
    EXPECT_FALSE(s.ok) << m;
    EXPECT_NE(s.reason.find("compute_75"), std::string::npos) << s.reason;
  }
  p.pattern = "butterfly";
  EXPECT_FALSE(builtin_registry().find("blocksparse_flash")->supports(p, Pass::Fwd, ptx75).ok);
  p.pattern.clear();
  EXPECT_TRUE(builtin_registry().find("standard")->supports(p, Pass::Fwd, ptx75).ok) << "cuBLAS brings its own code";
  p.dtype = DType::F16;
  EXPECT_TRUE(builtin_registry().find("flash2")->supports(p, Pass::Fwd, ptx75).ok);
  ptx75.kernel_ptx_arch = 80;
  p.dtype = DType::BF16;
  EXPECT_TRUE(builtin_registry().find("flash2")->supports(p, Pass::Fwd, ptx75).ok);
}

TEST(Registry, Flash2PicksATileThatFitsSharedMemory) {
  const Method* flash2 = builtin_registry().find("flash2");
  Problem p;
  p.head_dim = 256;
  DeviceInfo small = h100();
  small.smem_per_block_optin = 48 * 1024;  // too small for any d=256 tile
  EXPECT_FALSE(flash2->supports(p, Pass::Fwd, small).ok);
  EXPECT_TRUE(flash2->supports(p, Pass::Fwd, h100()).ok);
}

// d = 256 backward: the split mma.sync kernel (Bc 64, eight warps) with Br 64 (222,208 bytes of
// shared memory) on an H100, Br 32 (145,920 bytes) on an A100 (164 KiB per block); refused with
// the smaller tile's bytes on a GPU with 99 KiB (RTX 3090).
TEST(Registry, Flash2BackwardAtHeadDim256) {
  const Method* flash2 = builtin_registry().find("flash2");
  Problem p;
  p.head_dim = 256;
  EXPECT_TRUE(flash2->supports(p, Pass::FwdBwd, h100()).ok);
  DeviceInfo a100 = h100();
  a100.smem_per_block_optin = 163 * 1024;
  EXPECT_TRUE(flash2->supports(p, Pass::FwdBwd, a100).ok);
  DeviceInfo rtx3090 = h100();
  rtx3090.smem_per_block_optin = 99 * 1024;
  const Support s = flash2->supports(p, Pass::Bwd, rtx3090);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("backward needs 145920 bytes"), std::string::npos) << s.reason;
}

TEST(Registry, ReferenceRefusesLargeShapes) {
  const Method* ref = builtin_registry().find("reference");
  Problem p;
  p.batch = 4; p.heads = 16; p.seqlen_q = 8192; p.head_dim = 128;
  const Support s = ref->supports(p, Pass::Fwd, h100());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("small shapes"), std::string::npos);
}

// The two materialized methods: `standard` (separate elementwise kernels) keeps the dropout mask
// for its backward, one byte per score element; `standard_fused` redraws it. Both say so when it
// does not fit.
TEST(Registry, StandardWorkspaceCountsTheDropoutMask) {
  Problem p;
  p.batch = 2;
  p.heads = 4;
  p.seqlen_q = 1000;
  p.seqlen_k = 600;
  const int64_t elements = 2 * 4 * 1000 * 600, scores = elements * 2;
  for (StandardKernels k : {StandardKernels::Separate, StandardKernels::Fused}) {
    p.dropout = 0.0;
    for (Pass pass : {Pass::Fwd, Pass::Bwd, Pass::FwdBwd}) EXPECT_EQ(standard_workspace(p, pass, k).total(), 2 * scores);
    p.dropout = 0.1;
    const int64_t mask = k == StandardKernels::Separate ? elements : 0;
    EXPECT_EQ(standard_workspace(p, Pass::Fwd, k).total(), 2 * scores + mask) << to_string(k);
    EXPECT_EQ(standard_workspace(p, Pass::Bwd, k).total(), 3 * scores + mask) << to_string(k);
    EXPECT_EQ(standard_workspace(p, Pass::FwdBwd, k).total(), 3 * scores + mask) << to_string(k);
  }
  // N = 32768, b 1, h 16, fp16, dropout: 3 score buffers of 32 GiB, and the mask's 16 GiB.
  p = Problem{};
  p.heads = 16;
  p.seqlen_q = 32768;
  p.dropout = 0.1;
  DeviceInfo dev = h100();
  dev.global_memory_bytes = int64_t(100) << 30;
  const Support fused = builtin_registry().find("standard_fused")->supports(p, Pass::FwdBwd, dev);
  EXPECT_TRUE(fused.ok) << fused.reason;  // 96 GiB + cuBLAS's 32 MiB
  const Support separate = builtin_registry().find("standard")->supports(p, Pass::FwdBwd, dev);
  EXPECT_FALSE(separate.ok);
  EXPECT_NE(separate.reason.find("dropout mask"), std::string::npos) << separate.reason;
  EXPECT_EQ(builtin_registry().find("standard")->info().deterministic, true);
  EXPECT_EQ(builtin_registry().find("standard_fused")->info().deterministic, true);
}

// Valid extents whose score matrix passes int64 bytes (b 1, h 16, N 440964096: 6.2e18 bytes of S,
// two buffers 1.2e19; the fuzzer's `flashio list -n 440964096 4`, a signed overflow before): both
// say no, S alone, without the workspace's int64 sums.
TEST(Registry, StandardRefusesAScoreMatrixPastInt64) {
  Problem p;
  p.heads = 16;
  p.seqlen_q = 440964096;
  ASSERT_FALSE(p.invalid_reason()) << *p.invalid_reason();
  for (const char* name : {"standard", "standard_fused"}) {
    const Support s = builtin_registry().find(name)->supports(p, Pass::Fwd, h100());
    EXPECT_FALSE(s.ok) << name;
    EXPECT_NE(s.reason.find("S alone"), std::string::npos) << name << ": " << s.reason;
  }
}
