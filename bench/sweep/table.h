// The table `flashio run` prints: one line per record, formatted only here.
#pragma once
#include <string>
#include <vector>

#include "bench/core/record.h"

namespace flashio {

std::string format_records_table(const std::vector<Record>& records);
// The line `flashio run` ends with: "ok 40 · skipped 2 · oom 0 · error 1" (every status, zeros too).
std::string format_status_counts(const std::vector<Record>& records);
std::string format_time(double seconds);   // "1.234 ms"
std::string format_bytes(double bytes);    // "1.50 GiB"

}  // namespace flashio
