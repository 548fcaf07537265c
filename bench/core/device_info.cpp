#include "bench/core/device_info.h"

#include <cctype>
#include <utility>

#include <fmt/format.h>


namespace flashio {

std::string DeviceInfo::slug() const {
  std::string s;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      s += char(std::tolower(static_cast<unsigned char>(c)));
    } else if (!s.empty() && s.back() != '-') {
      s += '-';
    }
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "gpu" : s;
}

DeviceInfo h100_sxm(std::string name) {
  DeviceInfo d;
  d.name = std::move(name);
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.smem_per_sm = 233472;
  d.smem_per_block_optin = 232448;
  d.l2_bytes = int64_t(50) << 20;
  d.global_memory_bytes = int64_t(80) << 30;
  return d;
}

nlohmann::json to_json(const DeviceInfo& d) {
  return {{"index", d.index},
          {"name", d.name},
          {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
          {"sm_count", d.sm_count},
          {"smem_per_sm_bytes", d.smem_per_sm},
          {"smem_per_block_optin_bytes", d.smem_per_block_optin},
          {"l2_bytes", d.l2_bytes},
          {"global_memory_bytes", d.global_memory_bytes},
          {"memory_clock_khz", d.memory_clock_khz},
          {"bus_width_bits", d.bus_width_bits},
          {"peak_bandwidth_bytes_per_s", d.peak_bandwidth_bytes_per_s()},
          {"sm_clock_khz", d.sm_clock_khz},
          {"driver_version", d.driver_version},
          {"runtime_version", d.runtime_version},
          {"ecc", d.ecc}};
}

DeviceInfo device_from_json(const nlohmann::json& j) {
  DeviceInfo d;
  d.index = j.value("index", 0);
  d.name = j.value("name", std::string());
  const std::string cc = j.value("compute_capability", std::string("0.0"));
  if (std::sscanf(cc.c_str(), "%d.%d", &d.cc_major, &d.cc_minor) != 2) d.cc_major = d.cc_minor = 0;
  d.sm_count = j.value("sm_count", 0);
  d.smem_per_sm = j.value("smem_per_sm_bytes", int64_t(0));
  d.smem_per_block_optin = j.value("smem_per_block_optin_bytes", int64_t(0));
  d.l2_bytes = j.value("l2_bytes", int64_t(0));
  d.global_memory_bytes = j.value("global_memory_bytes", int64_t(0));
  d.memory_clock_khz = j.value("memory_clock_khz", int64_t(0));
  d.bus_width_bits = j.value("bus_width_bits", 0);
  d.sm_clock_khz = j.value("sm_clock_khz", int64_t(0));
  d.driver_version = j.value("driver_version", 0);
  d.runtime_version = j.value("runtime_version", 0);
  d.ecc = j.value("ecc", false);
  return d;
}

}  // namespace flashio
