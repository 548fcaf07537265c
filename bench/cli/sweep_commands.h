// `flashio presets` and `flashio merge`: the sweep-management subcommands that need no GPU.
// Both throw BadInput (bench/cli/bad_input.h) for anything the user can fix.
#pragma once
#include <string>
#include <vector>

namespace flashio {

// Lists the presets (name, points, what each reproduces); with `show`, prints that
// preset's sweep in the sweep-file format.
int cmd_presets(const std::string& show);

struct MergeArgs {
  std::vector<std::string> inputs;  // result files (.json) or journals (.jsonl)
  std::string out;
  bool allow_mixed_gpus = false;
  bool force = false;  // replace an existing --out
  std::string command_line;
};
// Joins shard files into one result file (atomically); refuses duplicate points and —
// unless allow_mixed_gpus — files measured on different GPU models.
int cmd_merge(const MergeArgs& a);

// Fails early (bad input) when `path` may not be written (bench/core/safe_write.h, check_output:
// the same file as an input, an existing file without `overwrite`, no such folder, ...),
// leaving nothing behind.
void check_writable(const std::string& path, const std::string& option, const std::vector<std::string>& inputs = {},
                    bool overwrite = false);

}  // namespace flashio
