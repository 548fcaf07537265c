// `flashio export`: result files as tidy data, one row per record, every number in SI units
// (seconds, bytes, FLOP/s) under a column name that says its unit, for pandas, spreadsheets and
// Google Benchmark's tools/compare.py. Also the strict reader the export and the A/B comparison
// share, and an atomic text writer (no partial output file on any error).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/tables.h"

namespace flashio::analysis {

// Result files, each read bounded and checked against results/schema.json (bench/core/json_input.h),
// of one schema version (all files alike) no newer than this build's. results/schema.json caught
// by a glob is left out with a note on stderr. Throws std::invalid_argument (InputError): one line
// naming the file (and the JSON pointer of the first problem).
Documents read_result_files(const std::vector<std::string>& paths);

struct ExportColumn {
  std::string name;  // e.g. median_s, dram_read_bytes
  std::string what;  // one line, for the docs and `flashio export --help`
};
const std::vector<ExportColumn>& export_columns();

// One row per record of every file, in file then record order, each value typed (number,
// string, boolean) or null where the record has no such value; row[i] is export_columns()[i].
std::vector<std::vector<nlohmann::json>> export_rows(const Documents& docs);

enum class ExportFormat { Csv, Jsonl, Gbench };
// csv: a header line and one line per record, empty cells for null. jsonl: one object per
// record. gbench: Google Benchmark's JSON (context + benchmarks) named and timed as
// flashio_gbench writes them, so tools/compare.py compares the two; records that did not run
// (status other than ok, or no time) are left out of gbench only.
std::string render_export(const Documents& docs, ExportFormat format);

// Writes `text` to a new file `path` (bench/core/safe_write.h: a unique temporary file in its
// folder, fsynced, renamed into place, never over an existing file); throws and leaves nothing
// behind on failure.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace flashio::analysis
