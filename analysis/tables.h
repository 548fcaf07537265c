// `flashio report` (the papers' tables from result files), `flashio compare` (the same points
// side by side across GPUs) and `flashio predict` (the model for a GPU the user does not have).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace flashio::analysis {

enum class Format { Markdown, Csv, Json };

// A rendered table: a title, a header and rows of cells (already formatted).
struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
std::string render(const std::vector<Table>& tables, Format f);

using Documents = std::vector<std::pair<std::string, nlohmann::json>>;
Documents read_documents(const std::vector<std::string>& paths);  // throws std::runtime_error

// FlashAttention Tables 14–25 (runtime per method × N, per pass and dropout/masking setting),
// Table 26 (memory), Figures 6–9 (speedup over standard), FlashAttention-2 Figures 4–7
// (TFLOP/s), Figure 2 left (GFLOPs, HBM bytes, runtime at N = 1024, d = 64, 16 heads, batch 64).
std::vector<Table> report_tables(const Documents& docs);

// Points matched on (method, pass, problem) across files: time, TFLOP/s, % of that GPU's peak,
// DRAM bytes, speedup over standard in the same file.
std::vector<Table> compare_tables(const Documents& docs);

struct PredictRequest {
  std::vector<std::string> gpus;     // keys of gpu_table()
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
