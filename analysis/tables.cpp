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
#include "kernels/flash1/flash1_configs.h"
#include "kernels/flash2/flash2_bwd_config.h"
#include "kernels/flash2/flash2_fwd_configs.h"

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
  s += p.value("dropout", 0.0) > 0 ? fmt::format(" · dropout {}", p.value("dropout", 0.0)) : "";
  return s;
}

// The record's method; `standard` records of flashio files written before standard_fused
// existed ran the fused code, which the label says (analysis/README.md).
std::string method_label(const json& rec, const json& doc) {
  const json& p = rec["problem"];
  std::string m = rec.value("method", "");
  if (m == "standard" && standard_elementwise(rec, doc) == Elementwise::Fused) m += " (fused kernels)";
  if (p.value("block_r", 0) > 0 || p.value("block_c", 0) > 0)
    m += fmt::format(" ({}×{})", p.value("block_r", 0), p.value("block_c", 0));
  return m;
}

double median_s(const json& rec) { return rec.contains("time") ? rec["time"].value("median_s", 0.0) : 0.0; }

std::optional<double> total_memory(const json& rec) {
  if (!rec.contains("memory")) return std::nullopt;
  const json& m = rec["memory"];
  if (m.contains("total_bytes")) return m["total_bytes"].get<double>();
  return m.value("inputs_bytes", 0.0) + m.value("outputs_bytes", 0.0) + m.value("workspace_bytes", 0.0);
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
    if (rec.value("status", "") == "ok" && rec.value("method", "") == "standard" && median_s(rec) > 0) {
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
    std::ifstream in(p);
    if (!in) throw std::runtime_error(fmt::format("cannot read {}", p));
    try {
      docs.emplace_back(p, json::parse(in));
    } catch (const json::exception& e) {
      throw std::runtime_error(fmt::format("{}: not valid JSON ({})", p, e.what()));
    }
    if (docs.back().second.contains("$schema")) {  // results/schema.json caught by a glob: not data
      fmt::print(stderr, "flashio: skipping {}: a JSON schema, not a result file\n", p);
      docs.pop_back();
      continue;
    }
    if (docs.back().second.value("schema", "") != "flashio/result")
      throw std::runtime_error(fmt::format("{}: not a flashio result file", p));
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
    if (r.value("method", "") == "standard" || it == st.end() || median_s(r) <= 0) return std::nullopt;
    return fixed(it->second / median_s(r), 2) + "×";
  }));
  append(grid(docs, "TFLOP/s", [](const json& r, const json&) -> std::optional<std::string> {
    if (median_s(r) <= 0) return std::nullopt;
    return fixed(r.value("flops", 0.0) / median_s(r) / 1e12, 1);
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
        hbm = fixed((c["bytes"].value("dram_read", 0.0) + c["bytes"].value("dram_write", 0.0)) / 1e9, 2);
        source = "measured";
      } else {
        const RecordModel rm = model_point_of(rec, doc);
        if (rm.point) {
          hbm = fixed(double(compulsory_dram(*rm.point).total()) / 1e9, 2);
          source = "model (compulsory)";
        }
      }
      fig2.rows.push_back({doc["device"].value("name", std::string("?")), method_label(rec, doc),
                           fixed(rec.value("flops", 0.0) / 1e9, 1), hbm, source, fixed(median_s(rec) * 1e3, 2)});
    }
  if (!fig2.rows.empty()) out.push_back(fig2);
  return out;
}

namespace {

// The point a record is matched on across files: its name, except that a `standard` record of
// the fused code (flashio files from before standard_fused existed) is matched with
// standard_fused, not with the separate-kernel `standard` of newer files or the paper's PyTorch.
std::string compare_key(const json& rec, const json& doc) {
  const std::string name = rec.value("name", "");
  if (rec.value("method", "") == "standard" && standard_elementwise(rec, doc) == Elementwise::Fused)
    return "standard_fused" + name.substr(name.find('/'));
  return name;
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
      const double s = median_s(r), tf = r.value("flops", 0.0) / s;
      const double peak = peak_flops(docs[i].second["device"], r);
      const json c = r.value("counters", json::object());
      std::string dram = "-";
      if (c.value("status", "") == "ok" && c.contains("bytes") && c["bytes"].contains("dram_read"))
        dram = format_bytes(c["bytes"].value("dram_read", 0.0) + c["bytes"].value("dram_write", 0.0));
      const auto sit = st[i].find(point_key(r));
      row.push_back(fixed(s * 1e3, 3));
      row.push_back(fixed(tf / 1e12, 1));
      row.push_back(peak > 0 ? fixed(100 * tf / peak, 1) : "-");
      row.push_back(dram);
      row.push_back(sit != st[i].end() && r.value("method", "") != "standard" ? fixed(sit->second / s, 2) + "×" : "-");
    }
    t.rows.push_back(row);
  }
  return {t};
}

namespace {

// The forward tile the method would pick on a GPU with `optin` bytes of shared memory per
// block, from the kernels' own tile lists (flash2: the first that fits; flash1: Algorithm 1's
// rule, as kernels/flash1/flash1_method.cpp).
template <int D>
std::optional<kernels::Flash2TileSpec> pick_tile(const std::string& method, int64_t optin, int64_t* smem) {
  std::optional<kernels::Flash2TileSpec> best;
  if (method == "flash2") {
    for (const auto& t : kernels::Flash2FwdConfigs<D>::list)
      if (kernels::flash2_fwd_smem_bytes(D, t) <= optin) {
        *smem = kernels::flash2_fwd_smem_bytes(D, t);
        return t;
      }
    return best;
  }
  if constexpr (D != 256) {
    const int64_t bc_rule = (optin / 2 + 4 * D - 1) / (4 * D), br_rule = std::min<int64_t>(bc_rule, D);
    for (const auto& t : kernels::Flash1FwdConfigs<D>::list) {
      const int64_t s = kernels::flash1_fwd_smem_bytes(D, t);
      if (s > optin || t.block_m > br_rule || t.block_n > bc_rule) continue;
      if (!best || t.block_m > best->block_m || (t.block_m == best->block_m && t.block_n > best->block_n)) {
        best = t;
        *smem = s;
      }
    }
  }
  return best;
}

// The backward tile flash2 picks on a GPU with `optin` bytes per block (flash2_bwd_pick, the
// method's rule).
kernels::Flash2BwdSpec pick_bwd_tile(int64_t d, int64_t optin) {
  switch (d) {
    case 32: return kernels::flash2_bwd_pick<32>(optin);
    case 64: return kernels::flash2_bwd_pick<64>(optin);
    case 96: return kernels::flash2_bwd_pick<96>(optin);
    case 128: return kernels::flash2_bwd_pick<128>(optin);
    case 256: return kernels::flash2_bwd_pick<256>(optin);
    default: return kernels::Flash2BwdConfigs<128>::list[0];  // no kernel: the forward's pick_tile says so
  }
}

std::optional<kernels::Flash2TileSpec> pick_tile(const std::string& method, int64_t d, int64_t optin, int64_t* smem) {
  switch (d) {
    case 32:
      return pick_tile<32>(method, optin, smem);
    case 64:
      return pick_tile<64>(method, optin, smem);
    case 96:
      return pick_tile<96>(method, optin, smem);
    case 128:
      return pick_tile<128>(method, optin, smem);
    case 256:
      return pick_tile<256>(method, optin, smem);
    default:
      return std::nullopt;
  }
}

}  // namespace

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
    // The mma.sync backward's tile on this GPU (kernels/flash2/flash2_bwd_config.h; flash1 shares
    // the first up to d = 128) and its shared memory (flash1 adds two O stages).
    const kernels::Flash2BwdSpec bwd_spec = pick_bwd_tile(d, g->smem_per_block_optin_bytes);
    const KernelTiles bwd_tile{bwd_spec.block_m, bwd_spec.block_n, bwd_spec.warps};
    const int64_t bwd_smem2 = kernels::flash2_bwd_smem_bytes(int(d), bwd_spec.block_n, bwd_spec.block_m, bwd_spec.warps);
    const int64_t bwd_smem1 = bwd_smem2 + 2 * int64_t(bwd_spec.block_m) * (d + 8) * 2;
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
          m.method = is_standard(method) ? "standard" : method;
          if (method == "standard_fused") m.elementwise = Elementwise::Fused;
          m.pass = *pass;
          m.problem.batch = r.batch, m.problem.heads = r.heads, m.problem.seqlen_q = n, m.problem.head_dim = d;
          m.problem.causal = r.causal;
          int64_t fwd_smem = 0;
          std::string tile = "-";
          if (!is_standard(method)) {
            const auto ft = pick_tile(method, d, g->smem_per_block_optin_bytes, &fwd_smem);
            if (!ft) {
              t.rows.push_back({method, pass_name, std::to_string(n), "no tile fits", "-", "-", "-", "-", "-"});
              continue;
            }
            m.fwd_tiles = KernelTiles{ft->block_m, ft->block_n, ft->warps};
            m.bwd_tiles = bwd_tile;
            tile = fmt::format("{}×{}", ft->block_m, ft->block_n);
            const int64_t bs = method == "flash1" ? bwd_smem1 : bwd_smem2;
            const bool fwd_fits = blocks_per_sm(ft->warps * 32, fwd_smem, lim) > 0;
            const bool bwd_fits = bs <= g->smem_per_block_optin_bytes && (method == "flash2" || d <= 128) &&
                                  blocks_per_sm(bwd_spec.warps * 32, bs, lim) > 0;
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
          const Traffic sm = predict_sm_l2(m);
          const DramPrediction dram =
              predict_dram(m, fwd_smem, method == "flash1" ? bwd_smem1 : bwd_smem2, lim, r.l2_usable_fraction);
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
