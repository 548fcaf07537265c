// Hardware counters as the records carry them: which quantities the suite reports, the
// metric behind each on every GPU family (one table), and the record's `counters` object
// built from per-kernel raw values. Plain C++: the collection itself (CUPTI's range
// profiler) lives in bench/cupti_profiler.cpp; this part is tested without a GPU.
//
// The record's `counters` object (documented in results/README.md):
//   status   "ok" | "unavailable" | "not_collected";  reason when not ok
//   set      "dram" | "full";  passes: replay passes the set needed
//   bytes    {dram_read, dram_write, l2_read, l2_write, l2_red, l2_atom}: totals over the
//            call's kernels, in bytes; a key is absent where the GPU lacks the metric
//   duration_s, metrics {raw metric → total}, absent {metric → reason},
//   kernels  [{name, launches, bytes{…}, duration_s}] in first-launch order
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flashio {

enum class CounterSet { Off, Dram, Full };
const char* to_string(CounterSet s);
std::optional<CounterSet> parse_counter_set(const std::string& s);

// One reported quantity and the hardware metric that measures it on a GPU family.
struct MetricDef {
  std::string key;          // "dram_read", … (bytes), "duration" (seconds), or an extra's name
  std::string metric;       // e.g. "dram__bytes_read.sum"; empty where the family lacks it
  double scale = 1.0;       // raw value × scale = the key's unit (32 for sectors, 1e-9 for ns)
  bool in_dram_set = false; // part of `--counters dram` (and of `full`)
  bool extra = false;       // kept in `full` only where it adds no replay pass
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

// Raw metric values of one profiled range (one kernel launch), as CUPTI evaluated them.
struct RangeValues {
  std::string kernel;                     // kernel name, or "range <i>" where unknown
  std::map<std::string, double> values;   // metric name → value
};

// The record's counters object from the ranges of one call. `absent` names the table's
// metrics that were not collected (missing on this family, dropped to stay in one pass).
nlohmann::json counters_json(const MetricTable& t, CounterSet set, int passes, const std::vector<RangeValues>& ranges,
                             const std::map<std::string, std::string>& absent);

// The counters object of a record whose counters could not be read, with the reason.
nlohmann::json counters_unavailable(const std::string& reason);
nlohmann::json counters_not_collected(const std::string& reason);

}  // namespace flashio
