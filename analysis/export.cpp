// flashio export; see export.h.
#include "analysis/export.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "analysis/gpus.h"
#include "bench/core/json_input.h"
#include "bench/core/record.h"
#include "bench/core/safe_write.h"

namespace flashio::analysis {

namespace {

using json = nlohmann::json;

// The value at `key` of `obj` if it is a number, else null.
json number_at(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return nullptr;
  return obj[key];
}
json string_at(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) return nullptr;
  return obj[key];
}
json bool_at(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_boolean()) return nullptr;
  return obj[key];
}
const json& object_at(const json& obj, const char* key) {
  static const json empty = json::object();
  return obj.is_object() && obj.contains(key) && obj[key].is_object() ? obj[key] : empty;
}

struct Row {
  const std::string& path;
  const json& doc;
  const json& rec;
};

// The record's median time if it was timed (> 0).
std::optional<double> median_of(const json& rec) {
  const json t = number_at(object_at(rec, "time"), "median_s");
  if (t.is_null() || t.get<double>() <= 0) return std::nullopt;
  return t.get<double>();
}

// The dense tensor-core peak of the file's GPU for the record's dtype, from the built-in table.
std::optional<double> peak_of(const Row& r) {
  const json name = string_at(object_at(r.doc, "device"), "name");
  if (name.is_null()) return std::nullopt;
  const auto g = find_gpu(name.get<std::string>());
  if (!g) return std::nullopt;
  const double p =
      string_at(object_at(r.rec, "problem"), "dtype") == "bf16" ? g->peak_bf16_tensor_flops : g->peak_fp16_tensor_flops;
  if (p <= 0) return std::nullopt;
  return p;
}

json counter_bytes(const Row& r, const char* key) {
  const json& c = object_at(r.rec, "counters");
  if (string_at(c, "status") != "ok") return nullptr;
  return number_at(object_at(c, "bytes"), key);
}

struct Column {
  ExportColumn c;
  std::function<json(const Row&)> value;
};

json problem_value(const Row& r, const char* key) {
  const json& p = object_at(r.rec, "problem");
  return p.contains(key) && !p[key].is_object() && !p[key].is_array() ? p[key] : json(nullptr);
}

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = [] {
    std::vector<Column> c = {
        {{"file", "the result file, as given"}, [](const Row& r) { return json(r.path); }},
        {{"gpu", "the device name the file was measured on"},
         [](const Row& r) { return string_at(object_at(r.doc, "device"), "name"); }},
        {{"revision", "git revision of the build (build.git_revision)"},
         [](const Row& r) { return string_at(object_at(r.doc, "build"), "git_revision"); }},
        {{"dirty", "the build had uncommitted changes"},
         [](const Row& r) { return bool_at(object_at(r.doc, "build"), "git_dirty"); }},
        {{"run_id", "the run's id (one per flashio run)"}, [](const Row& r) { return string_at(r.doc, "run_id"); }},
        {{"producer", "flashio, scripts/peers_sdpa.py or published"},
         [](const Row& r) { return string_at(r.doc, "producer"); }},
        {{"name", "the point's name (method/pass/axes)"}, [](const Row& r) { return string_at(r.rec, "name"); }},
        {{"method", "the attention method"}, [](const Row& r) { return string_at(r.rec, "method"); }},
        {{"pass", "fwd, bwd or fwdbwd"}, [](const Row& r) { return string_at(r.rec, "pass"); }},
        {{"kernel_path",
          "tensor-core instruction the fused kernel ran (wgmma, mma.sync); empty/null where not recorded"},
         [](const Row& r) { return string_at(object_at(r.rec, "tiles"), "mma"); }},
        {{"tile_block_r", "the kernel's tile rows Br"},
         [](const Row& r) { return number_at(object_at(r.rec, "tiles"), "block_r"); }},
        {{"tile_block_c", "the kernel's tile columns Bc"},
         [](const Row& r) { return number_at(object_at(r.rec, "tiles"), "block_c"); }},
        {{"tile_warps", "warps per thread block"},
         [](const Row& r) { return number_at(object_at(r.rec, "tiles"), "warps"); }},
    };
    // Every problem axis, as the record's problem writes it (bench/core/problem.cpp).
    const std::vector<std::pair<const char*, const char*>> axes = {
        {"batch", "batch"},
        {"heads", "query heads"},
        {"kv_heads", "key/value heads"},
        {"seqlen_q", "query sequence length N"},
        {"seqlen_k", "key sequence length"},
        {"head_dim", "head dimension d"},
        {"dtype", "fp16 or bf16"},
        {"causal", "causal mask"},
        {"padding", "key padding: none or random"},
        {"dropout", "dropout probability"},
        {"deterministic", "bitwise-reproducible backward (absent: false)"},
        {"block_r", "forced tile rows (0: the method's choice)"},
        {"block_c", "forced tile columns (0: the method's choice)"},
        {"mma", "forced tensor-core instruction (absent: auto)"},
        {"pattern", "block-sparse pattern"},
        {"density", "fraction of non-zero blocks of the pattern"},
        {"sparse_block", "block size of the pattern"},
        {"seed", "input and dropout seed"},
        {"softmax_scale", "softmax scale"},
    };
    for (const auto& [key, what] : axes) {
      const std::string k = key;
      c.push_back({{k, what}, [k](const Row& r) {
                     json v = problem_value(r, k.c_str());
                     if (v.is_null() && k == "deterministic" && r.rec.contains("problem")) v = false;
                     return v;
                   }});
    }
    const std::vector<Column> rest = {
        {{"flop",
          "floating-point operations of the pass (4·B·H·Nq·Nk·d forward, halved for causal; ×2.5 bwd, ×3.5 fwdbwd)"},
         [](const Row& r) { return number_at(r.rec, "flops"); }},
        {{"median_s", "median time of the timed repetitions, seconds"},
         [](const Row& r) { return number_at(object_at(r.rec, "time"), "median_s"); }},
        {{"min_s", "fastest repetition, seconds"},
         [](const Row& r) { return number_at(object_at(r.rec, "time"), "min_s"); }},
        {{"max_s", "slowest repetition, seconds"},
         [](const Row& r) { return number_at(object_at(r.rec, "time"), "max_s"); }},
        {{"stddev_s", "standard deviation of the repetitions, seconds"},
         [](const Row& r) { return number_at(object_at(r.rec, "time"), "stddev_s"); }},
        {{"reps", "timed repetitions"}, [](const Row& r) { return number_at(object_at(r.rec, "time"), "reps"); }},
        {{"flop_per_s", "flop / median_s (divide by 1e12 for TFLOP/s)"},
         [](const Row& r) -> json {
           const auto t = median_of(r.rec);
           const json f = number_at(r.rec, "flops");
           if (!t || f.is_null()) return nullptr;
           return f.get<double>() / *t;
         }},
        {{"peak_flop_per_s", "the GPU's dense tensor-core peak for the dtype (built-in GPU table)"},
         [](const Row& r) -> json {
           const auto p = peak_of(r);
           return p ? json(*p) : json(nullptr);
         }},
        {{"percent_of_peak", "flop_per_s as a percentage of peak_flop_per_s"},
         [](const Row& r) -> json {
           const auto t = median_of(r.rec);
           const auto p = peak_of(r);
           const json f = number_at(r.rec, "flops");
           if (!t || !p || f.is_null()) return nullptr;
           return 100.0 * f.get<double>() / *t / *p;
         }},
        {{"dram_read_bytes", "DRAM bytes read (hardware counters)"},
         [](const Row& r) { return counter_bytes(r, "dram_read"); }},
        {{"dram_write_bytes", "DRAM bytes written"}, [](const Row& r) { return counter_bytes(r, "dram_write"); }},
        {{"l2_read_bytes", "SM←L2 bytes read"}, [](const Row& r) { return counter_bytes(r, "l2_read"); }},
        {{"l2_write_bytes", "SM→L2 bytes written"}, [](const Row& r) { return counter_bytes(r, "l2_write"); }},
        {{"l2_red_bytes", "SM→L2 reduction bytes (atomic adds without return)"},
         [](const Row& r) { return counter_bytes(r, "l2_red"); }},
        {{"l2_atom_bytes", "SM↔L2 atomic bytes"}, [](const Row& r) { return counter_bytes(r, "l2_atom"); }},
        {{"counters_status", "ok, or why the counters are missing"},
         [](const Row& r) { return string_at(object_at(r.rec, "counters"), "status"); }},
        {{"memory_total_bytes", "inputs + outputs + workspace (FlashAttention Table 26's count)"},
         [](const Row& r) { return number_at(object_at(r.rec, "memory"), "total_bytes"); }},
        {{"memory_workspace_bytes", "peak bytes the method allocated beyond inputs and outputs"},
         [](const Row& r) { return number_at(object_at(r.rec, "memory"), "workspace_bytes"); }},
        {{"check_passed", "the outputs matched the float64 reference"},
         [](const Row& r) { return bool_at(object_at(r.rec, "check"), "passed"); }},
        {{"check_error_ratio", "worst |out − ref| / (atol + rtol·|ref|): passes at ≤ 1; null for NaN"},
         [](const Row& r) { return number_at(object_at(r.rec, "check"), "worst_ratio"); }},
        {{"status", "ok, skipped, oom or error"}, [](const Row& r) { return string_at(r.rec, "status"); }},
        {{"reason", "why skipped, or the error"}, [](const Row& r) { return string_at(r.rec, "reason"); }},
    };
    c.insert(c.end(), rest.begin(), rest.end());
    return c;
  }();
  return cols;
}

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  if (!v.is_string()) return v.dump();  // numbers in the shortest form that reads back exactly
  const std::string s = v.get<std::string>();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// Google Benchmark's JSON, shaped as flashio_gbench writes it (bench/gbench/main.cpp):
// names end in /manual_time and times are in milliseconds, so tools/compare.py matches a
// flashio_gbench run with an exported flashio run point by point. A record with time samples
// gives one iteration entry per repetition (compare.py's U test reads them) and the mean,
// median and stddev aggregates; one without gives a single entry at its median. flashio measures
// GPU time only: cpu_time repeats real_time so compare.py's two columns agree.
json gbench_document(const Documents& docs) {
  json benchmarks = json::array();
  json runs = json::array();
  std::map<std::string, std::string> seen;  // benchmark name → file
  int family = 0, left_out = 0;
  for (const auto& [path, doc] : docs) {
    const json& build = object_at(doc, "build");
    runs.push_back({{"file", path},
                    {"gpu", string_at(object_at(doc, "device"), "name")},
                    {"revision", string_at(build, "git_revision")},
                    {"run_id", string_at(doc, "run_id")}});
    for (const json& rec : doc["records"]) {
      const auto median = median_of(rec);
      if (rec.value("status", "") != "ok" || !median) {
        ++left_out;
        continue;
      }
      const std::string name = rec["name"].get<std::string>() + "/manual_time";
      if (const auto it = seen.find(name); it != seen.end())
        throw std::invalid_argument(
            fmt::format("--format gbench: {} is in {} and in {}; export one run per file for compare.py",
                        rec["name"].get<std::string>(), it->second, path));
      seen.emplace(name, path);
      const json& t = rec["time"];
      std::vector<double> samples;
      if (t.contains("samples_s") && t["samples_s"].is_array())
        for (const auto& s : t["samples_s"])
          if (s.is_number()) samples.push_back(s.get<double>());
      const json gpu = string_at(object_at(doc, "device"), "name");
      json base = {{"name", name},
                   {"family_index", family},
                   {"per_family_instance_index", 0},
                   {"run_name", name},
                   {"threads", 1},
                   {"time_unit", "ms"},
                   {"label", gpu.is_null() ? std::string() : gpu.get<std::string>()}};
      if (samples.empty()) {
        json b = base;
        b["run_type"] = "iteration";
        b["repetitions"] = 1;
        b["repetition_index"] = 0;
        b["iterations"] = t.value("reps", 1);
        b["real_time"] = *median * 1e3;
        b["cpu_time"] = *median * 1e3;
        benchmarks.push_back(b);
      } else {
        for (size_t i = 0; i < samples.size(); ++i) {
          json b = base;
          b["run_type"] = "iteration";
          b["repetitions"] = samples.size();
          b["repetition_index"] = i;
          b["iterations"] = 1;
          b["real_time"] = samples[i] * 1e3;
          b["cpu_time"] = samples[i] * 1e3;
          benchmarks.push_back(b);
        }
        const std::vector<std::pair<const char*, const char*>> aggregates = {
            {"mean", "mean_s"}, {"median", "median_s"}, {"stddev", "stddev_s"}};
        for (const auto& [agg, key] : aggregates) {
          if (!t.contains(key) || !t[key].is_number()) continue;
          json b = base;
          b["name"] = name + "_" + agg;
          b["run_type"] = "aggregate";
          b["aggregate_name"] = agg;
          b["aggregate_unit"] = "time";
          b["repetitions"] = samples.size();
          b["iterations"] = samples.size();
          b["real_time"] = t[key].get<double>() * 1e3;
          b["cpu_time"] = t[key].get<double>() * 1e3;
          benchmarks.push_back(b);
        }
      }
      ++family;
    }
  }
  if (left_out > 0)
    fmt::print(stderr, "flashio: note: {} records without a time (skipped, oom, error) are not in the gbench output\n",
               left_out);
  const json& first = docs.front().second;
  json context = {{"date", first.value("created", std::string())},
                  {"host_name", ""},
                  {"executable", "flashio export --format gbench"},
                  {"num_cpus", 0},
                  {"mhz_per_cpu", 0},
                  {"cpu_scaling_enabled", false},
                  {"caches", json::array()},
                  {"load_avg", json::array()},
                  {"library_build_type", "release"},
                  {"json_schema_version", 1},
                  {"flashio_runs", runs}};
  return {{"context", context}, {"benchmarks", benchmarks}};
}

}  // namespace

Documents read_result_files(const std::vector<std::string>& paths) {
  Documents docs;
  std::optional<int> version;
  std::string version_file;
  for (const auto& p : paths) {
    // Bounded and depth-limited (bench/core/json_input.h), then checked against results/schema.json.
    json doc = parse_json_input(read_input_file(p), p);
    if (doc.is_object() && doc.contains("$schema")) {  // results/schema.json caught by a glob: not data
      fmt::print(stderr, "flashio: skipping {}: a JSON schema, not a result file\n", p);
      continue;
    }
    if (!doc.is_object() || doc.value("schema", json()) != "flashio/result")
      throw std::invalid_argument(fmt::format("{}: not a flashio result file (no \"schema\": \"flashio/result\")", p));
    if (!doc.contains("schema_version") || !doc["schema_version"].is_number_integer())
      throw std::invalid_argument(fmt::format("{}: no integer schema_version", p));
    const int v = doc["schema_version"].get<int>();
    if (v > kSchemaVersion)
      throw std::invalid_argument(
          fmt::format("{}: schema version {} is newer than this build's {}", p, v, kSchemaVersion));
    if (version && *version != v)
      throw std::invalid_argument(fmt::format(
          "{} has schema version {} but {} has {}: convert them to one version first", p, v, version_file, *version));
    version = v, version_file = p;
    result_file_schema().check(doc, p);  // InputError: the file and the JSON pointer of the first problem
    if (!doc.contains("device") || !doc["device"].is_object()) doc["device"] = json::object();
    docs.emplace_back(p, std::move(doc));
  }
  if (docs.empty()) throw std::invalid_argument("no result files among the inputs");
  return docs;
}

const std::vector<ExportColumn>& export_columns() {
  static const std::vector<ExportColumn> c = [] {
    std::vector<ExportColumn> out;
    for (const auto& col : columns()) out.push_back(col.c);
    return out;
  }();
  return c;
}

std::vector<std::vector<json>> export_rows(const Documents& docs) {
  std::vector<std::vector<json>> rows;
  for (const auto& [path, doc] : docs)
    for (const json& rec : doc["records"]) {
      const Row r{path, doc, rec};
      std::vector<json> row;
      for (const auto& col : columns()) row.push_back(col.value(r));
      rows.push_back(std::move(row));
    }
  return rows;
}

std::string render_export(const Documents& docs, ExportFormat format) {
  if (format == ExportFormat::Gbench) return gbench_document(docs).dump(2) + "\n";
  const auto& cols = export_columns();
  const auto rows = export_rows(docs);
  std::string s;
  if (format == ExportFormat::Csv) {
    for (size_t i = 0; i < cols.size(); ++i) s += (i ? "," : "") + cols[i].name;
    s += "\n";
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) s += (i ? "," : "") + csv_cell(row[i]);
      s += "\n";
    }
    return s;
  }
  for (const auto& row : rows) {
    json o = json::object();
    for (size_t i = 0; i < row.size(); ++i) o[cols[i].name] = row[i];
    s += o.dump() + "\n";
  }
  return s;
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, text, /*overwrite=*/false);  // bench/core/safe_write.h: never over a file
}

}  // namespace flashio::analysis
