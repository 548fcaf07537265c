// Reading the files a user hands flashio (result files, journals, sweep files, pattern files):
// bounded before anything uses them. A file must be a regular file (never a FIFO, device or
// directory: /dev/zero or a pipe cannot make flashio read forever) of at most kMaxInputBytes;
// JSON is first scanned without building anything, refusing nesting deeper than kMaxJsonDepth
// (a value nested 10⁶ deep would otherwise crash the recursive code that walks it), then parsed,
// then checked against its JSON Schema (results/schema.json, bench/sweep/sweep.schema.json)
// with valijson, the validator Debian packages with an nlohmann/json adapter (libvalijson-dev).
//
// Every problem is an InputError whose message is one line: "<file>: <JSON pointer>: <what>"
// (the pointer of the first problem; "" is the document itself). flashio exits 2 on it.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace flashio {

// Bad input in a file (or a value read from one): exit 2, message as above.
struct InputError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

inline constexpr int64_t kMaxInputBytes = int64_t(256) << 20;  // the committed result files are < 1 MiB
inline constexpr int kMaxJsonDepth = 64;  // results/schema.json nests 8 deep; counters leave room

// The bytes of a regular file of at most max_bytes; throws InputError naming the file.
std::string read_input_file(const std::string& path, int64_t max_bytes = kMaxInputBytes);

// Parses text (from `source`, named in errors) refusing nesting deeper than max_depth;
// throws InputError with the pointer where the text stops being valid JSON.
nlohmann::json parse_json_input(const std::string& text, const std::string& source, int max_depth = kMaxJsonDepth);

// A JSON Schema (draft 7 keywords plus "$defs"), compiled once.
class JsonSchema {
 public:
  // `schema_text`: the schema document; `ref` (e.g. "#/$defs/record"): validate against that
  // definition of it instead of its root.
  explicit JsonSchema(const std::string& schema_text, const std::string& ref = "");
  ~JsonSchema();
  JsonSchema(const JsonSchema&) = delete;
  JsonSchema& operator=(const JsonSchema&) = delete;

  struct Problem {
    std::string pointer;  // RFC 6901, "" = the document
    std::string what;
  };
  std::optional<Problem> first_problem(const nlohmann::json& doc) const;
  // Throws InputError "<source>: <pointer>: <what>" on the first problem. `prefix` is put
  // before the pointer (a journal line's record is "/records/<i>" of the file it stands for).
  void check(const nlohmann::json& doc, const std::string& source, const std::string& prefix = "") const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// results/schema.json (embedded at build time): a result file, and one record of it.
const JsonSchema& result_file_schema();
const JsonSchema& record_schema();
const std::string& result_schema_text();

// Reads, bounds, parses and validates a result file (not a journal): the document.
nlohmann::json read_result_document(const std::string& path);

// An integer field of `obj` that fits T exactly (never truncated), or `fallback` when absent;
// throws std::runtime_error naming the key when it is not an integer or does not fit.
int64_t checked_integer(const nlohmann::json& v, int64_t lo, int64_t hi, const std::string& what);
template <typename T>
T int_field(const nlohmann::json& obj, const char* key, T fallback) {
  static_assert(std::is_integral_v<T>);
  if (!obj.is_object() || !obj.contains(key)) return fallback;
  constexpr int64_t lo = std::is_signed_v<T> ? int64_t(std::numeric_limits<T>::min()) : 0;
  constexpr int64_t hi = sizeof(T) >= sizeof(int64_t) ? std::numeric_limits<int64_t>::max()
                                                      : int64_t(std::numeric_limits<T>::max());
  return T(checked_integer(obj[key], lo, hi, key));
}
// A number field, with null (how NaN is written) read back as NaN; `fallback` when absent.
double number_field(const nlohmann::json& obj, const char* key, double fallback);

}  // namespace flashio
