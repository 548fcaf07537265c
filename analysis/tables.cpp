// report, compare, predict; see tables.h.
#include "analysis/tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "analysis/analyze.h"
#include "analysis/dram_model.h"
#include "analysis/gpus.h"
#include "analysis/io_model.h"
#include "analysis/model_bounds.h"
#include "analysis/models/model.h"
#include "bench/core/json_input.h"

namespace flashio::analysis {

namespace {

using json = nlohmann::json;

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }

// A number cell shown with `digits` decimals after scaling by `shown_per_unit` (1e3: seconds as ms).
Cell fixed_cell(double v, double shown_per_unit, int digits, const std::string& suffix = "") {
  return number_cell(v, fixed(v * shown_per_unit, digits) + suffix);
}

// A setting of the papers' tables: pass and everything about the problem but N and batch
// (FlashAttention-2's setting varies the batch with N at a fixed token count).
std::string setting_of(const json& rec) {
  const json& p = rec["problem"];
  std::string s = fmt::format("{} · h {} · d {} · {}", rec.value("pass", ""), p.value("heads", 0),
                              p.value("head_dim", 0), p.value("dtype", ""));
  if (p.value("kv_heads", 0) != p.value("heads", 0)) s += fmt::format(" · kv heads {}", p.value("kv_heads", 0));
  s += p.value("causal", false) ? " · causal" : "";
  s += p.value("padding", "none") != "none" ? " · masking (key padding)" : "";
  s += number_field(p, "dropout", 0.0) > 0 ? fmt::format(" · dropout {}", number_field(p, "dropout", 0.0)) : "";
  return s;
}

// The record's model, if its method has one.
const IoModel* model_of_record(const json& rec) { return find_model(rec.value("method", "")); }

// The method the papers' speedups are over ("standard attention").
bool speedup_baseline(const json& rec) {
  const IoModel* m = model_of_record(rec);
  return m && m->speedup_baseline();
}

// The record's method, with what its model says it ran where the name does not (`standard`
// records of flashio files written before standard_fused existed ran the fused code:
// analysis/README.md).
std::string method_label(const json& rec, const json& doc) {
  const json& p = rec["problem"];
  std::string m = rec.value("method", "");
  if (const IoModel* model = model_of_record(rec)) m += model->label_note(rec, doc);
  if (p.value("block_r", 0) > 0 || p.value("block_c", 0) > 0)
    m += fmt::format(" ({}×{})", p.value("block_r", 0), p.value("block_c", 0));
  return m;
}

// NaN (written as null) reads as NaN; a time that is not positive is no time (the cell stays empty).
double median_s(const json& rec) {
  const double t = rec.contains("time") ? number_field(rec["time"], "median_s", 0.0) : 0.0;
  return t > 0 ? t : 0.0;
}

std::optional<double> total_memory(const json& rec) {
  if (!rec.contains("memory")) return std::nullopt;
  const json& m = rec["memory"];
  if (m.contains("total_bytes")) return number_field(m, "total_bytes", 0.0);
  return number_field(m, "inputs_bytes", 0.0) + number_field(m, "outputs_bytes", 0.0) +
         number_field(m, "workspace_bytes", 0.0);
}

// The parts of a point's name that neither the setting, the method label nor the N column
// show (a forced --mma path, nk, det, a sparsity pattern, ...): a row of its own, so no record
// of a file is hidden behind another's cell.
std::string variant_of(const json& rec) {
  const std::string name = rec.value("name", "");
  std::string out;
  size_t pos = 0;
  int part = 0;
  while (pos <= name.size()) {
    const size_t slash = std::min(name.find('/', pos), name.size());
    const std::string c = name.substr(pos, slash - pos);
    pos = slash + 1;
    if (part++ < 2) continue;  // method, pass
    const auto starts = [&](const char* p) { return c.rfind(p, 0) == 0; };
    if (starts("b:") || starts("h:") || starts("kvh:") || starts("n:") || starts("d:") || starts("drop:") ||
        starts("tile:") || c == "fp16" || c == "bf16" || c == "causal" || c == "pad" || c.empty())
      continue;
    out += (out.empty() ? "" : "/") + c;
  }
  return out.empty() ? out : " [" + out + "]";
}

// One grid per setting and GPU: rows methods (and their variants), columns N; `values` gives
// the record's numbers in the grid's unit, each with a suffix for its row label (empty for one
// value). Records that would share a cell (same label and N) are told apart by what differs
// between them (the kernel path run, the batch, the file), so every record with a value has a cell.
template <typename Values>
std::vector<Grid> grids(const Documents& docs, const std::string& what, const std::string& unit, Values values) {
  struct Entry {
    std::string label;
    int64_t n;
    double v;
    std::vector<std::string> features;  // kernel path, batch, file: candidates to tell entries apart
  };
  struct Setting {
    std::string setting, device;
    std::vector<Entry> entries;
  };
  std::map<std::string, Setting> by_setting;
  for (const auto& [path, doc] : docs)
    for (const auto& rec : doc.value("records", json::array())) {
      if (rec.value("status", "") != "ok") continue;
      const std::vector<std::pair<std::string, double>> vs = values(rec, doc);
      if (vs.empty()) continue;
      const std::string device = doc["device"].value("name", std::string("?"));
      Setting& s = by_setting[setting_of(rec) + " · " + device];
      s.setting = setting_of(rec), s.device = device;
      const std::string file = std::filesystem::path(path).filename().string();
      const std::string kernel = rec.contains("tiles") ? rec["tiles"].value("mma", std::string()) : std::string();
      for (const auto& [suffix, v] : vs)
        s.entries.push_back({method_label(rec, doc) + variant_of(rec) + suffix,
                             rec["problem"].value("seqlen_q", int64_t(0)),
                             v,
                             {kernel.empty() ? "" : " via " + kernel,
                              fmt::format(" · b {}", rec["problem"].value("batch", int64_t(0))), " · " + file}});
    }
  std::vector<Grid> out;
  for (auto& [key, s] : by_setting) {
    auto& entries = s.entries;
    // Labels whose entries collide get each feature that differs among the colliding entries.
    for (size_t f = 0; f < 3; ++f) {
      std::map<std::pair<std::string, int64_t>, std::set<std::string>> feature_values;
      std::map<std::pair<std::string, int64_t>, int> count;
      for (const auto& e : entries) {
        feature_values[{e.label, e.n}].insert(e.features[f]);
        ++count[{e.label, e.n}];
      }
      std::set<std::string> split;
      for (const auto& [k, c] : count)
        if (c > 1 && feature_values[k].size() > 1) split.insert(k.first);
      for (auto& e : entries)
        if (split.count(e.label)) e.label += e.features[f];
    }
    std::map<std::string, std::set<int64_t>> taken;
    Grid g{what, unit, s.setting, s.device, {}};
    for (const auto& e : entries) {
      std::string label = e.label;
      for (int k = 2; taken[label].count(e.n); ++k) label = fmt::format("{} #{}", e.label, k);  // alike in all
      taken[label].insert(e.n);
      g.values.push_back({label, e.n, e.v});
    }
    out.push_back(std::move(g));
  }
  return out;
}

// A grid's numbers as text.
std::string grid_text(const Grid& g, double v) {
  if (g.unit == "s") return fixed(v * 1e3, 3);
  if (g.unit == "B") return fixed(v / 1e6, 1);
  if (g.unit == "ratio") return fixed(v, 2) + "×";
  if (g.unit == "flop/s") return fixed(v / 1e12, 1);
  return fmt::format("{:g}", v);
}

// The standard method's time at the same point of the same file, for speedups.
std::map<std::string, double> standard_times(const json& doc) {
  std::map<std::string, double> t;
  for (const auto& rec : doc.value("records", json::array()))
    if (rec.value("status", "") == "ok" && speedup_baseline(rec) && median_s(rec) > 0) {
      std::string name = rec.value("name", "");
      t[name.substr(name.find('/'))] = median_s(rec);
    }
  return t;
}

std::string point_key(const json& rec) {
  const std::string name = rec.value("name", "");
  return name.substr(name.find('/'));
}

double peak_flops(const json& device, const json& rec) {
  const auto g = find_gpu(device.value("name", std::string()));
  if (!g) return 0;
  return rec["problem"].value("dtype", "fp16") == "bf16" ? g->peak_bf16_tensor_flops : g->peak_fp16_tensor_flops;
}

}  // namespace

Cell text_cell(const std::string& s) { return {s, s}; }
Cell number_cell(double v, const std::string& text) { return {text, std::isfinite(v) ? json(v) : json(nullptr)}; }
Cell no_cell(const std::string& text) { return {text, nullptr}; }

std::string render(const std::vector<Table>& tables, Format f) {
  std::string s;
  if (f == Format::Json) {
    json j = json::array();
    for (const auto& t : tables) {
      json cols = json::array(), rows = json::array();
      for (size_t i = 0; i < t.header.size(); ++i)
        cols.push_back({{"name", t.header[i]}, {"unit", i < t.units.size() ? t.units[i] : std::string()}});
      for (const auto& r : t.rows) {
        json row = json::array();
        for (const auto& c : r) row.push_back(c.value);
        rows.push_back(row);
      }
      j.push_back({{"title", t.title}, {"columns", cols}, {"rows", rows}});
    }
    return j.dump(1) + "\n";
  }
  for (const auto& t : tables) {
    if (f == Format::Markdown) {
      s += "### " + t.title + "\n\n|";
      for (const auto& h : t.header) s += " " + h + " |";
      s += "\n|";
      for (size_t i = 0; i < t.header.size(); ++i) s += " --- |";
      s += "\n";
      for (const auto& r : t.rows) {
        s += "|";
        for (const auto& c : r) s += " " + c.text + " |";
        s += "\n";
      }
      s += "\n";
    } else {
      s += csv_cell(t.title) + "\n";
      for (size_t i = 0; i < t.header.size(); ++i) s += (i ? "," : "") + csv_cell(t.header[i]);
      s += "\n";
      for (const auto& r : t.rows) {
        for (size_t i = 0; i < r.size(); ++i) s += (i ? "," : "") + csv_cell(r[i].text);
        s += "\n";
      }
      s += "\n";
    }
  }
  return s;
}

Documents read_documents(const std::vector<std::string>& paths) {
  Documents docs;
  for (const auto& p : paths) {
    json doc = parse_json_input(read_input_file(p), p);  // bounded (bench/core/json_input.h)
    if (doc.is_object() && doc.contains("$schema")) {    // results/schema.json caught by a glob: not data
      fmt::print(stderr, "flashio: skipping {}: a JSON schema, not a result file\n", p);
      continue;
    }
    result_file_schema().check(doc, p);
    docs.emplace_back(p, std::move(doc));
  }
  return docs;
}

bool is_peer_method(const std::string& method) { return method.rfind("sdpa_", 0) == 0; }

std::vector<Grid> report_grids(const Documents& docs, GridQuantity q) {
  using Values = std::vector<std::pair<std::string, double>>;
  switch (q) {
    case GridQuantity::Runtime:
      return grids(docs, "Runtime (ms)", "s", [](const json& r, const json&) -> Values {
        if (median_s(r) <= 0) return {};
        return {{"", median_s(r)}};
      });
    case GridQuantity::Memory:
      return grids(docs, "Memory (MB)", "B", [](const json& r, const json&) -> Values {
        const auto m = total_memory(r);
        if (!m) return {};
        return {{"", *m}};
      });
    case GridQuantity::SpeedupOverStandard: {
      std::map<const json*, std::map<std::string, double>> std_times;
      for (const auto& [path, doc] : docs) std_times[&doc] = standard_times(doc);
      return grids(docs, "Speedup over standard", "ratio", [&](const json& r, const json& doc) -> Values {
        const auto& st = std_times[&doc];
        const auto it = st.find(point_key(r));
        if (speedup_baseline(r) || it == st.end() || median_s(r) <= 0) return {};
        return {{"", it->second / median_s(r)}};
      });
    }
    case GridQuantity::Tflops:
      return grids(docs, "TFLOP/s", "flop/s", [](const json& r, const json&) -> Values {
        if (median_s(r) <= 0) return {};
        return {{"", number_field(r, "flops", 0.0) / median_s(r)}};
      });
    case GridQuantity::SpeedupOverPeers: {
      // (GPU, point) → peer → its time; the first file's record where two files have it.
      std::map<std::pair<std::string, std::string>, std::map<std::string, double>> peers;
      for (const auto& [path, doc] : docs)
        for (const auto& rec : doc.value("records", json::array()))
          if (rec.value("status", "") == "ok" && is_peer_method(rec.value("method", "")) && median_s(rec) > 0)
            peers[{doc["device"].value("name", std::string("?")), point_key(rec)}].emplace(rec.value("method", ""),
                                                                                           median_s(rec));
      return grids(docs, "Speedup over peers", "ratio", [&](const json& r, const json& doc) -> Values {
        if (is_peer_method(r.value("method", "")) || speedup_baseline(r) || median_s(r) <= 0) return {};
        const auto it = peers.find({doc["device"].value("name", std::string("?")), point_key(r)});
        if (it == peers.end()) return {};
        Values vs;
        for (const auto& [peer, t] : it->second) vs.push_back({" over " + peer, t / median_s(r)});
        return vs;
      });
    }
  }
  return {};
}

Table grid_table(const Grid& g) {
  std::set<int64_t> ns;
  std::map<std::string, std::map<int64_t, double>> rows;
  for (const auto& v : g.values) {
    ns.insert(v.n);
    rows[v.label].emplace(v.n, v.value);
  }
  Table t{g.what + " — " + g.setting + " · " + g.device, {"method"}, {""}, {}};
  for (int64_t n : ns) {
    t.header.push_back(std::to_string(n));
    t.units.push_back(g.unit);
  }
  for (const auto& [m, cells] : rows) {
    std::vector<Cell> row{text_cell(m)};
    for (int64_t n : ns)
      row.push_back(cells.count(n) ? number_cell(cells.at(n), grid_text(g, cells.at(n))) : no_cell());
    t.rows.push_back(row);
  }
  return t;
}

std::vector<Table> report_tables(const Documents& docs) {
  std::vector<Table> out;
  for (const GridQuantity q :
       {GridQuantity::Runtime, GridQuantity::Memory, GridQuantity::SpeedupOverStandard, GridQuantity::Tflops})
    for (const Grid& g : report_grids(docs, q)) out.push_back(grid_table(g));

  // Figure 2 (left): N = 1024, d = 64, 16 heads, batch 64, forward + backward.
  Table fig2{"Figure 2 (left): attention on GPT-2 medium shapes (N 1024, d 64, 16 heads, batch 64, fwd+bwd)",
             {"device", "method", "GFLOPs", "HBM R/W (GB)", "HBM source", "runtime (ms)"},
             {"", "", "flop", "B", "", "s"},
             {}};
  for (const auto& [path, doc] : docs)
    for (const auto& rec : doc.value("records", json::array())) {
      const json& p = rec["problem"];
      if (rec.value("status", "") != "ok" || rec.value("pass", "") != "fwdbwd" || p.value("seqlen_q", 0) != 1024 ||
          p.value("head_dim", 0) != 64 || p.value("heads", 0) != 16 || p.value("batch", 0) != 64)
        continue;
      Cell hbm = no_cell(), source = no_cell();
      const json c = rec.value("counters", json::object());
      if (c.value("status", "") == "ok" && c.contains("bytes") && c["bytes"].contains("dram_read")) {
        hbm = fixed_cell(number_field(c["bytes"], "dram_read", 0.0) + number_field(c["bytes"], "dram_write", 0.0), 1e-9,
                         2);
        source = text_cell("measured");
      } else {
        const RecordModel rm = model_point_of(rec, doc);
        if (rm.point) {
          hbm = fixed_cell(double(compulsory_dram(*rm.point).total()), 1e-9, 2);
          source = text_cell("model (compulsory)");
        }
      }
      fig2.rows.push_back({text_cell(doc["device"].value("name", std::string("?"))),
                           text_cell(method_label(rec, doc) + variant_of(rec)),
                           fixed_cell(number_field(rec, "flops", 0.0), 1e-9, 1), hbm, source,
                           fixed_cell(median_s(rec), 1e3, 2)});
    }
  if (!fig2.rows.empty()) out.push_back(fig2);

  // DRAM bandwidth (records since the bandwidth fields): the ideal time at the GPU's peak for the
  // compulsory bytes, and, where counters were collected, the achieved DRAM bandwidth.
  Table bw{"DRAM bandwidth: compulsory bytes at the peak (ideal) and the counters' DRAM bytes over the median time",
           {"device", "point", "runtime (ms)", "compulsory (MB)", "ideal (ms)", "of ideal", "DRAM R/W (MB)",
            "achieved (GB/s)", "of peak"},
           {"", "", "s", "B", "s", "ratio", "B", "B/s", "ratio"},
           {}};
  for (const auto& [path, doc] : docs)
    for (const auto& rec : doc.value("records", json::array())) {
      if (rec.value("status", "") != "ok" || !rec.contains("bandwidth") || !rec["bandwidth"].is_object()) continue;
      const json& b = rec["bandwidth"];
      auto optional = [&](const char* key, double scale, int digits) {
        return b.contains(key) ? fixed_cell(number_field(b, key, 0.0), scale, digits) : no_cell();
      };
      auto percent = [&](const char* key) {
        if (!b.contains(key)) return no_cell();
        const double v = number_field(b, key, 0.0);
        return number_cell(v, fmt::format("{:.1f} %", 100.0 * v));
      };
      bw.rows.push_back(
          {text_cell(doc["device"].value("name", std::string("?"))), text_cell(rec.value("name", "")),
           fixed_cell(median_s(rec), 1e3, 3), fixed_cell(number_field(b, "compulsory_bytes", 0.0), 1e-6, 1),
           fixed_cell(number_field(b, "ideal_s", 0.0), 1e3, 3), percent("ideal_fraction"),
           optional("dram_bytes", 1e-6, 1), optional("achieved_bytes_per_s", 1e-9, 1), percent("peak_fraction")});
    }
  if (!bw.rows.empty()) out.push_back(bw);

  // Every record without a time, so that none is left out of the report without a word.
  Table untimed{"Points without a time (skipped, out of memory, failed)",
                {"file", "point", "status", "reason"},
                {"", "", "", ""},
                {}};
  for (const auto& [path, doc] : docs)
    for (const auto& rec : doc.value("records", json::array()))
      if (rec.value("status", "") != "ok" || median_s(rec) <= 0)
        untimed.rows.push_back({text_cell(std::filesystem::path(path).filename().string()),
                                text_cell(rec.value("name", "")), text_cell(rec.value("status", "")),
                                text_cell(rec.value("reason", ""))});
  if (!untimed.rows.empty()) out.push_back(untimed);
  return out;
}

namespace {

// The point a record is matched on across files: its name, with the method its model says it
// is matched as where that differs (a `standard` record of the fused code, flashio files from
// before standard_fused existed, is matched with standard_fused, not with the separate-kernel
// `standard` of newer files or the paper's PyTorch).
std::string compare_key(const json& rec, const json& doc) {
  const std::string name = rec.value("name", "");
  const IoModel* model = model_of_record(rec);
  const std::string as = model ? model->matched_as(rec, doc) : std::string();
  return as.empty() ? name : as + name.substr(name.find('/'));
}

}  // namespace

std::vector<std::string> file_labels(const Documents& docs) {
  std::vector<std::string> labels;
  for (const auto& [path, doc] : docs) {
    const json& dev = doc.contains("device") && doc["device"].is_object() ? doc["device"] : json::object();
    std::string l = dev.value("name", std::string("?"));
    if (doc.value("producer", "") == "published") {
      l += " (published)";
    } else {
      const json& b = doc.contains("build") && doc["build"].is_object() ? doc["build"] : json::object();
      const std::string rev = b.contains("git_revision") && b["git_revision"].is_string()
                                  ? b["git_revision"].get<std::string>()
                                  : std::string();
      l += " @" + (rev.empty() ? std::string("?") : rev.substr(0, 7));
    }
    labels.push_back(l);
  }
  std::map<std::string, int> count;  // the same GPU and revision twice: add the file names
  for (const auto& l : labels) ++count[l];
  for (size_t i = 0; i < labels.size(); ++i)
    if (count[labels[i]] > 1) labels[i] += " (" + std::filesystem::path(docs[i].first).filename().string() + ")";
  return labels;
}

std::string matched_key(const json& rec, const json& doc) { return compare_key(rec, doc); }

std::vector<Table> compare_tables(const Documents& docs) {
  // key → file index → record
  std::map<std::string, std::map<size_t, const json*>> points;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (!docs[i].second.contains("records")) continue;
    for (const auto& rec : docs[i].second.at("records"))  // by reference: the map keeps pointers
      if (rec.value("status", "") == "ok" && median_s(rec) > 0)
        points[compare_key(rec, docs[i].second)].emplace(i, &rec);
  }
  std::vector<std::map<std::string, double>> st;
  for (const auto& [p, d] : docs) st.push_back(standard_times(d));
  const std::vector<std::string> labels = file_labels(docs);

  Table t{"Matched points across GPUs", {"point"}, {""}, {}};
  for (const auto& label : labels) {
    const std::vector<std::pair<const char*, const char*>> cols = {
        {"ms", "s"}, {"TFLOP/s", "flop/s"}, {"% peak", "%"}, {"DRAM bytes", "B"}, {"speedup", "ratio"}};
    for (const auto& [col, unit] : cols) {
      t.header.push_back(label + " " + col);
      t.units.push_back(unit);
    }
  }
  Table unmatched{"Points in one file only (not compared)", {"point", "file"}, {"", ""}, {}};
  for (const auto& [name, by_file] : points) {
    if (by_file.size() < 2) {
      unmatched.rows.push_back({text_cell(name), text_cell(labels[by_file.begin()->first])});
      continue;
    }
    std::vector<Cell> row{text_cell(name)};
    for (size_t i = 0; i < docs.size(); ++i) {
      const auto it = by_file.find(i);
      if (it == by_file.end()) {
        row.insert(row.end(), 5, no_cell());
        continue;
      }
      const json& r = *it->second;
      const double s = median_s(r), tf = number_field(r, "flops", 0.0) / s;
      const double peak = peak_flops(docs[i].second["device"], r);
      const json c = r.value("counters", json::object());
      Cell dram = no_cell();
      if (c.value("status", "") == "ok" && c.contains("bytes") && c["bytes"].contains("dram_read")) {
        const double b = number_field(c["bytes"], "dram_read", 0.0) + number_field(c["bytes"], "dram_write", 0.0);
        dram = number_cell(b, format_bytes(b));
      }
      const auto sit = st[i].find(point_key(r));
      row.push_back(fixed_cell(s, 1e3, 3));
      row.push_back(fixed_cell(tf, 1e-12, 1));
      row.push_back(peak > 0 ? fixed_cell(100 * tf / peak, 1, 1) : no_cell());
      row.push_back(dram);
      row.push_back(sit != st[i].end() && !speedup_baseline(r) ? fixed_cell(sit->second / s, 1, 2, "×") : no_cell());
    }
    t.rows.push_back(row);
  }
  std::vector<Table> out{t};
  if (!unmatched.rows.empty()) out.push_back(unmatched);
  return out;
}

std::vector<Table> predict_tables(const PredictRequest& r) {
  std::vector<GpuFigures> gpus = r.specs;
  for (const auto& key : r.gpus) {
    const auto g = find_gpu(key);
    if (!g) {
      std::vector<std::string> keys;
      for (const auto& x : gpu_table()) keys.push_back(x.key);
      throw std::invalid_argument(
          fmt::format("unknown GPU '{}' (known: {}; or describe it with --gpu-spec)", key, fmt::join(keys, ", ")));
    }
    gpus.push_back(*g);
  }
  std::vector<Table> out;
  const int64_t d = r.head_dim;
  for (const GpuFigures& g : gpus) {
    GpuLimits lim{g.sm_count, g.smem_per_sm_bytes, g.l2_bytes, g.max_threads_per_sm};
    lim.l2_partitions = l2_partitions_of(g.name);
    lim.l2_dirty = l2_dirty_rule_of(g.name);
    lim.wave_model = r.wave_model;
    Table t{fmt::format(
                "{}: {} SMs, {} KiB shared memory/SM, L2 {} MiB, {:.0f} GB/s, {:.0f} TFLOP/s fp16 — b {} · h {} · "
                "d {}{}",
                g.name, g.sm_count, g.smem_per_sm_bytes / 1024, g.l2_bytes / (1024 * 1024), g.dram_bytes_per_s / 1e9,
                g.peak_fp16_tensor_flops / 1e12, r.batch, r.heads, d, r.causal ? " · causal" : ""),
            {"method", "pass", "N", "fwd tile", "SM↔L2", r.wave_model ? "DRAM (waves)" : "DRAM (L2 simulation)",
             "DRAM compulsory", "DRAM dominant term", "roofline (ms)", "bound"},
            {"", "", "", "", "B", "B", "B", "", "s", ""},
            {}};
    for (const auto& method : r.methods)
      for (const auto& pass_name : r.passes)
        for (int64_t n : r.seqlens) {
          const auto pass = parse_pass(pass_name);
          if (!pass) throw std::invalid_argument("unknown pass " + pass_name);
          const std::vector<Cell> head{text_cell(method), text_cell(pass_name),
                                       number_cell(double(n), std::to_string(n))};
          auto refused = [&](const Cell& tile, const Cell& why) {
            std::vector<Cell> row = head;
            row.push_back(tile);
            row.push_back(why);
            row.insert(row.end(), 5, no_cell());
            t.rows.push_back(row);
          };
          ModelPoint m;
          m.method = method;
          const IoModel& model = model_of(m);
          if (model.tiles_from_launches())
            throw std::invalid_argument(fmt::format(
                "{}: a peer's tiles are read from its launches in a result file (flashio analyze): nothing to predict",
                method));
          m.pass = *pass;
          m.problem.batch = r.batch, m.problem.heads = r.heads, m.problem.seqlen_q = n, m.problem.head_dim = d;
          m.problem.causal = r.causal;
          int64_t fwd_smem = 0, bwd_smem = 0;
          Cell tile = no_cell();
          if (model.exact()) {  // the tiles the method's kernels would run (the kernels' config headers)
            const PredictedTiles pt = model.predict_tiles(m.problem, g.smem_per_block_optin_bytes);
            if (!pt.fwd) {
              refused(text_cell("no tile fits"), no_cell());
              continue;
            }
            const ModelTiles& ft = *pt.fwd;
            m.fwd_tiles = ft;
            m.bwd_tiles = pt.bwd;
            fwd_smem = pt.fwd_smem, bwd_smem = pt.bwd_smem;
            tile = text_cell(fmt::format("{}×{}", ft.block_r, ft.block_c));
            const int fwd_blocks = blocks_per_sm(ft.warps * 32, fwd_smem, lim);
            const bool fwd_fits = fwd_blocks > 0;
            m.fwd_l1 = l1_reuse_of(g.name, fwd_smem, fwd_blocks);
            const bool bwd_fits = bwd_smem <= g.smem_per_block_optin_bytes && pt.bwd_kernel &&
                                  blocks_per_sm(pt.bwd.warps * 32, bwd_smem, lim) > 0;
            if (!fwd_fits) {
              refused(tile, text_cell("forward kernel does not fit"));
              continue;
            }
            if (*pass != Pass::Fwd && !bwd_fits) {
              refused(tile, text_cell("backward kernel does not fit"));
              continue;
            }
          }
          if (auto why = model_work_reason(m)) throw std::invalid_argument(fmt::format("N = {}: {}", n, *why));
          const Traffic sm = predict_sm_l2(m);
          const DramPrediction dram = predict_dram(m, fwd_smem, bwd_smem, lim, r.l2_usable_fraction);
          const double t_compute = flops(m.problem, *pass) / g.peak_fp16_tensor_flops;
          const double t_memory = double(dram.predicted) / g.dram_bytes_per_s;
          std::vector<Cell> row = head;
          row.push_back(tile);
          for (const double b : {double(sm.total()), double(dram.predicted), double(dram.compulsory)})
            row.push_back(number_cell(b, format_bytes(b)));
          row.push_back(dram.dominant.empty() ? no_cell() : text_cell(dram.dominant));
          row.push_back(fixed_cell(std::max(t_compute, t_memory), 1e3, 3));
          row.push_back(text_cell(t_compute >= t_memory ? "compute" : "memory"));
          t.rows.push_back(row);
        }
    out.push_back(t);
  }
  return out;
}

}  // namespace flashio::analysis
