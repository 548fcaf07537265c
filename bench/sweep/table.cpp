#include "bench/sweep/table.h"

#include <algorithm>

#include <fmt/format.h>

namespace flashio {

std::string format_time(double s) {
  if (s >= 1.0) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}

std::string format_records_table(const std::vector<Record>& records) {
  size_t w = 4;
  for (const auto& r : records) w = std::max(w, r.name().size());
  std::string out = fmt::format("{:<{}}  {:>7}  {:>10}  {:>8}  {:>9}  {}\n", "point", w, "status", "median", "TFLOP/s",
                                "err/tol", "note");
  for (const auto& r : records) {
    std::string median = r.time ? format_time(r.time->median_s) : "-";
    std::string tf = r.tflops() ? fmt::format("{:.1f}", *r.tflops()) : "-";
    std::string err = r.check ? fmt::format("{:.3f}", r.check->worst_ratio) : "-";
    std::string note = r.reason;
    if (note.size() > 90) note = note.substr(0, 87) + "...";
    out += fmt::format("{:<{}}  {:>7}  {:>10}  {:>8}  {:>9}  {}\n", r.name(), w, to_string(r.status), median, tf, err, note);
  }
  return out;
}

std::string format_status_counts(const std::vector<Record>& records) {
  std::string out;
  for (Status st : {Status::Ok, Status::Skipped, Status::Oom, Status::Error}) {
    const auto n = std::count_if(records.begin(), records.end(), [&](const Record& r) { return r.status == st; });
    out += fmt::format("{}{} {}", out.empty() ? "" : " · ", to_string(st), n);
  }
  return out;
}

}  // namespace flashio
