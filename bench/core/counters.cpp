#include "bench/core/counters.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>

namespace flashio {

const char* to_string(CounterSet s) {
  switch (s) {
    case CounterSet::Off:
      return "off";
    case CounterSet::Dram:
      return "dram";
    case CounterSet::Full:
      return "full";
  }
  return "?";
}

std::optional<CounterSet> parse_counter_set(const std::string& s) {
  if (s == "off") return CounterSet::Off;
  if (s == "dram") return CounterSet::Dram;
  if (s == "full") return CounterSet::Full;
  return std::nullopt;
}

namespace {

constexpr double kSectorBytes = 32.0;  // L2 sectors are 32 bytes on every family here
constexpr double kNanosecond = 1e-9;

// The quantities every family reports. Names were read with ncu and CUPTI on an H200
// (DESIGN.md, "What the counters see"); the same names exist on Turing, Ampere and Ada
// (Nsight Compute's metric tables for TU10x, GA10x, AD10x). Anything a particular chip
// does not expose is found at run time and recorded as absent with that reason.
std::vector<MetricDef> common_defs() {
  return {
      // DRAM ↔ L2.
      {"dram_read", "dram__bytes_read.sum", 1.0, true, false, {}},
      {"dram_write", "dram__bytes_write.sum", 1.0, true, false, {}},
      // SM ↔ L2: what the SMs read from L2 (global loads, cp.async and TMA alike), what
      // they write, and L2 reductions / atomics (FA-2's fp32 dQ accumulation shows here).
      {"l2_read", "l1tex__m_xbar2l1tex_read_bytes.sum", 1.0, false, false, {}},
      {"l2_write", "lts__t_sectors_srcunit_tex_op_write.sum", kSectorBytes, false, false, {}},
      {"l2_red", "lts__t_sectors_op_red.sum", kSectorBytes, false, false, {}},
      {"l2_atom", "lts__t_sectors_op_atom.sum", kSectorBytes, false, false, {}},
      {"duration", "gpu__time_duration.sum", kNanosecond, true, false, {}},
      // Extras: kept only where they add no replay pass.
      {"smem_wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 1.0, false, true, {}},
  };
}

}  // namespace

MetricTable metric_table(int cc_major, int cc_minor) {
  if (cc_major < 7 || (cc_major == 7 && cc_minor < 5))
    throw std::invalid_argument(fmt::format(
        "compute capability {}.{}: CUPTI's range profiler needs Turing (7.5) or newer", cc_major, cc_minor));
  MetricTable t;
  t.defs = common_defs();
  if (cc_major == 7) {
    t.family = "turing";  // T4
    t.defs.push_back({"tensor_cycles", "sm__pipe_tensor_cycles_active.sum", 1.0, false, true, {}});
  } else if (cc_major == 8) {
    t.family = cc_minor == 9 ? "ada" : "ampere";  // A100 (8.0), RTX 3090 (8.6), L4 (8.9)
    t.defs.push_back({"tensor_cycles", "sm__pipe_tensor_op_hmma_cycles_active.sum", 1.0, false, true, {}});
  } else if (cc_major == 9) {
    t.family = "hopper";  // H100, H200: mma.sync shows as hmma, wgmma as gmma
    t.defs.push_back({"tensor_cycles", "sm__pipe_tensor_op_hmma_cycles_active.sum", 1.0, false, true, {}});
    t.defs.push_back({"tensor_gmma_cycles", "sm__pipe_tensor_op_gmma_cycles_active.sum", 1.0, false, true, {}});
  } else {
    t.family = "blackwell";  // names as on Hopper; availability is checked at run time
    t.defs.push_back({"tensor_cycles", "sm__pipe_tensor_op_hmma_cycles_active.sum", 1.0, false, true, {}});
  }
  if (cc_major != 9)
    t.defs.push_back({"tensor_gmma_cycles", "", 1.0, false, true, "wgmma (gmma) exists only on Hopper (sm_90)"});
  return t;
}

std::vector<std::string> metrics_of(const MetricTable& t, CounterSet set) {
  std::vector<std::string> out;
  if (set == CounterSet::Off) return out;
  for (const auto& d : t.defs) {
    if (d.metric.empty()) continue;
    if (set == CounterSet::Dram && !d.in_dram_set) continue;
    out.push_back(d.metric);
  }
  return out;
}

namespace {

bool is_byte_key(const std::string& key) { return key.rfind("l2_", 0) == 0 || key.rfind("dram_", 0) == 0; }

// bytes{…}, duration_s and extras of one set of raw values.
void fill_level(const MetricTable& t, const std::map<std::string, double>& values, nlohmann::json& bytes,
                double& duration_s, nlohmann::json* extras) {
  for (const auto& d : t.defs) {
    auto it = values.find(d.metric);
    if (d.metric.empty() || it == values.end()) continue;
    const double v = it->second * d.scale;
    if (d.key == "duration") {
      duration_s += v;
    } else if (is_byte_key(d.key)) {
      bytes[d.key] = static_cast<int64_t>(v + 0.5);
    } else if (extras) {
      (*extras)[d.key] = v;
    }
  }
}

}  // namespace

nlohmann::json KernelResources::to_json() const {
  return {{"registers_per_thread", registers_per_thread}, {"local_bytes_per_thread", local_bytes_per_thread},
          {"static_smem_bytes", static_smem_bytes},       {"dynamic_smem_bytes", dynamic_smem_bytes},
          {"block", {block[0], block[1], block[2]}},      {"grid", {grid[0], grid[1], grid[2]}},
          {"max_blocks_per_sm", max_blocks_per_sm}};
}

KernelResources kernel_resources_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("kernel resources: not an object");
  KernelResources r;
  try {
    r.registers_per_thread = j.at("registers_per_thread").get<int>();
    r.local_bytes_per_thread = j.at("local_bytes_per_thread").get<int64_t>();
    r.static_smem_bytes = j.value("static_smem_bytes", int64_t(0));
    r.dynamic_smem_bytes = j.value("dynamic_smem_bytes", int64_t(0));
    r.max_blocks_per_sm = j.value("max_blocks_per_sm", 0);
    for (const char* key : {"block", "grid"}) {
      if (!j.contains(key)) continue;
      const auto& a = j.at(key);
      if (!a.is_array() || a.size() != 3) throw std::invalid_argument(std::string("kernel resources: ") + key);
      for (int i = 0; i < 3; ++i) (std::string(key) == "block" ? r.block : r.grid)[i] = a[size_t(i)].get<int>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("kernel resources: ") + e.what());
  }
  return r;
}

namespace {

// Per kernel name in first-launch order: launches and the first launch's resources.
struct KernelOrder {
  std::vector<std::string> order;
  std::map<std::string, int> launches;
  std::map<std::string, KernelResources> resources;
  explicit KernelOrder(const std::vector<RangeValues>& ranges) {
    for (const auto& r : ranges) {
      if (!launches.count(r.kernel)) order.push_back(r.kernel);
      ++launches[r.kernel];
      if (r.resources && !resources.count(r.kernel)) resources[r.kernel] = *r.resources;
    }
  }
  nlohmann::json entry(const std::string& name) const {
    nlohmann::json k = {{"name", name}, {"launches", launches.at(name)}};
    if (resources.count(name)) k["resources"] = resources.at(name).to_json();
    return k;
  }
};

}  // namespace

nlohmann::json kernels_without_counters(const std::vector<RangeValues>& launches) {
  const KernelOrder ko(launches);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& name : ko.order) out.push_back(ko.entry(name));
  return out;
}

nlohmann::json counters_json(const MetricTable& t, CounterSet set, int passes, const std::vector<RangeValues>& ranges,
                             const std::map<std::string, std::string>& absent) {
  nlohmann::json j;
  j["status"] = "ok";
  j["set"] = to_string(set);
  j["passes"] = passes;
  j["family"] = t.family;

  // Totals over every range, and per kernel name in first-launch order.
  std::map<std::string, double> total;
  const KernelOrder ko(ranges);
  std::map<std::string, std::map<std::string, double>> per_kernel;
  for (const auto& r : ranges) {
    auto& k = per_kernel[r.kernel];
    for (const auto& [m, v] : r.values) {
      total[m] += v;
      k[m] += v;
    }
  }
  nlohmann::json bytes = nlohmann::json::object(), extras = nlohmann::json::object();
  double duration = 0.0;
  fill_level(t, total, bytes, duration, &extras);
  j["bytes"] = bytes;
  j["duration_s"] = duration;
  if (!extras.empty()) j["extras"] = extras;
  j["metrics"] = nlohmann::json::object();
  for (const auto& [m, v] : total) j["metrics"][m] = v;
  j["absent"] = nlohmann::json::object();
  for (const auto& [m, why] : absent) j["absent"][m] = why;
  j["kernels"] = nlohmann::json::array();
  for (const auto& name : ko.order) {
    nlohmann::json kb = nlohmann::json::object();
    double kd = 0.0;
    fill_level(t, per_kernel[name], kb, kd, nullptr);
    nlohmann::json k = ko.entry(name);
    k["bytes"] = kb;
    k["duration_s"] = kd;
    j["kernels"].push_back(k);
  }
  return j;
}

std::string kernel_name(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string s = (status == 0 && d) ? d : mangled;
  std::free(d);
  // The parameter list is the last top-level parenthesis group, and only when the name ends with
  // it: `(anonymous namespace)` is a parenthesis group too, but a name never ends with one.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        s.resize(i);
        break;
      }
    }
  }
  // The return type: the demangler writes one for template functions (`void ns::k<float>`), up to
  // the last space outside `<…>` and `(…)` (a space in `(anonymous namespace)` or `<unsigned int>`
  // is part of the name).
  int angle = 0, paren = 0;
  size_t name_start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    angle += c == '<' ? 1 : c == '>' ? -1 : 0;
    paren += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ' ' && angle == 0 && paren == 0) name_start = i + 1;
  }
  return s.substr(name_start);
}

nlohmann::json counters_unavailable(const std::string& reason) {
  return {{"status", "unavailable"}, {"reason", reason}};
}

nlohmann::json counters_not_collected(const std::string& reason) {
  return {{"status", "not_collected"}, {"reason", reason}};
}

}  // namespace flashio
