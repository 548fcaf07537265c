// The built-in GPU table. Peak tensor FLOP/s are dense (no 2:4 sparsity) with fp32
// accumulation, the mode the fused kernels use. Shared memory per SM and the per-block opt-in
// limit are the CUDA C++ Programming Guide's "Technical Specifications per Compute
// Capability" table (sm_75: 64 KB; sm_80: 164 KB / 163 KB; sm_86, sm_89: 100 KB / 99 KB;
// sm_90: 228 KB / 227 KB).
#include "analysis/gpus.h"

#include <algorithm>
#include <cctype>

namespace flashio::analysis {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

constexpr int64_t KiB = 1024, MiB = 1024 * 1024;

}  // namespace

const std::vector<GpuFigures>& gpu_table() {
  static const std::vector<GpuFigures> table = {
      // NVIDIA T4 datasheet: 320 GB/s, 65 TFLOPS mixed precision (FP16/FP32); Turing TU104:
      // 40 SMs, 4 MB L2 (NVIDIA Turing GPU Architecture whitepaper, Table 1/3). sm_75: no bf16.
      {"t4", "Tesla T4", {"t4"}, 40, 64 * KiB, 64 * KiB, 4 * MiB, 320e9, 65e12, 0, 1024},
      // NVIDIA A100 Tensor Core GPU Architecture whitepaper (Table 1/3): 108 SMs, 40 MB L2,
      // 312 TFLOPS FP16/BF16 dense; A100 datasheet: 1,555 GB/s (40 GB HBM2).
      {"a100-40gb",
       "NVIDIA A100-SXM4-40GB",
       {"a100-sxm4-40gb", "a100-pcie-40gb", "a100 40gb"},
       108,
       164 * KiB,
       163 * KiB,
       40 * MiB,
       1555e9,
       312e12,
       312e12},
      // A100 datasheet: 80 GB HBM2e at 2,039 GB/s (SXM); otherwise as the 40 GB part.
      {"a100-80gb",
       "NVIDIA A100-SXM4-80GB",
       {"a100-sxm4-80gb", "a100 80gb", "a100-pcie-80gb", "a100"},
       108,
       164 * KiB,
       163 * KiB,
       40 * MiB,
       2039e9,
       312e12,
       312e12},
      // NVIDIA Ampere GA102 GPU Architecture whitepaper (Appendix A, Table 9): RTX 3090, 82 SMs,
      // 6 MB L2, 936 GB/s, peak FP16 tensor TFLOPS with FP32 accumulate 71 (dense; BF16 the same).
      {"rtx3090",
       "NVIDIA GeForce RTX 3090",
       {"rtx 3090", "rtx3090"},
       82,
       100 * KiB,
       99 * KiB,
       6 * MiB,
       936e9,
       71e12,
       71e12,
       1536},
      // NVIDIA L4 datasheet: 121 TFLOPS FP16/BF16 dense (242 with sparsity), 300 GB/s; AD104:
      // 58 SMs, 48 MB L2 (NVIDIA Ada GPU Architecture whitepaper, Appendix).
      {"l4", "NVIDIA L4", {"l4"}, 58, 100 * KiB, 99 * KiB, 48 * MiB, 300e9, 121e12, 121e12, 1536},
      // NVIDIA A10 datasheet: 125 TFLOPS FP16/BF16 dense (250 with sparsity), 600 GB/s; GA102:
      // 72 SMs, 6 MB L2.
      {"a10", "NVIDIA A10", {"a10"}, 72, 100 * KiB, 99 * KiB, 6 * MiB, 600e9, 125e12, 125e12, 1536},
      // NVIDIA H100 datasheet (SXM5): 3.35 TB/s, 989 TFLOPS FP16/BF16 dense (1,979 with sparsity);
      // NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs, 50 MB L2.
      {"h100-sxm", "NVIDIA H100 80GB HBM3", {"h100"}, 132, 228 * KiB, 227 * KiB, 50 * MiB, 3.35e12, 989e12, 989e12},
      // NVIDIA H200 datasheet (SXM): 4.8 TB/s, 989 TFLOPS FP16/BF16 dense; 132 SMs; L2 60 MiB as
      // cudaDevAttrL2CacheSize reports it (results/nvidia-h200-*.json, DESIGN.md).
      {"h200", "NVIDIA H200", {"h200"}, 132, 228 * KiB, 227 * KiB, 60 * MiB, 4.8e12, 989e12, 989e12},
  };
  return table;
}

std::optional<GpuFigures> find_gpu(const std::string& key_or_name) {
  const std::string k = lower(key_or_name);
  for (const auto& g : gpu_table())
    if (g.key == k) return g;
  for (const auto& g : gpu_table())
    for (const auto& a : g.aliases)
      if (k.find(a) != std::string::npos) return g;
  return std::nullopt;
}

}  // namespace flashio::analysis
