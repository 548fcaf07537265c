// Presets: the papers' experiments as named sweeps (`flashio run --preset NAME`). Each is a
// row of a table — name, what it reproduces, the methods it needs, and its sweep in the
// sweep-file format (bench/sweep/sweep_file.h) — so `flashio presets --show NAME` prints a file a
// user can copy and edit.
#pragma once
#include <string>
#include <vector>

#include "bench/sweep/sweep_file.h"

namespace flashio {

struct Preset {
  std::string name;                           // fa1-table14, figure2-left, fa2-figure5, ...
  std::string reproduces;                     // one line: which table or figure, and its setting
  std::string sweep_json;                     // the sweep, in the sweep-file format
  std::vector<std::string> requires_methods;  // methods that must be registered to run it

  SweepFile sweep() const;  // parses sweep_json; a preset that fails to parse is a bug (tested)
};

const std::vector<Preset>& all_presets();
const Preset* find_preset(const std::string& name);
std::vector<std::string> preset_names();

}  // namespace flashio
