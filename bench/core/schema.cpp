#include "bench/core/schema.h"

#include <fmt/format.h>

namespace flashio {
namespace {

using nlohmann::json;

bool has_type(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == double(int64_t(v.get<double>())));
  if (t == "number") return v.is_number();
  return false;
}

class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}
  void check(const json& s, const json& v, const std::string& path) {
    if (s.contains("$ref")) {
      const std::string ref = s["$ref"].get<std::string>();
      const std::string prefix = "#/$defs/";
      if (ref.rfind(prefix, 0) != 0 || !root_.contains("$defs") || !root_["$defs"].contains(ref.substr(prefix.size()))) {
        errors.push_back(fmt::format("{}: unresolvable $ref {}", path, ref));
        return;
      }
      check(root_["$defs"][ref.substr(prefix.size())], v, path);
    }
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_array()) {
        for (const auto& t : s["type"]) ok = ok || has_type(v, t.get<std::string>());
      } else {
        ok = has_type(v, s["type"].get<std::string>());
      }
      if (!ok) {
        errors.push_back(fmt::format("{}: expected type {}, got {}", path, s["type"].dump(), v.type_name()));
        return;
      }
    }
    if (s.contains("const") && v != s["const"]) errors.push_back(fmt::format("{}: must be {}", path, s["const"].dump()));
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found = found || e == v;
      if (!found) errors.push_back(fmt::format("{}: {} is not one of {}", path, v.dump(), s["enum"].dump()));
    }
    if (v.is_number()) {
      const double x = v.get<double>();
      if (s.contains("minimum") && x < s["minimum"].get<double>())
        errors.push_back(fmt::format("{}: {} < minimum {}", path, x, s["minimum"].get<double>()));
      if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>())
        errors.push_back(fmt::format("{}: {} must be > {}", path, x, s["exclusiveMinimum"].get<double>()));
      if (s.contains("maximum") && x > s["maximum"].get<double>())
        errors.push_back(fmt::format("{}: {} > maximum {}", path, x, s["maximum"].get<double>()));
    }
    if (v.is_object()) {
      if (s.contains("required"))
        for (const auto& key : s["required"])
          if (!v.contains(key.get<std::string>())) errors.push_back(fmt::format("{}: missing required \"{}\"", path, key.get<std::string>()));
      const json props = s.value("properties", json::object());
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (props.contains(it.key())) {
          check(props[it.key()], it.value(), path + "/" + it.key());
        } else if (s.contains("additionalProperties") && s["additionalProperties"].is_object()) {
          check(s["additionalProperties"], it.value(), path + "/" + it.key());
        } else if (s.contains("additionalProperties") && s["additionalProperties"].is_boolean() &&
                   !s["additionalProperties"].get<bool>()) {
          errors.push_back(fmt::format("{}: unexpected property \"{}\"", path, it.key()));
        }
      }
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>())
        errors.push_back(fmt::format("{}: fewer than {} items", path, s["minItems"].get<size_t>()));
      if (s.contains("items"))
        for (size_t i = 0; i < v.size(); ++i) check(s["items"], v[i], fmt::format("{}/{}", path, i));
    }
  }
  std::vector<std::string> errors;

 private:
  const json& root_;
};

}  // namespace

std::vector<std::string> validate_schema(const json& schema, const json& doc) {
  Validator v(schema);
  v.check(schema, doc, "");
  return v.errors;
}

}  // namespace flashio
