#include "bench/core/profile_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <istream>
#include <stdexcept>

namespace flashio {

nlohmann::json start_line(const std::string& library) { return {{"event", "start"}, {"library", library}}; }

nlohmann::json counters_line(const ProfiledDevice& d) {
  return {{"event", "counters"},     {"device", d.device}, {"cc", {d.cc_major, d.cc_minor}}, {"chip", d.chip},
          {"set", to_string(d.set)}, {"passes", d.passes}, {"metrics", d.metrics},           {"absent", d.absent}};
}

nlohmann::json unavailable_line(int device, const std::string& reason) {
  return {{"event", "unavailable"}, {"device", device}, {"reason", reason}};
}

nlohmann::json kernel_line(const ProfiledLaunch& l) {
  nlohmann::json nvtx = nlohmann::json::array();
  for (const auto& r : l.nvtx) nvtx.push_back({r.id, r.name});
  nlohmann::json j = {
      {"event", "kernel"}, {"launch", l.launch}, {"device", l.device}, {"name", l.mangled}, {"nvtx", nvtx}};
  if (l.resources) j["resources"] = l.resources->to_json();
  if (l.values) j["values"] = *l.values;
  return j;
}

nlohmann::json note_line(const std::string& text) { return {{"event", "note"}, {"text", text}}; }
nlohmann::json end_line(int64_t launches) { return {{"event", "end"}, {"launches", launches}}; }

namespace {

void read_line(const nlohmann::json& j, ProfileLog& log) {
  const std::string event = j.at("event").get<std::string>();
  if (event == "start") {
    log.started = true;
  } else if (event == "end") {
    log.ended = true;
    log.total_launches = std::max(log.total_launches, j.at("launches").get<int64_t>());
  } else if (event == "note") {
    log.notes.push_back(j.at("text").get<std::string>());
  } else if (event == "unavailable") {
    log.unavailable[j.at("device").get<int>()] = j.at("reason").get<std::string>();
  } else if (event == "counters") {
    ProfiledDevice d;
    d.device = j.at("device").get<int>();
    d.cc_major = j.at("cc").at(0).get<int>();
    d.cc_minor = j.at("cc").at(1).get<int>();
    d.chip = j.at("chip").get<std::string>();
    const auto set = parse_counter_set(j.at("set").get<std::string>());
    if (!set || *set == CounterSet::Off) throw std::invalid_argument("set");
    d.set = *set;
    d.passes = j.at("passes").get<int>();
    d.metrics = j.at("metrics").get<std::vector<std::string>>();
    d.absent = j.at("absent").get<std::map<std::string, std::string>>();
    log.devices[d.device] = d;
  } else if (event == "kernel") {
    ProfiledLaunch l;
    l.launch = j.at("launch").get<int64_t>();
    l.device = j.at("device").get<int>();
    l.mangled = j.at("name").get<std::string>();
    for (const auto& r : j.at("nvtx")) l.nvtx.push_back({r.at(0).get<uint64_t>(), r.at(1).get<std::string>()});
    if (j.contains("resources")) l.resources = kernel_resources_from_json(j.at("resources"));
    if (j.contains("values")) l.values = j.at("values").get<std::map<std::string, double>>();
    log.total_launches = std::max(log.total_launches, l.launch + 1);
    log.launches.push_back(std::move(l));
  } else {
    throw std::invalid_argument(event);
  }
}

}  // namespace

ProfileLog parse_profile_log(std::istream& in) {
  ProfileLog log;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      read_line(nlohmann::json::parse(line), log);
    } catch (const std::exception&) {
      ++log.bad_lines;
    }
  }
  return log;
}

ProfileLog read_profile_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  return parse_profile_log(in);
}

std::regex parse_range_pattern(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument(fmt::format("--range: '{}' is not a regular expression ({})", pattern, e.what()));
  }
}

namespace {

// Why a launch has no counter values.
std::string why_unavailable(const ProfileLog& log, const ProfiledLaunch& l) {
  if (auto it = log.unavailable.find(l.device); it != log.unavailable.end()) return it->second;
  if (auto it = log.unavailable.find(-1); it != log.unavailable.end()) return it->second;
  return "the counters of this launch were not decoded (the program ended before CUPTI handed them over)";
}

// The counters object of a group of launches (one launch, or one range's): counters_json where
// every launch has values, else `unavailable` with the first reason and the kernels' resources.
nlohmann::json group_counters(const ProfileLog& log, const std::vector<const ProfiledLaunch*>& group) {
  std::vector<RangeValues> ranges;
  const ProfiledLaunch* missing = nullptr;
  for (const ProfiledLaunch* l : group) {
    RangeValues r;
    r.kernel = kernel_name(l->mangled);
    r.resources = l->resources;
    if (l->values && log.devices.count(l->device))
      r.values = *l->values;
    else if (!missing)
      missing = l;
    ranges.push_back(std::move(r));
  }
  if (missing) {
    nlohmann::json c = counters_unavailable(why_unavailable(log, *missing));
    c["kernels"] = kernels_without_counters(ranges);
    return c;
  }
  const ProfiledDevice& d = log.devices.at(group.front()->device);
  nlohmann::json c = counters_json(metric_table(d.cc_major, d.cc_minor), d.set, d.passes, ranges, d.absent);
  c["chip"] = d.chip;
  return c;
}

nlohmann::json nvtx_names(const std::vector<NvtxRange>& stack, size_t count) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < count && i < stack.size(); ++i) out.push_back(stack[i].name);
  return out;
}

}  // namespace

long matching_range(const std::vector<NvtxRange>& open, const std::regex& range) {
  for (size_t i = open.size(); i-- > 0;)
    if (std::regex_search(open[i].name, range)) return long(i);
  return -1;
}

nlohmann::json profile_records(const ProfileLog& log, const std::optional<std::regex>& range) {
  nlohmann::json out = nlohmann::json::array();
  if (!range) {
    for (const auto& l : log.launches)
      out.push_back({{"kind", "kernel"},
                     {"name", kernel_name(l.mangled)},
                     {"launch", l.launch},
                     {"device", l.device},
                     {"nvtx", nvtx_names(l.nvtx, l.nvtx.size())},
                     {"counters", group_counters(log, {&l})}});
    return out;
  }
  // Groups in the order of their first launch; a range's launches on two devices are two groups.
  struct Group {
    const ProfiledLaunch* first;
    size_t depth;  // the range's index in the first launch's stack
    std::vector<const ProfiledLaunch*> launches;
  };
  std::vector<Group> groups;
  std::map<std::pair<uint64_t, int>, size_t> index;  // (range id, device) → group
  for (const auto& l : log.launches) {
    const long i = matching_range(l.nvtx, *range);
    if (i < 0) continue;
    const auto key = std::make_pair(l.nvtx[size_t(i)].id, l.device);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      groups.push_back({&l, size_t(i), {}});
    }
    groups[it->second].launches.push_back(&l);
  }
  for (const auto& g : groups)
    out.push_back({{"kind", "range"},
                   {"name", g.first->nvtx[g.depth].name},
                   {"launch", g.first->launch},
                   {"device", g.first->device},
                   {"nvtx", nvtx_names(g.first->nvtx, g.depth)},  // the ranges around it
                   {"counters", group_counters(log, g.launches)}});
  return out;
}

std::vector<std::string> profile_notes(const ProfileLog& log, const std::optional<std::regex>& range,
                                       const nlohmann::json& records) {
  std::vector<std::string> notes;
  if (!log.started && log.unavailable.count(-1))
    notes.push_back("no kernel was recorded: " + log.unavailable.at(-1));
  else if (!log.started)
    notes.push_back("the program never initialised CUDA: no kernel was launched");
  else if (log.total_launches == 0)
    notes.push_back("the program launched no kernel");
  if (range && log.total_launches > 0) {
    int64_t inside = 0;
    for (const auto& l : log.launches) inside += matching_range(l.nvtx, *range) >= 0;
    if (records.empty())
      notes.push_back(
          fmt::format("no kernel ran inside an NVTX range matching --range ({} launches outside)", log.total_launches));
    else if (inside < log.total_launches)
      notes.push_back(fmt::format("{} of {} kernel launches ran outside the matching NVTX ranges, unprofiled",
                                  log.total_launches - inside, log.total_launches));
  }
  if (log.started && !log.ended && log.total_launches > 0)
    notes.push_back("the program did not exit through exit(): launches after the last decoded batch are missing");
  if (log.bad_lines > 0)
    notes.push_back(fmt::format("{} unreadable lines in the profile log were skipped", log.bad_lines));
  for (const auto& n : log.notes) notes.push_back(n);
  return notes;
}

}  // namespace flashio
