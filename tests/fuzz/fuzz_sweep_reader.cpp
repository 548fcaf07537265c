// libFuzzer: a sweep file's bytes through flashio's sweep reader and the expansion into points.
#include <cstdint>
#include <string>

#include "bench/sweep/sweep_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const flashio::SweepFile f = flashio::parse_sweep_text(text, "fuzz.json");
    (void)flashio::expand_all(f.sweeps).size();
  } catch (const std::exception&) {
  }
  return 0;
}
