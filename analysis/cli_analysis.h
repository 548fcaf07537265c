// The analysis subcommands of `flashio` (analyze, report, compare, predict, export): registered on the
// CLI app by one call, run by one call after parsing. None of them needs a GPU.
#pragma once
#include <memory>
#include <optional>

namespace CLI {
class App;
}

namespace flashio::analysis {

class AnalysisCommands {
 public:
  virtual ~AnalysisCommands() = default;
  // The exit code of the analysis subcommand that was parsed, or nullopt if none was.
  // analyze: 0 every verdict holds, 3 one does not; compare --baseline: 3 a point is slower than
  // the threshold; all: 2 bad input (an input file refused: bench/core/json_input.h);
  // bench/core/exit_codes.h.
  virtual std::optional<int> run() const = 0;
};

std::unique_ptr<AnalysisCommands> add_analysis_commands(CLI::App& app);

}  // namespace flashio::analysis
