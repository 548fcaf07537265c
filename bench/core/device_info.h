// The GPU a result was measured on: everything a reader of a result file needs to
// compare it with another GPU's. Plain data; query_device() (bench/cuda/device_query.h) fills it from the runtime.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace flashio {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t smem_per_sm = 0;            // bytes
  int64_t smem_per_block_optin = 0;   // bytes a block may use after opting in
  int64_t l2_bytes = 0;
  int64_t global_memory_bytes = 0;
  int64_t memory_clock_khz = 0;       // peak
  int bus_width_bits = 0;
  int64_t sm_clock_khz = 0;           // peak
  int driver_version = 0;             // e.g. 13000
  int runtime_version = 0;
  bool ecc = false;
  // The fused kernels (flash1, flash2, blocksparse_flash) as this binary loads them on this GPU
  // (cudaFuncGetAttributes): the virtual architecture their code was generated for (75 =
  // compute_75 PTX, whose bf16 mma traps) and that of the machine code running (its SASS, or
  // the driver's JIT of the PTX). 0 = unknown (not queried): no restriction. Not in to_json.
  int kernel_ptx_arch = 0;
  int kernel_binary_arch = 0;

  int compute_capability() const { return cc_major * 10 + cc_minor; }
  // DDR: two transfers per clock over the bus.
  double peak_bandwidth_bytes_per_s() const {
    return 2.0 * double(memory_clock_khz) * 1e3 * double(bus_width_bits) / 8.0;
  }
  std::string slug() const;  // "nvidia-h100-80gb-hbm3": lower case, for file names
};

nlohmann::json to_json(const DeviceInfo& d);
// An H100 SXM as the runtime reports it (132 SMs, 228 KiB of shared memory per SM, 227 KiB a block
// may opt into, 50 MiB of L2, 80 GiB), named `name`: what is judged for where no GPU is at hand.
DeviceInfo h100_sxm(std::string name);
DeviceInfo device_from_json(const nlohmann::json& j);

}  // namespace flashio
