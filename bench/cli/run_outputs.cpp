#include "bench/cli/run_outputs.h"

#include "analysis/export.h"
#include "analysis/tables.h"

namespace flashio {

void write_run_outputs(const ResultFile& file, const std::string& json_path, const std::string& csv,
                       const std::string& md) {
  if (csv.empty() && md.empty()) return;
  const analysis::Documents docs{{json_path, to_json(file)}};
  if (!csv.empty()) analysis::write_text_atomically(csv, analysis::render_export(docs, analysis::ExportFormat::Csv));
  if (!md.empty())
    analysis::write_text_atomically(md, analysis::render(analysis::report_tables(docs), analysis::Format::Markdown));
}

}  // namespace flashio
