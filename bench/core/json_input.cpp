#include "bench/core/json_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace flashio {

using nlohmann::json;

extern const char* const kResultSchemaText;  // results/schema.json, generated (cmake/EmbedText.cmake)

namespace {

// One line: newlines and other control characters of a library's message become spaces.
std::string one_line(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return s;
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// Scans without building anything: the pointer of the value being read, its depth, and the
// first problem (too deep, or not JSON). Returning false stops nlohmann's parser at once.
class DepthScan final : public nlohmann::json_sax<json> {
 public:
  explicit DepthScan(int max_depth) : max_depth_(max_depth) {}

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& k) override {
    frames_.back().key = k;
    frames_.back().has_key = true;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 3: syntax error ..." → after "] "
    if (const auto close = what.find("] "); what.rfind("[json.exception.", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    problem = fmt::format("not valid JSON at byte {}: {}", position, one_line(what));
    return false;
  }

  std::string pointer() const {
    std::string p;
    for (const auto& f : frames_)
      if (f.array || f.has_key) p += "/" + (f.array ? std::to_string(f.next) : pointer_token(f.key));
    return p;
  }
  std::string problem;

 private:
  struct Frame {
    bool array = false;
    int64_t next = 0;  // arrays: the index of the value being read
    std::string key;   // objects: the key of the value being read
    bool has_key = false;
  };
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().next;
    return true;
  }
  bool open(bool array) {
    if (int(frames_.size()) >= max_depth_) {
      problem = fmt::format("nested deeper than {} levels", max_depth_);
      return false;
    }
    frames_.push_back({array, 0, {}, false});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();
  }

  int max_depth_;
  std::vector<Frame> frames_;
};

// valijson's context ("<root>", "[records]", "[3]", ...) as a JSON pointer.
std::string pointer_of(const std::vector<std::string>& context) {
  std::string p;
  for (const auto& c : context) {
    if (c == "<root>") continue;
    const std::string token = c.size() >= 2 && c.front() == '[' && c.back() == ']' ? c.substr(1, c.size() - 2) : c;
    p += "/" + pointer_token(token);
  }
  return p;
}

// The value at a pointer, short, for the message ("" when it cannot be found).
std::string value_at(const json& doc, const std::string& pointer) {
  try {
    const json& v = doc.at(json::json_pointer(pointer));
    if (v.is_structured()) return {};  // the pointer says where; its content would not fit one line
    std::string s = v.dump();
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    return s;
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace

std::string read_input_file(const std::string& path, int64_t max_bytes) {
  if (path.empty()) throw InputError("an empty file name");
  // O_NONBLOCK: opening a FIFO with no writer must not wait; the file is refused below anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw InputError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  struct stat st {};
  std::string text;
  try {
    if (::fstat(fd, &st) != 0) throw InputError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory, not a file", path));
    if (!S_ISREG(st.st_mode))
      throw InputError(fmt::format("{}: not a regular file (a device, pipe or socket is never read)", path));
    if (st.st_size > max_bytes)
      throw InputError(fmt::format("{}: {} bytes, more than the {} bytes flashio reads from one file", path,
                                   int64_t(st.st_size), max_bytes));
    text.resize(size_t(st.st_size));
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) throw InputError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
      if (n == 0) break;  // shrank while read
      done += size_t(n);
    }
    text.resize(done);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

json parse_json_input(const std::string& text, const std::string& source, int max_depth) {
  DepthScan scan(max_depth);
  if (!json::sax_parse(text, &scan, json::input_format_t::json, /*strict=*/true, /*ignore_comments=*/false) ||
      !scan.problem.empty())
    throw InputError(fmt::format("{}: {}: {}", source, scan.pointer(), scan.problem));
  try {
    return json::parse(text);  // bounded now; nlohmann's parser and destructor do not recurse
  } catch (const json::exception& e) {  // not reached: the scan saw the same text
    throw InputError(fmt::format("{}: : not valid JSON: {}", source, one_line(e.what())));
  }
}

struct JsonSchema::Impl {
  json document;  // the schema; valijson's adapters refer into it
  valijson::Schema schema;
};

JsonSchema::JsonSchema(const std::string& schema_text, const std::string& ref) : impl_(std::make_unique<Impl>()) {
  impl_->document = json::parse(schema_text);
  if (!ref.empty()) {  // a definition of the schema: a root that refers to it, beside the definitions
    json root = {{"$ref", ref}};
    if (impl_->document.contains("$defs")) root["$defs"] = impl_->document["$defs"];
    impl_->document = std::move(root);
  }
  impl_->document.erase("$schema");  // 2020-12 is not one valijson names; its keywords here are draft 7's
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  valijson::adapters::NlohmannJsonAdapter adapter(impl_->document);
  parser.populateSchema(adapter, impl_->schema);
}

JsonSchema::~JsonSchema() = default;

std::optional<JsonSchema::Problem> JsonSchema::first_problem(const json& doc) const {
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(doc);
  if (validator.validate(impl_->schema, adapter, &results)) return std::nullopt;
  valijson::ValidationResults::Error e;
  if (!results.popError(e)) return Problem{"", "does not match its schema"};
  // The first error is the innermost: the value that failed, not the containers around it.
  Problem p{pointer_of(e.context), one_line(e.description)};
  if (!p.what.empty() && p.what.back() == '.') p.what.pop_back();
  // A key the schema does not know: valijson names it at the end of the object's message.
  const std::string unknown = "Object contains a property that could not be validated using 'properties' or "
                              "'additionalProperties' constraints: '";
  if (p.what.rfind(unknown, 0) == 0 && p.what.size() > unknown.size() && p.what.back() == '\'') {
    p.pointer += "/" + pointer_token(p.what.substr(unknown.size(), p.what.size() - unknown.size() - 1));
    p.what = "a key the schema does not have";
  }
  const std::string v = value_at(doc, p.pointer);
  if (!v.empty()) p.what = fmt::format("{} (found {})", p.what, v);
  return p;
}

void JsonSchema::check(const json& doc, const std::string& source, const std::string& prefix) const {
  if (const auto p = first_problem(doc)) throw InputError(fmt::format("{}: {}{}: {}", source, prefix, p->pointer, p->what));
}

const std::string& result_schema_text() {
  static const std::string text = kResultSchemaText;
  return text;
}

const JsonSchema& result_file_schema() {
  static const JsonSchema s(result_schema_text());
  return s;
}

const JsonSchema& record_schema() {
  static const JsonSchema s(result_schema_text(), "#/$defs/record");
  return s;
}

json read_result_document(const std::string& path) {
  json doc = parse_json_input(read_input_file(path), path);
  result_file_schema().check(doc, path);
  return doc;
}

int64_t checked_integer(const json& v, int64_t lo, int64_t hi, const std::string& what) {
  int64_t x = 0;
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    x = v.get<int64_t>();
  } else if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
      throw std::runtime_error(fmt::format("\"{}\": {} does not fit a 64-bit integer", what, u));
    x = int64_t(u);
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>() &&
             std::fabs(v.get<double>()) <= 9007199254740992.0) {  // 2^53: exactly an integer
    x = int64_t(v.get<double>());
  } else {
    throw std::runtime_error(fmt::format("\"{}\": {} is not an integer", what, v.dump()));
  }
  if (x < lo || x > hi) throw std::runtime_error(fmt::format("\"{}\": {} is outside [{}, {}]", what, x, lo, hi));
  return x;
}

double number_field(const json& obj, const char* key, double fallback) {
  if (!obj.is_object() || !obj.contains(key)) return fallback;
  const json& v = obj[key];
  if (v.is_null()) return std::nan("");
  if (!v.is_number()) throw std::runtime_error(fmt::format("\"{}\": {} is not a number", key, v.dump()));
  return v.get<double>();
}

}  // namespace flashio
