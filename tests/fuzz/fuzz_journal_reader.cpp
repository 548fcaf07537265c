// libFuzzer: a journal's bytes (JSON Lines) through flashio's journal reader.
#include <cstdint>
#include <string>

#include "bench/sweep/journal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const flashio::LoadedResults r = flashio::parse_journal_text(text, "fuzz.jsonl");
    for (const auto& rec : r.file.records) (void)rec.name();
  } catch (const std::exception&) {
  }
  return 0;
}
