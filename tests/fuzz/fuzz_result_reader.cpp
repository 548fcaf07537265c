// libFuzzer: a result file's bytes through the reader flashio uses (bounded parse, schema, records).
#include <cstdint>
#include <string>

#include "bench/core/json_input.h"
#include "bench/core/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json doc = flashio::parse_json_input(text, "fuzz.json");
    flashio::result_file_schema().check(doc, "fuzz.json");
    const flashio::ResultFile f = flashio::result_file_from_json(doc);
    for (const auto& r : f.records) (void)flashio::to_json(r).dump();  // and back: names, flops, masks
  } catch (const std::exception&) {  // refused: InputError or a record's runtime_error
  }
  return 0;
}
