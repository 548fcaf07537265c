// `flashio profile`: what the injection library (bench/measure/inject.cpp) writes while the
// profiled program runs, and the result file's `profile` object made from it. Plain C++: the
// record assembly is tested without a GPU.
//
// The log is JSON Lines, appended and flushed per decoded batch of kernels, so the kernels that
// ran before a crash or an early exit are in it; a line cut short by a kill is dropped. Lines:
//   {"event":"start","library":…}                    the library was loaded (CUDA initialised)
//   {"event":"counters","device":0,"cc":[9,0],"chip":…,"set":…,"passes":…,"metrics":[…],"absent":{…}}
//   {"event":"unavailable","device":0,"reason":…}      counters cannot be read there (device -1: anywhere)
//   {"event":"kernel","launch":7,"device":0,"name":<mangled>,"nvtx":[[id,"name"],…],
//    "resources":{…},"values":{metric:value}}          one launch; values absent without counters
//   {"event":"note","text":…}                          something the records should say
//   {"event":"end","launches":N}                       the program exited through exit(), after N launches
// With --range (FLASHIO_PROFILE_RANGE) only launches inside a matching range are profiled and
// logged; the others run unprofiled and are only counted (their positions are skipped).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "bench/core/counters.h"

namespace flashio {

// An NVTX range open at a launch: its push's number in the process (two pushes of one name are
// two ranges) and its message.
struct NvtxRange {
  uint64_t id = 0;
  std::string name;
};

// One kernel launch as the injection library saw it.
struct ProfiledLaunch {
  int64_t launch = 0;                                   // position among the program's launches, from 0
  int device = 0;                                       // CUDA ordinal
  std::string mangled;                                  // the symbol; kernel_name() makes the record's name
  std::vector<NvtxRange> nvtx;                          // open ranges, outermost first
  std::optional<KernelResources> resources;             // where the driver could read them
  std::optional<std::map<std::string, double>> values;  // metric → value, where counters were read
};

// A device's counter configuration, as the library set it up.
struct ProfiledDevice {
  int device = 0;
  int cc_major = 0, cc_minor = 0;
  std::string chip;
  CounterSet set = CounterSet::Full;
  int passes = 0;
  std::vector<std::string> metrics;
  std::map<std::string, std::string> absent;
};

// The log's lines (one function per event, so the writer and the reader share one format).
nlohmann::json start_line(const std::string& library);
nlohmann::json counters_line(const ProfiledDevice& d);
nlohmann::json unavailable_line(int device, const std::string& reason);
nlohmann::json kernel_line(const ProfiledLaunch& l);
nlohmann::json note_line(const std::string& text);
nlohmann::json end_line(int64_t launches);

struct ProfileLog {
  bool started = false;  // the library was loaded: the program initialised CUDA
  bool ended = false;    // the program left through exit() (the library's last flush ran)
  std::map<int, ProfiledDevice> devices;
  std::map<int, std::string> unavailable;  // device (-1: every device) → why no counters
  std::vector<ProfiledLaunch> launches;    // those logged (with --range: those inside a matching range)
  int64_t total_launches = 0;              // every launch of the program that the log accounts for
  std::vector<std::string> notes;
  int64_t bad_lines = 0;  // lines that were not one of the events (a line cut short by a kill)
};

// Reads the log; never throws for a malformed line (counted in bad_lines).
ProfileLog parse_profile_log(std::istream& in);
ProfileLog read_profile_log(const std::string& path);  // an absent file is an empty log

// Throws BadInput-like std::invalid_argument "--range: …" for a pattern std::regex refuses.
std::regex parse_range_pattern(const std::string& pattern);
// The innermost of `open` (outermost first) whose name matches (std::regex_search), as its index;
// -1 if none. The injection library profiles a launch, and a range record takes it, by this rule.
long matching_range(const std::vector<NvtxRange>& open, const std::regex& range);

// The result file's `profile.records`: one per kernel launch, or with `range` one per NVTX range
// whose name matches it (std::regex_search; a launch belongs to the innermost matching open range),
// its kernels' counters summed and listed. Launches outside every matching range are left out.
// Each record: {kind, name, launch, device, nvtx, counters}, counters as flashio run's records
// carry them (counters_json), or `unavailable` with the reason and the kernels' resources.
nlohmann::json profile_records(const ProfileLog& log, const std::optional<std::regex>& range);

// One line per fact a reader of the records should know: no CUDA, no kernel, launches outside
// the matching ranges, lines lost, notes of the library.
std::vector<std::string> profile_notes(const ProfileLog& log, const std::optional<std::regex>& range,
                                       const nlohmann::json& records);

}  // namespace flashio
