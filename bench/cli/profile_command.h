// `flashio profile [--counters dram|full] [--cache-control all|none] [--out FILE] [--range REGEX] --
// COMMAND ARGS...`: runs
// any CUDA program with the suite's CUPTI profiler injected (libflashio_inject.so through
// CUDA_INJECTION64_PATH, NVTX through NVTX_INJECTION64_PATH = the CUPTI library), then writes one
// result file (results/schema.json, `profile`) with one record per kernel launch, or per NVTX
// range matching --range. The program's exit code is flashio's; what ran before a failure is
// still written. Bad input (no command, a command that does not exist, a bad pattern, an output
// that may not be written) is one line on stderr, exit 2, before the program starts.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace flashio {

struct ProfileArgs {
  std::string counters = "full";
  std::string cache_control = "all";  // all: the L2 cleaned before each profiled launch (inject.cpp); none
  std::string out;    // default: profile-<UTC date>-<time>.json in the working folder
  std::string range;  // empty: one record per kernel launch
  bool force = false;
  std::vector<std::string> command;
  std::string command_line;  // flashio's own, for the file
  nlohmann::json build;      // the build's description, as every result file carries it
};

int cmd_profile(const ProfileArgs& a);

// The executable `name` names: itself where it contains a '/', else the first match in $PATH
// (execvp's search); empty where there is none.
std::string find_executable(const std::string& name);

}  // namespace flashio
