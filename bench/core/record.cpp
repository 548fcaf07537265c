#include "bench/core/record.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/core/build_info.h"
#include "bench/core/json_input.h"
#include "bench/core/safe_write.h"

namespace flashio {

using nlohmann::json;

// JSON has no NaN: nlohmann writes it as null, and a null reads back as NaN (number_field).
static double number_or_nan(const json& obj, const char* key) { return number_field(obj, key, std::nan("")); }

const char* to_string(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::Skipped: return "skipped";
    case Status::Oom: return "oom";
    case Status::Error: return "error";
  }
  return "?";
}

std::optional<Status> parse_status(const std::string& s) {
  for (Status st : {Status::Ok, Status::Skipped, Status::Oom, Status::Error})
    if (s == to_string(st)) return st;
  return std::nullopt;
}

std::optional<double> Record::tflops() const {
  if (!time || !(time->median_s > 0)) return std::nullopt;  // NaN too
  return flops() / time->median_s / 1e12;
}

json to_json(const Record& r) {
  json j = {{"name", r.name()},
            {"method", r.method},
            {"pass", to_string(r.pass)},
            {"problem", to_json(r.problem)},
            {"status", to_string(r.status)},
            {"device_index", r.device_index},
            {"flops", r.flops()}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (r.point_index >= 0) j["point_index"] = r.point_index;
  if (r.tiles) j["tiles"] = r.tiles->to_json();
  if (r.tiles_bwd) j["tiles_bwd"] = r.tiles_bwd->to_json();
  if (r.check) {
    const auto& c = *r.check;
    j["check"] = {{"passed", c.passed},         {"max_abs_err", c.max_abs_err}, {"max_rel_err", c.max_rel_err},
                  {"worst_ratio", c.worst_ratio}, {"atol", c.atol},             {"rtol", c.rtol},
                  {"rows_checked", c.rows_checked}, {"rows_total", c.rows_total},
                  {"lse_checked", c.lse_checked}, {"scope", c.scope}};
    if (!c.grad_scope.empty()) j["check"]["grad_scope"] = c.grad_scope;
    if (!c.reference.empty()) j["check"]["reference"] = c.reference;
    json tensors = json::object();
    for (const auto& t : c.tensors)
      tensors[t.name] = {{"max_abs_err", t.max_abs_err}, {"max_rel_err", t.max_rel_err}, {"worst_ratio", t.worst_ratio},
                         {"atol", t.atol}, {"rtol", t.rtol}, {"elements", t.elements}};
    if (!c.tensors.empty()) j["check"]["tensors"] = tensors;
  }
  if (r.time) {
    const auto& t = *r.time;
    j["time"] = {{"median_s", t.median_s}, {"min_s", t.min_s},   {"max_s", t.max_s},
                 {"mean_s", t.mean_s},     {"stddev_s", t.stddev_s}, {"reps", t.reps},
                 {"warmup", t.warmup},     {"l2_flushed", t.l2_flushed}, {"clock", t.clock}};
    if (!t.samples_s.empty()) j["time"]["samples_s"] = t.samples_s;
    if (auto tf = r.tflops()) j["tflops"] = *tf;
  }
  if (r.memory) {
    j["memory"] = {{"inputs_bytes", r.memory->inputs_bytes},
                   {"outputs_bytes", r.memory->outputs_bytes},
                   {"workspace_bytes", r.memory->workspace_bytes},
                   {"total_bytes", r.memory->total_bytes},
                   {"library_bytes", r.memory->library_bytes}};
  }
  if (r.bandwidth) {
    const auto& b = *r.bandwidth;
    j["bandwidth"] = {{"compulsory_bytes", b.compulsory_bytes},
                      {"peak_bytes_per_s", b.peak_bytes_per_s},
                      {"ideal_s", b.ideal_s},
                      {"ideal_fraction", b.ideal_fraction}};
    if (b.dram_bytes) j["bandwidth"]["dram_bytes"] = *b.dram_bytes;
    if (b.achieved_bytes_per_s) j["bandwidth"]["achieved_bytes_per_s"] = *b.achieved_bytes_per_s;
    if (b.peak_fraction) j["bandwidth"]["peak_fraction"] = *b.peak_fraction;
  }
  if (r.phases) {
    const auto& t = *r.phases;
    j["phases_s"] = {{"inputs", t.inputs_s},   {"reference", t.reference_s}, {"plan", t.plan_s},
                     {"check", t.check_s},     {"timed", t.timed_s},         {"counters", t.counters_s},
                     {"total", t.total_s}};
    if (t.started_s) j["phases_s"]["started"] = *t.started_s;
  }
  j["counters"] = r.counters;
  return j;
}

std::optional<BandwidthStats> bandwidth_of(const Record& r, double peak_bytes_per_s) {
  if (!r.time || !(r.time->median_s > 0) || !(peak_bytes_per_s > 0)) return std::nullopt;
  BandwidthStats b;
  b.compulsory_bytes = compulsory_bytes(r.problem, r.pass);
  b.peak_bytes_per_s = peak_bytes_per_s;
  b.ideal_s = double(b.compulsory_bytes) / peak_bytes_per_s;
  b.ideal_fraction = b.ideal_s / r.time->median_s;
  const json& c = r.counters;
  if (c.is_object() && c.value("status", std::string()) == "ok" && c.contains("bytes") && c["bytes"].is_object() &&
      c["bytes"].contains("dram_read") && c["bytes"].contains("dram_write") && c["bytes"]["dram_read"].is_number() &&
      c["bytes"]["dram_write"].is_number()) {
    b.dram_bytes = int64_t(c["bytes"]["dram_read"].get<double>() + c["bytes"]["dram_write"].get<double>());
    b.achieved_bytes_per_s = double(*b.dram_bytes) / r.time->median_s;
    b.peak_fraction = *b.achieved_bytes_per_s / peak_bytes_per_s;
  }
  return b;
}

Record record_from_json(const json& j) {
  Record r;
  try {
    r.method = j.at("method").get<std::string>();
    const auto pass = parse_pass(j.at("pass").get<std::string>());
    if (!pass) throw std::runtime_error("unknown pass " + j.at("pass").dump());
    r.pass = *pass;
    r.problem = problem_from_json(j.at("problem"));
    const auto st = parse_status(j.at("status").get<std::string>());
    if (!st) throw std::runtime_error("unknown status " + j.at("status").dump());
    r.status = *st;
    r.reason = j.value("reason", std::string());
    r.device_index = int_field(j, "device_index", 0);
    r.point_index = int_field(j, "point_index", int64_t(-1));
    for (const char* key : {"tiles", "tiles_bwd"}) {
      if (!j.contains(key)) continue;
      const auto& t = j[key];
      (std::string(key) == "tiles" ? r.tiles : r.tiles_bwd) =
          Tiles{{int_field(t, "block_r", 0), int_field(t, "block_c", 0), int_field(t, "warps", 0), int_field(t, "stages", 0)},
                int_field(t, "smem_bytes", int64_t(0)), int_field(t, "splits", 0), t.value("mma", std::string()),
                t.value("smem_layout", std::string()), t.value("elementwise", std::string()),
                t.value("dq_adds", std::string())};
    }
    if (j.contains("check")) {
      const auto& c = j["check"];
      CheckResult cr;
      cr.passed = c.at("passed").get<bool>();
      cr.max_abs_err = number_or_nan(c, "max_abs_err");
      cr.max_rel_err = number_or_nan(c, "max_rel_err");
      cr.worst_ratio = number_or_nan(c, "worst_ratio");
      cr.atol = number_field(c, "atol", 0.0);
      cr.rtol = number_field(c, "rtol", 0.0);
      cr.rows_checked = int_field(c, "rows_checked", int64_t(0));
      cr.rows_total = int_field(c, "rows_total", int64_t(0));
      cr.lse_checked = c.value("lse_checked", false);
      cr.scope = c.value("scope", std::string());
      cr.grad_scope = c.value("grad_scope", std::string());
      cr.reference = c.value("reference", std::string());
      if (c.contains("tensors"))
        for (auto it = c["tensors"].begin(); it != c["tensors"].end(); ++it) {
          TensorCheck t;
          t.name = it.key();
          t.max_abs_err = number_or_nan(it.value(), "max_abs_err");
          t.max_rel_err = number_or_nan(it.value(), "max_rel_err");
          t.worst_ratio = number_or_nan(it.value(), "worst_ratio");
          t.nan = std::isnan(t.worst_ratio);
          t.atol = number_field(it.value(), "atol", 0.0);
          t.rtol = number_field(it.value(), "rtol", 0.0);
          t.elements = int_field(it.value(), "elements", int64_t(0));
          cr.tensors.push_back(t);
        }
      r.check = cr;
    }
    if (j.contains("time")) {
      const auto& t = j["time"];
      TimeStats ts;
      ts.median_s = number_or_nan(t, "median_s");
      ts.min_s = number_field(t, "min_s", 0.0);
      ts.max_s = number_field(t, "max_s", 0.0);
      ts.mean_s = number_field(t, "mean_s", 0.0);
      ts.stddev_s = number_field(t, "stddev_s", 0.0);
      ts.reps = int_field(t, "reps", 0);
      ts.warmup = int_field(t, "warmup", 0);
      ts.l2_flushed = t.value("l2_flushed", true);
      ts.clock = t.value("clock", std::string("cuda_events"));
      if (t.contains("samples_s")) ts.samples_s = t["samples_s"].get<std::vector<double>>();
      r.time = ts;
    }
    if (j.contains("memory")) {
      const auto& m = j["memory"];
      MemoryStats ms{int_field(m, "inputs_bytes", int64_t(0)), int_field(m, "outputs_bytes", int64_t(0)),
                     int_field(m, "workspace_bytes", int64_t(0)), 0};
      // Files written before total_bytes existed: the same sum.
      ms.total_bytes = int_field(m, "total_bytes", ms.inputs_bytes + ms.outputs_bytes + ms.workspace_bytes);
      ms.library_bytes = int_field(m, "library_bytes", int64_t(0));
      r.memory = ms;
    }
    if (j.contains("bandwidth")) {
      const auto& b = j["bandwidth"];
      BandwidthStats bs;
      bs.compulsory_bytes = int_field(b, "compulsory_bytes", int64_t(0));
      bs.peak_bytes_per_s = number_field(b, "peak_bytes_per_s", 0.0);
      bs.ideal_s = number_field(b, "ideal_s", 0.0);
      bs.ideal_fraction = number_field(b, "ideal_fraction", 0.0);
      if (b.contains("dram_bytes")) bs.dram_bytes = int_field(b, "dram_bytes", int64_t(0));
      if (b.contains("achieved_bytes_per_s")) bs.achieved_bytes_per_s = number_field(b, "achieved_bytes_per_s", 0.0);
      if (b.contains("peak_fraction")) bs.peak_fraction = number_field(b, "peak_fraction", 0.0);
      r.bandwidth = bs;
    }
    if (j.contains("phases_s")) {
      const auto& t = j["phases_s"];
      r.phases = PhaseTimes{number_field(t, "inputs", 0.0), number_field(t, "reference", 0.0),
                            number_field(t, "plan", 0.0),   number_field(t, "check", 0.0),
                            number_field(t, "timed", 0.0),  number_field(t, "counters", 0.0),
                            number_field(t, "total", 0.0)};
      if (t.contains("started")) r.phases->started_s = number_field(t, "started", 0.0);
    }
    if (j.contains("counters")) r.counters = j["counters"];
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("bad record: ") + e.what());
  }
  return r;
}

json to_json(const ResultFile& f) {
  json records = json::array();
  for (const auto& r : f.records) records.push_back(to_json(r));
  json j = {{"schema", "flashio/result"},
            {"schema_version", f.schema_version},
            {"run_id", f.run_id},
            {"created", f.created},
            {"producer", f.producer},
            {"command_line", f.command_line},
            {"build", f.build.is_null() ? json::object() : f.build},  // the schema's type even when unset
            {"device", f.device.is_null() ? json::object() : f.device},
            {"records", records}};
  if (!f.devices.empty()) j["devices"] = f.devices;
  if (f.wall_s) j["wall_s"] = *f.wall_s;
  if (!f.merged_from.empty()) j["merged_from"] = f.merged_from;
  if (!f.profile.is_null()) j["profile"] = f.profile;
  return j;
}

ResultFile result_file_from_json(const json& j) {
  ResultFile f;
  try {
    if (j.value("schema", std::string()) != "flashio/result")
      throw std::runtime_error("not a flashio result file (no \"schema\": \"flashio/result\")");
    f.schema_version = int_field(j, "schema_version", 0);
    if (f.schema_version > kSchemaVersion)
      throw std::runtime_error(fmt::format("schema version {} is newer than this build's {}", f.schema_version, kSchemaVersion));
    f.run_id = j.value("run_id", std::string());
    f.created = j.value("created", std::string());
    f.producer = j.value("producer", std::string("flashio"));
    f.command_line = j.value("command_line", std::string());
    f.build = j.value("build", json::object());
    f.device = j.value("device", json::object());
    f.devices = j.value("devices", json::array());
    if (j.contains("wall_s") && !j["wall_s"].is_null()) f.wall_s = number_field(j, "wall_s", 0.0);
    f.merged_from = j.value("merged_from", json::array());
    if (j.contains("profile")) f.profile = j.at("profile");
    const json& records = j.at("records");
    for (size_t i = 0; i < records.size(); ++i) {
      try {
        f.records.push_back(record_from_json(records[i]));
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(fmt::format("/records/{}: {}", i, e.what()));
      }
    }
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("bad result file: ") + e.what());
  }
  return f;
}

void write_result_file(const ResultFile& f, const std::string& path, bool overwrite) {
  write_file_atomically(path, to_json(f).dump(1) + "\n", overwrite);
}

ResultFile read_result_file(const std::string& path) {
  const json doc = read_result_document(path);  // bounded, parsed and checked against results/schema.json
  try {
    return result_file_from_json(doc);
  } catch (const std::runtime_error& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
}

std::string utc_timestamp() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string new_run_id() {
  std::random_device rd;
  const uint64_t v = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  return fmt::format("{:016x}", v);
}

}  // namespace flashio
