// flashio's exit codes, one contract for every subcommand (README, "Exit status"):
//   0 success; 1 a runtime failure (no GPU, a file that cannot be written, ...); 2 bad input (a
//   command line or an input file flashio refuses, with one line on stderr naming the option or
//   the file and the JSON pointer); 3 the work ran but its outcome failed: `analyze` verdicts that
//   do not hold, `run` points that ended in an error record; 128 + N: stopped by signal N.
#pragma once
#include <string>

namespace flashio {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitOutcomeFailed = 3;

// The footer line every subcommand's --help ends with; `three`: what exit 3 means there, or
// empty where the subcommand never exits 3.
inline std::string exit_status_help(const std::string& three = "") {
  return "Exit status: 0 ok, 1 runtime failure, 2 bad input (one line on stderr)" +
         (three.empty() ? std::string() : ", 3 " + three) + ", 128+N stopped by signal N.";
}

}  // namespace flashio
