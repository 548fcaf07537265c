// `flashio report --html`: one self-contained HTML page (inline CSS and SVG, a few lines of
// inline script that hide and show a figure's series; nothing fetched) with report's tables and
// figures drawn from the same grids (tables.h, report_grids):
//   TFLOP/s vs N per method, one panel per setting (pass, head dim, causal, ...) and GPU;
//   speedup over standard, and over the peers (scripts/peers_sdpa.py's sdpa_* records) where
//     the files hold them; memory vs N;
//   bytes predicted by the IO model against the counters, SM↔L2 and DRAM, as `flashio analyze`
//     computes them (analyze_documents with its default options);
//   with files from several GPUs: a setting's panels side by side on one y range, and TFLOP/s of
//     every GPU in one panel per setting.
// A figure without data is not drawn; the page says so in a sentence instead.
#pragma once
#include <string>

#include "analysis/tables.h"

namespace flashio::analysis {

std::string render_html_report(const Documents& docs);

}  // namespace flashio::analysis
