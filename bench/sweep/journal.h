// The journal: every record appended to `<out>.jsonl` as it is produced (JSON Lines:
// a header line, then one record per line, each write flushed and fsync'd), so that a
// run killed at any moment — SIGKILL included — leaves every completed point readable.
// The final `<out>.json` is still written atomically at the end; the journal is then
// removed. `flashio run --resume` and `flashio merge` read either form.
//
// Header line: the result file's top level without "records", with
// "schema": "flashio/journal". A kill can only cut the last line short; the reader skips
// such a line (and says so) but refuses a bad line elsewhere.
#pragma once
#include <string>

#include "bench/core/record.h"

namespace flashio {

// `results/x.json` → `results/x.jsonl`; any other name gets ".jsonl" appended.
std::string journal_path(const std::string& out);

class JournalWriter {
 public:
  // Replaces `path` atomically (a unique temporary file + rename: bench/core/safe_write.h) by
  // the header line of `file` and its records (those a resumed run keeps), then appends to it.
  JournalWriter(const std::string& path, const ResultFile& file);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  void append(const Record& r);  // one line, flushed to disk before it returns
  const std::string& path() const { return path_; }

 private:
  void write_line(const std::string& line);
  std::string path_;
  int fd_ = -1;
};

struct LoadedResults {
  ResultFile file;         // header and the complete records, in file order
  bool truncated = false;  // the last line was cut short (a killed run) and was skipped
};

// Reads a journal (.jsonl) or a result file (anything else). Throws InputError with one
// line naming the file, the JSON pointer and the problem.
LoadedResults read_results_any(const std::string& path);
// A journal's text (from `path`, named in errors): bounded, each line checked against
// results/schema.json; throws InputError (bench/core/json_input.h).
LoadedResults parse_journal_text(const std::string& text, const std::string& path);

}  // namespace flashio
