#include "bench/cli/sweep_commands.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/core/build_info.h"
#include "bench/core/json_input.h"
#include "bench/core/safe_write.h"
#include "bench/cli/bad_input.h"
#include "bench/sweep/journal.h"
#include "bench/core/method.h"
#include "bench/sweep/presets.h"
#include "bench/sweep/progress.h"

namespace flashio {

namespace fs = std::filesystem;

void check_writable(const std::string& path, const std::string& option, const std::vector<std::string>& inputs,
                    bool overwrite) {
  check_output(path, inputs, overwrite, option);
}

int cmd_presets(const std::string& show) {
  if (!show.empty()) {
    const Preset* p = find_preset(show);
    if (!p)
      throw BadInput(fmt::format("--show: unknown preset '{}' (known: {})", show, fmt::join(preset_names(), ", ")));
    fmt::print("{}\n", nlohmann::json::parse(p->sweep_json).dump(2));
    return 0;
  }
  fmt::print("{:<15} {:>6}  {}\n", "preset", "points", "reproduces");
  for (const auto& p : all_presets()) {
    std::vector<std::string> missing;
    for (const auto& m : p.requires_methods)
      if (!builtin_registry().find(m)) missing.push_back(m);
    const std::string count = missing.empty() ? std::to_string(expand_all(p.sweep().sweeps).size()) : std::string("-");
    fmt::print("{:<15} {:>6}  {}\n", p.name, count, p.reproduces);
    if (!missing.empty())
      fmt::print("{:<15} {:>6}  (not runnable here: needs method {})\n", "", "", fmt::join(missing, ", "));
  }
  fmt::print(
      "\nflashio run --preset NAME [axes to override] runs one; --dry-run lists its points and an estimated time;\n"
      "flashio presets --show NAME prints its sweep as a sweep file (flashio run --sweep FILE).\n");
  return 0;
}

int cmd_merge(const MergeArgs& a) {
  if (a.inputs.empty()) throw BadInput("merge: give the files to merge");
  check_writable(a.out, "--out", a.inputs, a.force);  // by file identity: ./a.json is a.json
  std::vector<LoadedResults> in;
  for (const auto& path : a.inputs) {
    in.push_back(read_results_any(path));  // InputError: one line with the file and pointer, exit 2
    if (in.back().truncated)
      fmt::print(stderr, "flashio: note: {} ends in a cut-short line (a killed run); merged its complete records\n",
                 path);
  }
  // GPU models: one, unless told otherwise.
  auto text = [](const nlohmann::json& obj, const char* key, const char* otherwise) {
    return obj.is_object() ? obj.value(key, std::string(otherwise)) : std::string(otherwise);
  };
  std::map<std::string, std::string> model_file;  // model name → first file with it
  for (size_t i = 0; i < in.size(); ++i)
    model_file.emplace(text(in[i].file.device, "name", "unknown GPU"), a.inputs[i]);
  if (model_file.size() > 1 && !a.allow_mixed_gpus) {
    auto first = model_file.begin(), second = std::next(first);
    throw BadInput(fmt::format("merge: {} ran on {} but {} on {}; pass --allow-mixed-gpus to merge them anyway",
                               first->second, first->first, second->second, second->first));
  }
  // Each point once.
  ResultFile out;
  std::map<std::string, std::string> seen;  // point name → file
  std::set<std::string> run_ids, revisions;
  nlohmann::json devices = nlohmann::json::array();
  auto add_device = [&](const nlohmann::json& d) {
    if (d.is_object() && !d.empty() && std::find(devices.begin(), devices.end(), d) == devices.end())
      devices.push_back(d);
  };
  bool all_indexed = true;
  for (size_t i = 0; i < in.size(); ++i) {
    const ResultFile& f = in[i].file;
    run_ids.insert(f.run_id);
    out.merged_from.push_back({{"file", a.inputs[i]},
                               {"run_id", f.run_id},
                               {"wall_s", f.wall_s ? nlohmann::json(*f.wall_s) : nlohmann::json(nullptr)}});
    revisions.insert(text(f.build, "git_revision", "unknown"));
    add_device(f.device);
    for (const auto& d : f.devices) add_device(d);
    for (const auto& r : f.records) {
      auto [it, fresh] = seen.emplace(r.name(), a.inputs[i]);
      if (!fresh)
        throw BadInput(fmt::format("merge: point {} is in both {} and {}", r.name(), it->second, a.inputs[i]));
      all_indexed = all_indexed && r.point_index >= 0;
      out.records.push_back(r);
    }
  }
  if (all_indexed)  // shards of one sweep: back into sweep order
    std::stable_sort(out.records.begin(), out.records.end(),
                     [](const Record& x, const Record& y) { return x.point_index < y.point_index; });
  if (revisions.size() > 1)
    fmt::print(
        stderr,
        "flashio: note: the files come from different revisions ({}); the merged file names the first one's build\n",
        fmt::join(revisions, ", "));
  const ResultFile& first = in[0].file;
  out.run_id = run_ids.size() == 1 ? first.run_id : new_run_id();
  out.created = utc_timestamp();
  out.command_line = a.command_line;
  out.producer = first.producer;
  out.build = first.build;
  out.device = first.device;
  if (devices.size() > 1) out.devices = devices;
  const nlohmann::json doc = to_json(out);
  if (const auto p = result_file_schema().first_problem(doc))  // the inputs were valid: a flashio bug
    throw std::runtime_error(fmt::format("merge: the merged file would not match results/schema.json at {}: {}",
                                         p->pointer, p->what));
  write_file_atomically(a.out, doc.dump(1) + "\n", a.force);
  fmt::print("merged {} records from {} files into {}\n", out.records.size(), in.size(), a.out);
  return 0;
}

}  // namespace flashio
