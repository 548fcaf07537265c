// Sweep files: a user's sweep as JSON, in the same axes as `flashio run`'s options.
// The presets (bench/sweep/presets.cpp) are written in this format too.
//
//   {"description": "what it measures",              (optional)
//    "sweeps": [ {axes}, {axes}, ... ]}              (or the axes at the top level: one sweep)
//
// Axes (each a value or a list; an axis left out keeps SweepSpec's default):
//   method, pass, batch, heads, kv_heads, seqlen, seqlen_k, head_dim, dtype, causal,
//   padding, dropout, deterministic, block_r, block_c, pattern, density, sparse_block — and the scalars
//   tokens, model_dim, seed, sparse_window, sparse_global.
// The points are the union of each sweep's cartesian product, in order, without duplicates.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/sweep/sweep.h"

namespace flashio {

struct SweepFile {
  std::string description;
  std::vector<SweepSpec> sweeps;
};

// Throws std::invalid_argument with one line naming the problem (`where` prefixes it:
// the file name or the preset name). Does not check that the methods exist.
SweepFile parse_sweep_json(const nlohmann::json& j, const std::string& where);
SweepFile parse_sweep_text(const std::string& text, const std::string& where);
SweepFile read_sweep_file(const std::string& path);  // a regular file, bounded (bench/core/json_input.h)

// bench/sweep/sweep.schema.json, which parse_sweep_text checks a file against first.
class JsonSchema;
const JsonSchema& sweep_schema();

// The points of several sweeps, in order, each name once. Throws std::invalid_argument
// on an impossible shape (as expand()).
std::vector<Point> expand_all(const std::vector<SweepSpec>& sweeps);

}  // namespace flashio
