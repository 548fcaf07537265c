// `flashio run --csv FILE --md FILE`: the run's records beside its JSON, as the tidy CSV of
// `flashio export` and the Markdown tables of `flashio report`, written when the JSON is.
#pragma once
#include <string>

#include "bench/core/record.h"

namespace flashio {

// Writes each of `csv` and `md` that is not empty (atomically; `json_path` is the result file's
// path, the CSV's `file` column). Throws std::invalid_argument naming a file it cannot write.
void write_run_outputs(const ResultFile& file, const std::string& json_path, const std::string& csv,
                       const std::string& md);

}  // namespace flashio
