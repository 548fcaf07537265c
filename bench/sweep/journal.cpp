#include "bench/sweep/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/core/json_input.h"
#include "bench/core/safe_write.h"

namespace flashio {

using nlohmann::json;

std::string journal_path(const std::string& out) {
  const std::string ext = ".json";
  if (out.size() > ext.size() && out.compare(out.size() - ext.size(), ext.size(), ext) == 0) return out + "l";
  return out + ".jsonl";
}

JournalWriter::JournalWriter(const std::string& path, const ResultFile& file) : path_(path) {
  // Built under a temporary name and renamed: resuming from this very journal never leaves
  // a moment in which its records exist nowhere on disk.
  TempFile tmp(path);
  fd_ = tmp.fd();
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_APPEND);
  path_ = tmp.path();
  json header = to_json(file);
  header.erase("records");
  header["schema"] = "flashio/journal";
  write_line(header.dump());
  for (const auto& r : file.records) append(r);
  tmp.commit(/*overwrite=*/true);  // the caller refused a journal this run does not resume from
  fd_ = ::dup(tmp.fd());           // the descriptor follows the file; tmp closes its own
  if (fd_ < 0) throw std::runtime_error(fmt::format("cannot keep {} open: {}", path, std::strerror(errno)));
  path_ = path;
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
  return parse_journal_text(read_input_file(path), path);
}

LoadedResults parse_journal_text(const std::string& text, const std::string& path) {
  LoadedResults out;
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  // Only a last line without its newline can be a killed run's half-written record.
  const bool last_unfinished = !text.empty() && text.back() != '\n';
  if (lines.empty()) throw InputError(fmt::format("{}: : an empty journal (no header line)", path));
  const std::string header_source = fmt::format("{}:1", path);
  json header = parse_json_input(lines[0], header_source);
  if (!header.is_object() || header.value("schema", json()) != "flashio/journal")
    throw InputError(fmt::format("{}: /schema: not a flashio journal (the first line has no \"schema\": \"flashio/journal\")",
                                 header_source));
  // The header is the result file's top level without its records.
  header["schema"] = "flashio/result";
  if (header.contains("records"))
    throw InputError(fmt::format("{}: /records: a journal header holds no records", header_source));
  header["records"] = json::array();
  result_file_schema().check(header, header_source);
  try {
    out.file = result_file_from_json(header);
  } catch (const std::runtime_error& e) {
    throw InputError(fmt::format("{}: {}", header_source, e.what()));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string source = fmt::format("{}:{}", path, i + 1);
    try {
      const json rec = parse_json_input(lines[i], source);
      record_schema().check(rec, source);
      try {
        out.file.records.push_back(record_from_json(rec));
      } catch (const std::runtime_error& e) {
        throw InputError(fmt::format("{}: {}", source, e.what()));
      }
    } catch (const InputError&) {
      if (i + 1 == lines.size() && last_unfinished) {  // a killed run's half-written line
        out.truncated = true;
        break;
      }
      throw;
    }
  }
  return out;
}

}  // namespace flashio
