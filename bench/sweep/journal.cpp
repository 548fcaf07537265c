#include "bench/sweep/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace flashio {

using nlohmann::json;

std::string journal_path(const std::string& out) {
  const std::string ext = ".json";
  if (out.size() > ext.size() && out.compare(out.size() - ext.size(), ext.size(), ext) == 0) return out + "l";
  return out + ".jsonl";
}

JournalWriter::JournalWriter(const std::string& path, const ResultFile& file) : path_(path + ".tmp") {
  // Built under a temporary name and renamed: resuming from this very journal never leaves
  // a moment in which its records exist nowhere on disk.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(fmt::format("cannot create {}: {}", path_, std::strerror(errno)));
  json header = to_json(file);
  header.erase("records");
  header["schema"] = "flashio/journal";
  write_line(header.dump());
  for (const auto& r : file.records) append(r);
  if (std::rename(path_.c_str(), path.c_str()) != 0)
    throw std::runtime_error(fmt::format("cannot rename {} to {}: {}", path_, path, std::strerror(errno)));
  path_ = path;  // the descriptor follows the file
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JournalWriter::append(const Record& r) { write_line(to_json(r).dump()); }

void JournalWriter::write_line(const std::string& text) {
  // One write() of the whole line on an O_APPEND descriptor, then fsync: after a kill the
  // file ends either before this line or after it, or — if the kernel was cut mid-write —
  // in a partial last line that the reader skips.
  const std::string line = text + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
    done += size_t(n);
  }
  if (::fsync(fd_) != 0) throw std::runtime_error(fmt::format("cannot sync {}: {}", path_, std::strerror(errno)));
}

static bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

LoadedResults read_results_any(const std::string& path) {
  LoadedResults out;
  if (!ends_with(path, ".jsonl")) {
    out.file = read_result_file(path);
    return out;
  }
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  if (lines.empty()) throw std::runtime_error(fmt::format("{}: empty journal (no header line)", path));
  json header;
  try {
    header = json::parse(lines[0]);
  } catch (const json::exception&) {
    throw std::runtime_error(fmt::format("{}: the first line is not a journal header", path));
  }
  if (header.value("schema", std::string()) != "flashio/journal")
    throw std::runtime_error(
        fmt::format("{}: not a flashio journal (no \"schema\": \"flashio/journal\" header)", path));
  header["schema"] = "flashio/result";
  header["records"] = json::array();
  out.file = result_file_from_json(header);
  for (size_t i = 1; i < lines.size(); ++i) {
    const bool last = i + 1 == lines.size();
    try {
      out.file.records.push_back(record_from_json(json::parse(lines[i])));
    } catch (const std::exception& e) {
      if (last) {  // a killed run's half-written line (a strict prefix of a record never parses)
        out.truncated = true;
        break;
      }
      throw std::runtime_error(fmt::format("{}:{}: not a record ({})", path, i + 1, e.what()));
    }
  }
  return out;
}

}  // namespace flashio
