// `flashio report` (the papers' tables from result files), `flashio compare` (the same points
// side by side across GPUs) and `flashio predict` (the model for a GPU the user does not have).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "analysis/gpus.h"

namespace flashio::analysis {

enum class Format { Markdown, Csv, Json };

// One cell: its text for Markdown and CSV ("3.20×", "275.74 MB", "-") and its typed value for
// --json (a number in the column's unit, a string, or null where there is no value).
struct Cell {
  std::string text;
  nlohmann::json value;
};
Cell text_cell(const std::string& s);                 // a string, both ways
Cell number_cell(double v, const std::string& text);  // v in the column's unit, shown as text
Cell no_cell(const std::string& text = "-");          // null

// A table: a title, columns with their units ("s", "B", "flop/s", "ratio", "" for text) and rows.
// --json renders {title, columns: [{name, unit}], rows: [[values]]}: numbers in SI units, no units in cells.
struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::string> units;  // one per header entry
  std::vector<std::vector<Cell>> rows;
};
std::string render(const std::vector<Table>& tables, Format f);

using Documents = std::vector<std::pair<std::string, nlohmann::json>>;
Documents read_documents(const std::vector<std::string>& paths);  // throws std::runtime_error

// What a grid of the report holds: one value per (row label, N) for one setting on one GPU.
enum class GridQuantity {
  Runtime,              // median time, s
  Memory,               // total device bytes, B
  SpeedupOverStandard,  // standard's time / the method's, same point and file
  Tflops,               // FLOP/s
  SpeedupOverPeers,     // a peer's time / the method's, same point and GPU: one row per method and peer
};
struct GridValue {
  std::string label;  // the row: method (forced tile, variant), told apart where records would share a cell
  int64_t n = 0;      // seqlen_q
  double value = 0;   // in the grid's unit
};
struct Grid {
  std::string what;     // "TFLOP/s", "Runtime (ms)", ...
  std::string unit;     // "s", "B", "ratio", "flop/s"
  std::string setting;  // pass · heads · head dim · dtype [· kv heads · causal · masking · dropout]
  std::string device;   // the GPU's name
  std::vector<GridValue> values;
};
// Timed records (status ok) of every file as `report`'s grids, one per setting and GPU, in the
// tables' order. A peer is a method measured by scripts/peers_sdpa.py (`sdpa_*`): its records
// are matched with flashio's on the point name and the GPU name, across files.
std::vector<Grid> report_grids(const Documents& docs, GridQuantity q);
Table grid_table(const Grid& g);  // rows sorted by label, columns N ascending
bool is_peer_method(const std::string& method);

// FlashAttention Tables 14–25 (runtime per method × N, per pass and dropout/masking setting),
// Table 26 (memory), Figures 6–9 (speedup over standard), FlashAttention-2 Figures 4–7
// (TFLOP/s), Figure 2 left (GFLOPs, HBM bytes, runtime at N = 1024, d = 64, 16 heads, batch 64).
std::vector<Table> report_tables(const Documents& docs);

// Points matched on (method, pass, problem) across files: time, TFLOP/s, % of that GPU's peak,
// DRAM bytes, speedup over standard in the same file; columns labelled by file_labels; the
// points only one file has, listed in a table of their own.
std::vector<Table> compare_tables(const Documents& docs);
// Per file: "<GPU> @<revision, 7 digits>" ("<GPU> (published)" for a paper's figures), with the
// file name added where two files would read the same.
std::vector<std::string> file_labels(const Documents& docs);
// The key a record is matched on across files: its name, with the method its model says it is
// matched as where that differs (standard records of files from before standard_fused existed).
std::string matched_key(const nlohmann::json& rec, const nlohmann::json& doc);

struct PredictRequest {
  std::vector<std::string> gpus;     // keys of gpu_table()
  std::vector<GpuFigures> specs;     // GPUs described by the user (--gpu-spec), before those
  std::vector<std::string> methods;  // flash1, flash2, standard
  std::vector<std::string> passes;   // fwd, bwd, fwdbwd
  std::vector<int64_t> seqlens;
  int64_t batch = 1, heads = 16, head_dim = 64;
  bool causal = false;
  double l2_usable_fraction = 0.5;  // the wave model's
  bool wave_model = false;          // DRAM: the wave model instead of the L2 simulation
};
std::vector<Table> predict_tables(const PredictRequest& r);  // throws std::invalid_argument on an unknown GPU

}  // namespace flashio::analysis
