// The built-in GPU table. Peak tensor FLOP/s are dense (no 2:4 sparsity) with fp32
// accumulation, the mode the fused kernels use. Shared memory per SM and the per-block opt-in
// limit are the CUDA C++ Programming Guide's "Technical Specifications per Compute
// Capability" table (sm_75: 64 KB; sm_80: 164 KB / 163 KB; sm_86, sm_89: 100 KB / 99 KB;
// sm_90: 228 KB / 227 KB).
#include "analysis/gpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

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
      // NVIDIA L40S datasheet: 864 GB/s, 362.05 TFLOPS FP16/BF16 tensor dense (733 with sparsity),
      // 568 fourth-generation tensor cores (4 per SM: 142 SMs). The datasheet gives no L2: 96 MB is
      // AD102's (NVIDIA Ada GPU Architecture whitepaper), which the L40 (same 142-SM AD102) reports;
      // describe a real L40S with `flashio device --json` and --gpu-spec where this matters. Before the
      // L4 entry: its "l4" alias would match "NVIDIA L40S" too.
      {"l40s", "NVIDIA L40S", {"l40s"}, 142, 100 * KiB, 99 * KiB, 96 * MiB, 864e9, 362e12, 362e12, 1536},
      // NVIDIA L4 datasheet: 121 TFLOPS FP16/BF16 dense (242 with sparsity), 300 GB/s; AD104:
      // 58 SMs, 48 MB L2 (NVIDIA Ada GPU Architecture whitepaper, Appendix).
      {"l4", "NVIDIA L4", {"l4"}, 58, 100 * KiB, 99 * KiB, 48 * MiB, 300e9, 121e12, 121e12, 1536},
      // NVIDIA Ada GPU Architecture whitepaper (Appendix A, Table 2): GeForce RTX 4090, 128 SMs,
      // 72 MB L2, 1,008 GB/s, peak FP16 tensor TFLOPS with FP32 accumulate 165.2 (dense; the
      // GeForce part runs FP32 accumulation at half the FP16-accumulate rate; BF16 the same).
      {"rtx4090",
       "NVIDIA GeForce RTX 4090",
       {"rtx 4090", "rtx4090"},
       128,
       100 * KiB,
       99 * KiB,
       72 * MiB,
       1008e9,
       165.2e12,
       165.2e12,
       1536},
      // NVIDIA A10 datasheet: 125 TFLOPS FP16/BF16 dense (250 with sparsity), 600 GB/s; GA102:
      // 72 SMs, 6 MB L2.
      {"a10", "NVIDIA A10", {"a10"}, 72, 100 * KiB, 99 * KiB, 6 * MiB, 600e9, 125e12, 125e12, 1536},
      // NVIDIA H100 datasheet (PCIe): 2 TB/s, 756 TFLOPS FP16/BF16 dense (1,513 with sparsity);
      // NVIDIA H100 Tensor Core GPU Architecture whitepaper (Table 3): H100 PCIe 114 SMs, 50 MB L2.
      // Before the SXM entry: its "h100" alias would match "NVIDIA H100 PCIe" too.
      {"h100-pcie",
       "NVIDIA H100 PCIe",
       {"h100 pcie", "h100-pcie"},
       114,
       228 * KiB,
       227 * KiB,
       50 * MiB,
       2.0e12,
       756e12,
       756e12},
      // NVIDIA H100 datasheet (SXM5): 3.35 TB/s, 989 TFLOPS FP16/BF16 dense (1,979 with sparsity);
      // NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs, 50 MB L2.
      {"h100-sxm", "NVIDIA H100 80GB HBM3", {"h100"}, 132, 228 * KiB, 227 * KiB, 50 * MiB, 3.35e12, 989e12, 989e12},
      // NVIDIA H200 datasheet (SXM): 4.8 TB/s, 989 TFLOPS FP16/BF16 dense; 132 SMs; L2 60 MiB as
      // cudaDevAttrL2CacheSize reports it (results/nvidia-h200-*.json, DESIGN.md).
      {"h200", "NVIDIA H200", {"h200"}, 132, 228 * KiB, 227 * KiB, 60 * MiB, 4.8e12, 989e12, 989e12},
  };
  return table;
}

GpuFigures gpu_from_spec(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw std::invalid_argument(source + ": not a JSON object (expected flashio device --json)");
  auto number = [&](const char* key, bool required) -> double {
    if (j.contains(key) && j[key].is_number() && j[key].get<double>() > 0) return j[key].get<double>();
    if (!required) return 0;
    if (std::string(key).rfind("peak_fp16", 0) == 0)
      throw std::invalid_argument(fmt::format(
          "{}: no \"peak_fp16_tensor_flops\": add the GPU's dense FP16 tensor FLOP/s (FP32 accumulate) from its "
          "datasheet to the flashio device --json output",
          source));
    throw std::invalid_argument(fmt::format("{}: no positive \"{}\" (expected flashio device --json)", source, key));
  };
  GpuFigures g;
  g.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : std::string();
  if (g.name.empty()) throw std::invalid_argument(source + ": no \"name\" (expected flashio device --json)");
  g.key = lower(g.name);
  g.sm_count = int(number("sm_count", true));
  g.smem_per_sm_bytes = int64_t(number("smem_per_sm_bytes", true));
  g.smem_per_block_optin_bytes = int64_t(number("smem_per_block_optin_bytes", true));
  g.l2_bytes = int64_t(number("l2_bytes", true));
  g.dram_bytes_per_s = number("peak_bandwidth_bytes_per_s", true);
  g.peak_fp16_tensor_flops = number("peak_fp16_tensor_flops", true);
  g.peak_bf16_tensor_flops = number("peak_bf16_tensor_flops", false);
  if (g.peak_bf16_tensor_flops == 0) g.peak_bf16_tensor_flops = g.peak_fp16_tensor_flops;
  // CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": resident
  // threads per SM.
  const std::string cc = j.contains("compute_capability") && j["compute_capability"].is_string()
                             ? j["compute_capability"].get<std::string>()
                             : std::string();
  if (cc == "7.5")
    g.max_threads_per_sm = 1024;
  else if (cc == "8.6" || cc == "8.7" || cc == "8.9")
    g.max_threads_per_sm = 1536;
  else if (cc.empty())
    throw std::invalid_argument(source + ": no \"compute_capability\" (expected flashio device --json)");
  return g;
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
