// report, compare, predict; see tables.h.
#include "analysis/tables.h"

#include <fmt/format.h>

#include <algorithm>
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
  return number_field(m, "inputs_bytes", 0.0) + number_field(m, "outputs_bytes", 0.0) + number_field(m, "workspace_bytes", 0.0);
}

// One grid per setting: rows methods, columns N; `value` gives a cell or nothing.
template <typename Value>
std::vector<Table> grid(const Documents& docs, const std::string& what, Value value) {
  struct Cells {
    std::set<int64_t> ns;
    std::map<std::string, std::map<int64_t, std::string>> rows;
  };
  std::map<std::string, Cells> by_setting;
  for (const auto& [path, doc] : docs)
    for (const auto& rec : doc.value("records", json::array())) {
      if (rec.value("status", "") != "ok") continue;
      const auto v = value(rec, doc);
      if (!v) continue;
      const std::string setting = setting_of(rec) + " · " + doc["device"].value("name", std::string("?"));
      const int64_t n = rec["problem"].value("seqlen_q", int64_t(0));
      Cells& c = by_setting[setting];
      c.ns.insert(n);
      c.rows[method_label(rec, doc)].emplace(n, *v);
    }
  std::vector<Table> out;
  for (const auto& [setting, c] : by_setting) {
    Table t{what + " — " + setting, {"method"}, {}};
    for (int64_t n : c.ns) t.header.push_back(std::to_string(n));
    for (const auto& [m, cells] : c.rows) {
      std::vector<std::string> row{m};
      for (int64_t n : c.ns) row.push_back(cells.count(n) ? cells.at(n) : "-");
      t.rows.push_back(row);
    }
    out.push_back(t);
  }
  return out;
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

std::string render(const std::vector<Table>& tables, Format f) {
  std::string s;
  if (f == Format::Json) {
    json j = json::array();
    for (const auto& t : tables) j.push_back({{"title", t.title}, {"header", t.header}, {"rows", t.rows}});
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
        for (const auto& c : r) s += " " + c + " |";
        s += "\n";
      }
      s += "\n";
    } else {
      s += csv_cell(t.title) + "\n";
      for (size_t i = 0; i < t.header.size(); ++i) s += (i ? "," : "") + csv_cell(t.header[i]);
      s += "\n";
      for (const auto& r : t.rows) {
        for (size_t i = 0; i < r.size(); ++i) s += (i ? "," : "") + csv_cell(r[i]);
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
    if (doc.is_object() && doc.contains("$schema")) {  // results/schema.json caught by a glob: not data
      fmt::print(stderr, "flashio: skipping {}: a JSON schema, not a result file\n", p);
      continue;
    }
    result_file_schema().check(doc, p);
    docs.emplace_back(p, std::move(doc));
  }
  return docs;
}

std::vector<Table> report_tables(const Documents& docs) {
  std::vector<Table> out;
  auto append = [&](std::vector<Table> t) { out.insert(out.end(), t.begin(), t.end()); };
  append(grid(docs, "Runtime (ms)", [](const json& r, const json&) -> std::optional<std::string> {
    if (median_s(r) <= 0) return std::nullopt;
    return fixed(median_s(r) * 1e3, 3);
  }));
  append(grid(docs, "Memory (MB)", [](const json& r, const json&) -> std::optional<std::string> {
    const auto m = total_memory(r);
    if (!m) return std::nullopt;
    return fixed(*m / 1e6, 1);
  }));
  std::map<const json*, std::map<std::string, double>> std_times;
  for (const auto& [path, doc] : docs) std_times[&doc] = standard_times(doc);
  append(grid(docs, "Speedup over standard", [&](const json& r, const json& doc) -> std::optional<std::string> {
    const auto& st = std_times[&doc];
    const auto it = st.find(point_key(r));
    if (speedup_baseline(r) || it == st.end() || median_s(r) <= 0) return std::nullopt;
    return fixed(it->second / median_s(r), 2) + "×";
  }));
  append(grid(docs, "TFLOP/s", [](const json& r, const json&) -> std::optional<std::string> {
    if (median_s(r) <= 0) return std::nullopt;
    return fixed(number_field(r, "flops", 0.0) / median_s(r) / 1e12, 1);
  }));

  // Figure 2 (left): N = 1024, d = 64, 16 heads, batch 64, forward + backward.
  Table fig2{"Figure 2 (left): attention on GPT-2 medium shapes (N 1024, d 64, 16 heads, batch 64, fwd+bwd)",
             {"device", "method", "GFLOPs", "HBM R/W (GB)", "HBM source", "runtime (ms)"},
             {}};
  for (const auto& [path, doc] : docs)
    for (const auto& rec : doc.value("records", json::array())) {
      const json& p = rec["problem"];
      if (rec.value("status", "") != "ok" || rec.value("pass", "") != "fwdbwd" || p.value("seqlen_q", 0) != 1024 ||
          p.value("head_dim", 0) != 64 || p.value("heads", 0) != 16 || p.value("batch", 0) != 64)
        continue;
      std::string hbm = "-", source = "-";
      const json c = rec.value("counters", json::object());
      if (c.value("status", "") == "ok" && c.contains("bytes") && c["bytes"].contains("dram_read")) {
        hbm = fixed((number_field(c["bytes"], "dram_read", 0.0) + number_field(c["bytes"], "dram_write", 0.0)) / 1e9, 2);
        source = "measured";
      } else {
        const RecordModel rm = model_point_of(rec, doc);
        if (rm.point) {
          hbm = fixed(double(compulsory_dram(*rm.point).total()) / 1e9, 2);
          source = "model (compulsory)";
        }
      }
      fig2.rows.push_back({doc["device"].value("name", std::string("?")), method_label(rec, doc),
                           fixed(number_field(rec, "flops", 0.0) / 1e9, 1), hbm, source, fixed(median_s(rec) * 1e3, 2)});
    }
  if (!fig2.rows.empty()) out.push_back(fig2);
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

  Table t{"Matched points across GPUs", {"point"}, {}};
  for (const auto& [path, doc] : docs) {
    const std::string dev = doc["device"].value("name", std::string("?")) +
                            (doc.value("producer", "") == "published" ? " (published)" : "");
    for (const char* col : {"ms", "TFLOP/s", "% peak", "DRAM bytes", "speedup"}) t.header.push_back(dev + " " + col);
  }
  for (const auto& [name, by_file] : points) {
    if (by_file.size() < 2) continue;
    std::vector<std::string> row{name};
    for (size_t i = 0; i < docs.size(); ++i) {
      const auto it = by_file.find(i);
      if (it == by_file.end()) {
        row.insert(row.end(), 5, "-");
        continue;
      }
      const json& r = *it->second;
      const double s = median_s(r), tf = number_field(r, "flops", 0.0) / s;
      const double peak = peak_flops(docs[i].second["device"], r);
      const json c = r.value("counters", json::object());
      std::string dram = "-";
      if (c.value("status", "") == "ok" && c.contains("bytes") && c["bytes"].contains("dram_read"))
        dram = format_bytes(number_field(c["bytes"], "dram_read", 0.0) + number_field(c["bytes"], "dram_write", 0.0));
      const auto sit = st[i].find(point_key(r));
      row.push_back(fixed(s * 1e3, 3));
      row.push_back(fixed(tf / 1e12, 1));
      row.push_back(peak > 0 ? fixed(100 * tf / peak, 1) : "-");
      row.push_back(dram);
      row.push_back(sit != st[i].end() && !speedup_baseline(r) ? fixed(sit->second / s, 2) + "×" : "-");
    }
    t.rows.push_back(row);
  }
  return {t};
}

std::vector<Table> predict_tables(const PredictRequest& r) {
  std::vector<Table> out;
  const int64_t d = r.head_dim;
  for (const auto& key : r.gpus) {
    const auto g = find_gpu(key);
    if (!g) {
      std::vector<std::string> keys;
      for (const auto& x : gpu_table()) keys.push_back(x.key);
      throw std::invalid_argument(fmt::format("unknown GPU '{}' (known: {})", key, fmt::join(keys, ", ")));
    }
    const GpuLimits lim{g->sm_count, g->smem_per_sm_bytes, g->l2_bytes, g->max_threads_per_sm};
    Table t{
        fmt::format("{}: {} SMs, {} KiB shared memory/SM, L2 {} MiB, {:.0f} GB/s, {:.0f} TFLOP/s fp16 — b {} · h {} · "
                    "d {}{}",
                    g->name, g->sm_count, g->smem_per_sm_bytes / 1024, g->l2_bytes / (1024 * 1024),
                    g->dram_bytes_per_s / 1e9, g->peak_fp16_tensor_flops / 1e12, r.batch, r.heads, d,
                    r.causal ? " · causal" : ""),
        {"method", "pass", "N", "fwd tile", "SM↔L2", "DRAM (two-level)", "DRAM compulsory", "roofline (ms)", "bound"},
        {}};
    for (const auto& method : r.methods)
      for (const auto& pass_name : r.passes)
        for (int64_t n : r.seqlens) {
          const auto pass = parse_pass(pass_name);
          if (!pass) throw std::invalid_argument("unknown pass " + pass_name);
          ModelPoint m;
          m.method = method;
          const IoModel& model = model_of(m);
          m.pass = *pass;
          m.problem.batch = r.batch, m.problem.heads = r.heads, m.problem.seqlen_q = n, m.problem.head_dim = d;
          m.problem.causal = r.causal;
          int64_t fwd_smem = 0, bwd_smem = 0;
          std::string tile = "-";
          if (model.exact()) {  // the tiles the method's kernels would run (the kernels' config headers)
            const PredictedTiles pt = model.predict_tiles(d, g->smem_per_block_optin_bytes);
            if (!pt.fwd) {
              t.rows.push_back({method, pass_name, std::to_string(n), "no tile fits", "-", "-", "-", "-", "-"});
              continue;
            }
            const ModelTiles& ft = *pt.fwd;
            m.fwd_tiles = ft;
            m.bwd_tiles = pt.bwd;
            fwd_smem = pt.fwd_smem, bwd_smem = pt.bwd_smem;
            tile = fmt::format("{}×{}", ft.block_r, ft.block_c);
            const bool fwd_fits = blocks_per_sm(ft.warps * 32, fwd_smem, lim) > 0;
            const bool bwd_fits = bwd_smem <= g->smem_per_block_optin_bytes && pt.bwd_kernel &&
                                  blocks_per_sm(pt.bwd.warps * 32, bwd_smem, lim) > 0;
            if (!fwd_fits) {
              t.rows.push_back(
                  {method, pass_name, std::to_string(n), tile, "forward kernel does not fit", "-", "-", "-", "-"});
              continue;
            }
            if (*pass != Pass::Fwd && !bwd_fits) {
              t.rows.push_back(
                  {method, pass_name, std::to_string(n), tile, "backward kernel does not fit", "-", "-", "-", "-"});
              continue;
            }
          }
          if (auto why = model_work_reason(m)) throw std::invalid_argument(fmt::format("N = {}: {}", n, *why));
          const Traffic sm = predict_sm_l2(m);
          const DramPrediction dram = predict_dram(m, fwd_smem, bwd_smem, lim, r.l2_usable_fraction);
          const double t_compute = flops(m.problem, *pass) / g->peak_fp16_tensor_flops;
          const double t_memory = double(dram.predicted) / g->dram_bytes_per_s;
          t.rows.push_back({method, pass_name, std::to_string(n), tile, format_bytes(double(sm.total())),
                            format_bytes(double(dram.predicted)), format_bytes(double(dram.compulsory)),
                            fixed(std::max(t_compute, t_memory) * 1e3, 3),
                            t_compute >= t_memory ? "compute" : "memory"});
        }
    out.push_back(t);
  }
  return out;
}

}  // namespace flashio::analysis
