// Hardware counters as the records carry them: which quantities the suite reports, the
// metric behind each on every GPU family (one table), and the record's `counters` object
// built from per-kernel raw values. Plain C++: the collection itself (CUPTI's range
// profiler) lives in bench/measure/cupti_profiler.cpp; this part is tested without a GPU.
//
// The record's `counters` object (documented in results/README.md):
//   status   "ok" | "unavailable" | "not_collected";  reason when not ok
//   set      "dram" | "full";  passes: replay passes the set needed
//   bytes    {dram_read, dram_write, l2_read, l2_write, l2_red, l2_atom}: totals over the
//            call's kernels, in bytes; a key is absent where the GPU lacks the metric
//   duration_s, metrics {raw metric → total}, absent {metric → reason},
//   kernels  [{name, launches, bytes{…}, duration_s, resources{…}}] in first-launch order;
//            resources (KernelResources) where the launch callbacks could read them — also
//            when the counters themselves are unavailable (then without bytes, duration_s)
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace flashio {

enum class CounterSet { Off, Dram, Full };
const char* to_string(CounterSet s);
std::optional<CounterSet> parse_counter_set(const std::string& s);

// One reported quantity and the hardware metric that measures it on a GPU family.
struct MetricDef {
  std::string key;            // "dram_read", … (bytes), "duration" (seconds), or an extra's name
  std::string metric;         // e.g. "dram__bytes_read.sum"; empty where the family lacks it
  double scale = 1.0;         // raw value × scale = the key's unit (32 for sectors, 1e-9 for ns)
  bool in_dram_set = false;   // part of `--counters dram` (and of `full`)
  bool extra = false;         // kept in `full` only where it adds no replay pass
  std::string absent_reason;  // why `metric` is empty on this family
};

struct MetricTable {
  std::string family;  // "turing", "ampere", "ada", "hopper", "blackwell"
  std::vector<MetricDef> defs;
};

// The table for a compute capability (7.5 T4, 8.0 A100, 8.6 RTX 3090, 8.9, 9.0 H100/H200,
// 10.x/12.x); throws std::invalid_argument below 7.5 (CUPTI's profiler needs Turing+).
MetricTable metric_table(int cc_major, int cc_minor);

// The metrics of `set` that this family has, in table order (extras included for Full).
std::vector<std::string> metrics_of(const MetricTable& t, CounterSet set);

// What a kernel launch used of the SM, read from the driver (cuFuncGetAttribute on the launched
// CUfunction, the occupancy API with the launch's block and dynamic shared memory) in the
// launch callbacks: registers decide how many blocks an SM holds (the DRAM model's wave), and
// local memory > 0 means spilled registers or a stack whose traffic no IO model counts.
struct KernelResources {
  int registers_per_thread = 0;
  int64_t local_bytes_per_thread = 0;  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: spills and stack frame
  int64_t static_smem_bytes = 0;       // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  int64_t dynamic_smem_bytes = 0;      // the launch's
  int block[3] = {0, 0, 0};            // the first launch's block and grid
  int grid[3] = {0, 0, 0};
  int max_blocks_per_sm = 0;  // cuOccupancyMaxActiveBlocksPerMultiprocessor for that launch; 0: unknown
  int threads() const { return block[0] * block[1] * block[2]; }
  nlohmann::json to_json() const;
};
// Throws std::invalid_argument on a malformed object.
KernelResources kernel_resources_from_json(const nlohmann::json& j);

// The readable name of a kernel from its mangled symbol: demangled, without the return type and
// the parameter list, everything else kept — namespaces, anonymous namespaces and template
// arguments: `_ZN7flashio9baselines12_GLOBAL__N_16kernelIfEEvPf` →
// `flashio::baselines::(anonymous namespace)::kernel<float>`. A name that does not demangle (a
// C kernel, a name already demangled) is returned without its parameter list.
std::string kernel_name(const std::string& mangled);

// Raw metric values of one profiled range (one kernel launch), as CUPTI evaluated them.
struct RangeValues {
  std::string kernel;                        // kernel name, or "range <i>" where unknown
  std::map<std::string, double> values;      // metric name → value
  std::optional<KernelResources> resources;  // where the launch callbacks read them
};

// The `kernels` array of a counters object without counter values: name, launches and
// resources per kernel in first-launch order (the counters were unavailable, the launch
// callbacks were not).
nlohmann::json kernels_without_counters(const std::vector<RangeValues>& launches);

// The record's counters object from the ranges of one call. `absent` names the table's
// metrics that were not collected (missing on this family, dropped to stay in one pass).
nlohmann::json counters_json(const MetricTable& t, CounterSet set, int passes, const std::vector<RangeValues>& ranges,
                             const std::map<std::string, std::string>& absent);

// The counters object of a record whose counters could not be read, with the reason.
nlohmann::json counters_unavailable(const std::string& reason);
nlohmann::json counters_not_collected(const std::string& reason);

}  // namespace flashio
