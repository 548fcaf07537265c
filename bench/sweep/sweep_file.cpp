#include "bench/sweep/sweep_file.h"


#include <algorithm>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "bench/core/json_input.h"
#include "bench/core/varlen.h"

namespace flashio {

using nlohmann::json;

extern const char* const kSweepSchemaText;  // bench/sweep/sweep.schema.json, generated (cmake/EmbedText.cmake)

namespace {

// One axis of one sweep object: reads a value or a list into typed values, each checked.
class AxisReader {
 public:
  AxisReader(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  template <typename T, typename F>
  void list(const char* key, std::vector<T>& out, F parse_one) {
    if (!obj_.contains(key)) return;
    const json& v = obj_.at(key);
    std::vector<T> values;
    if (v.is_array()) {
      if (v.empty()) fail(key, "has no values");
      for (const auto& e : v) values.push_back(parse_one(key, e));
    } else {
      values.push_back(parse_one(key, v));
    }
    out = values;
  }

  [[noreturn]] void fail(const char* key, const std::string& what) const {
    throw std::invalid_argument(fmt::format("{}: \"{}\" {}", where_, key, what));
  }

  int64_t integer(const char* key, const json& e, int64_t min) const {
    if (!e.is_number_integer()) fail(key, fmt::format("value {} is not an integer", e.dump()));
    int64_t v = 0;
    try {
      v = checked_integer(e, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), key);
    } catch (const std::runtime_error&) {
      fail(key, fmt::format("value {} does not fit a 64-bit integer", e.dump()));
    }
    if (v < min) fail(key, fmt::format("value {} is below the minimum {}", v, min));
    return v;
  }

  std::string text(const char* key, const json& e) const {
    if (!e.is_string()) fail(key, fmt::format("value {} is not a string", e.dump()));
    return e.get<std::string>();
  }

 private:
  const json& obj_;
  std::string where_;
};

const std::set<std::string> kAxisKeys = {"method",  "pass",      "batch",         "heads",         "kv_heads",
                                         "seqlen",  "seqlen_k",  "head_dim",      "dtype",         "causal",
                                         "padding", "dropout",   "deterministic", "block_r",       "block_c",
                                         "mma",     "kv_layout", "seqlens", "varlen_as", "seqlen_q", "pattern",       "density",       "sparse_block",
                                         "tokens",  "model_dim", "seed",          "sparse_window", "sparse_global"};

SweepSpec parse_one_sweep(const json& obj, const std::string& where) {
  if (!obj.is_object()) throw std::invalid_argument(fmt::format("{}: a sweep must be a JSON object", where));
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!kAxisKeys.count(it.key()) && it.key() != "description")
      throw std::invalid_argument(
          fmt::format("{}: unknown key \"{}\" (axes: {})", where, it.key(), fmt::join(kAxisKeys, ", ")));
  SweepSpec s;
  AxisReader r(obj, where);
  auto int_axis = [&](int64_t min) { return [&r, min](const char* k, const json& e) { return r.integer(k, e, min); }; };
  auto small_int_axis = [&](const char* k, const json& e) {
    const int64_t v = r.integer(k, e, 0);
    if (v > std::numeric_limits<int>::max()) r.fail(k, fmt::format("value {} is above the maximum {}", v, std::numeric_limits<int>::max()));
    return int(v);
  };
  r.list("method", s.methods, [&](const char* k, const json& e) { return r.text(k, e); });
  r.list("pass", s.passes, [&](const char* k, const json& e) {
    const auto p = parse_pass(r.text(k, e));
    if (!p) r.fail(k, fmt::format("value {} is not one of fwd, bwd, fwdbwd", e.dump()));
    return *p;
  });
  r.list("batch", s.batch, int_axis(1));
  r.list("heads", s.heads, int_axis(1));
  r.list("kv_heads", s.kv_heads, int_axis(0));
  r.list("seqlen", s.seqlen, int_axis(1));
  r.list("seqlen_k", s.seqlen_k, int_axis(0));
  r.list("head_dim", s.head_dim, int_axis(1));
  r.list("dtype", s.dtypes, [&](const char* k, const json& e) {
    const auto d = parse_dtype(r.text(k, e));
    if (!d) r.fail(k, fmt::format("value {} is not one of fp16, bf16", e.dump()));
    return *d;
  });
  r.list("causal", s.causal, [&](const char* k, const json& e) {
    if (!e.is_boolean()) r.fail(k, fmt::format("value {} is not true or false", e.dump()));
    return e.get<bool>();
  });
  r.list("padding", s.padding, [&](const char* k, const json& e) {
    const std::string v = r.text(k, e);
    if (v == "none") return Padding::None;
    if (v == "random") return Padding::Random;
    r.fail(k, fmt::format("value {} is not one of none, random", e.dump()));
  });
  r.list("dropout", s.dropout, [&](const char* k, const json& e) {
    if (!e.is_number()) r.fail(k, fmt::format("value {} is not a number", e.dump()));
    const double p = e.get<double>();
    if (!(p >= 0.0 && p < 1.0)) r.fail(k, fmt::format("value {} is not in [0, 1)", e.dump()));
    return p;
  });
  r.list("deterministic", s.deterministic, [&](const char* k, const json& e) {
    if (!e.is_boolean()) r.fail(k, fmt::format("value {} is not true or false", e.dump()));
    return e.get<bool>();
  });
  r.list("block_r", s.block_r, small_int_axis);
  r.list("block_c", s.block_c, small_int_axis);
  r.list("mma", s.mma, [&](const char* k, const json& e) {
    const std::string v = r.text(k, e);
    if (v != "auto" && v != "mma.sync" && v != "wgmma") r.fail(k, fmt::format("value {} is not one of auto, mma.sync, wgmma", e.dump()));
    return v == "auto" ? std::string() : v;
  });
  r.list("kv_layout", s.kv_page, [&](const char* k, const json& e) {
    std::string why;
    const auto page = parse_kv_layout(r.text(k, e), &why);
    if (!page) r.fail(k, why);
    return *page;
  });
  r.list("seqlens", s.seqlens, [&](const char* k, const json& e) {
    std::string why;
    const std::string v = r.text(k, e);
    if (!parse_seqlens(v, &why)) r.fail(k, why);
    return v;
  });
  r.list("varlen_as", s.varlen_padded, [&](const char* k, const json& e) {
    const std::string v = r.text(k, e);
    if (v != "packed" && v != "padded") r.fail(k, fmt::format("value {} is not one of packed, padded", e.dump()));
    return v == "padded";
  });
  if (obj.contains("varlen_as") && !obj.contains("seqlens")) r.fail("varlen_as", "applies to \"seqlens\" points only");
  r.list("seqlen_q", s.varlen_queries, int_axis(1));
  if (obj.contains("seqlen_q") && !obj.contains("seqlens"))
    r.fail("seqlen_q", "applies to \"seqlens\" points only (a varlen decode: the lengths are the key lengths)");
  // Block sparsity (bench/core/sparsity.h); a pattern name is checked by expand().
  r.list("pattern", s.pattern, [&](const char* k, const json& e) { return r.text(k, e); });
  r.list("density", s.density, [&](const char* k, const json& e) {
    if (!e.is_number()) r.fail(k, fmt::format("value {} is not a number", e.dump()));
    const double x = e.get<double>();
    if (!(x > 0.0 && x <= 1.0)) r.fail(k, fmt::format("value {} is not in (0, 1]", e.dump()));
    return x;
  });
  r.list("sparse_block", s.sparse_block, small_int_axis);
  auto scalar = [&](const char* key, int64_t min) -> std::optional<int64_t> {
    if (!obj.contains(key)) return std::nullopt;
    if (obj.at(key).is_array()) r.fail(key, "takes one value, not a list");
    return r.integer(key, obj.at(key), min);
  };
  if (auto t = scalar("tokens", 1)) s.tokens = t;
  if (auto m = scalar("model_dim", 1)) s.model_dim = m;
  if (auto seed = scalar("seed", 0)) s.seed = uint64_t(*seed);
  if (auto w = scalar("sparse_window", 0)) s.sparse_window = int(std::min<int64_t>(*w, std::numeric_limits<int>::max()));
  if (auto g = scalar("sparse_global", 0)) s.sparse_global = int(std::min<int64_t>(*g, std::numeric_limits<int>::max()));
  if (s.tokens && obj.contains("batch")) r.fail("tokens", "and \"batch\" both set the batch: give one");
  if (s.model_dim && obj.contains("heads")) r.fail("model_dim", "and \"heads\" both set the heads: give one");
  return s;
}

}  // namespace

SweepFile parse_sweep_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw std::invalid_argument(fmt::format("{}: the sweep file must hold a JSON object", where));
  SweepFile f;
  if (j.contains("description")) {
    if (!j["description"].is_string())
      throw std::invalid_argument(fmt::format("{}: \"description\" must be a string", where));
    f.description = j["description"].get<std::string>();
  }
  if (j.contains("sweeps")) {
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "sweeps" && it.key() != "description")
        throw std::invalid_argument(
            fmt::format("{}: unknown key \"{}\" beside \"sweeps\" (put axes inside each sweep)", where, it.key()));
    const json& list = j["sweeps"];
    if (!list.is_array() || list.empty())
      throw std::invalid_argument(fmt::format("{}: \"sweeps\" must be a non-empty list of objects", where));
    for (size_t i = 0; i < list.size(); ++i)
      f.sweeps.push_back(parse_one_sweep(list[i], fmt::format("{}: sweeps[{}]", where, i)));
  } else {
    f.sweeps.push_back(parse_one_sweep(j, where));
  }
  for (size_t i = 0; i < f.sweeps.size(); ++i) {
    try {
      expand(f.sweeps[i]);  // impossible shapes fail here, with the file's name
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}: {}", where, e.what()));
    }
  }
  return f;
}

const JsonSchema& sweep_schema() {
  static const JsonSchema schema(kSweepSchemaText);
  return schema;
}

SweepFile parse_sweep_text(const std::string& text, const std::string& where) {
  const json j = parse_json_input(text, where);  // InputError is an std::invalid_argument
  sweep_schema().check(j, where);
  return parse_sweep_json(j, where);
}

SweepFile read_sweep_file(const std::string& path) { return parse_sweep_text(read_input_file(path), path); }

std::vector<Point> expand_all(const std::vector<SweepSpec>& sweeps) {
  std::vector<Point> out;
  std::set<std::string> seen;
  for (const auto& s : sweeps)
    for (auto& p : expand(s))
      if (seen.insert(p.name()).second) {
        if (int64_t(out.size()) >= kMaxPoints)
          throw std::invalid_argument(fmt::format("the sweeps have more than flashio's bound of {} points", kMaxPoints));
        out.push_back(std::move(p));
      }
  return out;
}

}  // namespace flashio
