// Figures of GPUs the user may not have, for `flashio predict` and for "% of peak" in
// `flashio compare`. Every figure carries its source (see gpus.cpp).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace flashio::analysis {

struct GpuFigures {
  std::string key;                   // what --gpu takes: t4, a100-40gb, ...
  std::string name;                  // marketing name, as cudaGetDeviceProperties spells it
  std::vector<std::string> aliases;  // lower-case substrings of device names that mean this GPU
  int sm_count = 0;
  int64_t smem_per_sm_bytes = 0;
  int64_t smem_per_block_optin_bytes = 0;
  int64_t l2_bytes = 0;
  double dram_bytes_per_s = 0;
  double peak_fp16_tensor_flops = 0;  // dense, fp32 accumulation
  double peak_bf16_tensor_flops = 0;  // 0: no bf16 tensor cores
  int max_threads_per_sm = 2048;
};

const std::vector<GpuFigures>& gpu_table();
// By key (t4, a100-80gb, ...) or by a device name from a result file ("NVIDIA H200").
std::optional<GpuFigures> find_gpu(const std::string& key_or_name);

// A GPU described by the user: the JSON `flashio device --json` prints (name, compute_capability,
// sm_count, smem_per_sm_bytes, smem_per_block_optin_bytes, l2_bytes, peak_bandwidth_bytes_per_s)
// with "peak_fp16_tensor_flops" added (dense FP16 tensor-core FLOP/s with FP32 accumulation,
// from the datasheet; "peak_bf16_tensor_flops" likewise, default the same). Threads per SM
// follow the compute capability. Throws std::invalid_argument naming `source` and what is missing.
GpuFigures gpu_from_spec(const nlohmann::json& spec, const std::string& source);

}  // namespace flashio::analysis
