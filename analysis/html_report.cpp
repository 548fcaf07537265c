// `flashio report --html`; see html_report.h.
#include "analysis/html_report.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "analysis/analyze.h"
#include "analysis/svg_chart.h"

namespace flashio::analysis {

namespace {

using json = nlohmann::json;

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 24px;
       color: #1d1d1f; background: #fff; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
h3 { font-size: 1em; margin: 1.4em 0 0.4em; }
nav ul { columns: 2; max-width: 900px; }
p.none { color: #8a4b00; font-style: italic; }
p.note { color: #555; max-width: 1100px; }
.row { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; margin-bottom: 12px; }
svg.figure { background: #fcfcfc; border: 1px solid #e3e3e3; border-radius: 4px; }
svg.figure text { font-family: inherit; font-size: 11px; fill: #333; }
svg.figure text.title { font-size: 12.5px; font-weight: 600; fill: #1d1d1f; }
svg.figure text.label { font-size: 12px; }
svg.figure .grid { stroke: #e6e6e6; stroke-width: 1; }
svg.figure .frame { fill: none; stroke: #999; stroke-width: 1; }
svg.figure .guide { stroke: #777; stroke-width: 1.2; stroke-dasharray: 4 3; }
svg.figure .legend-item { cursor: pointer; }
svg.figure .legend-item.off { opacity: 0.3; }
svg.figure .series.off { display: none; }
table { border-collapse: collapse; margin: 0.3em 0 1em; font-size: 12.5px; }
th, td { border: 1px solid #ddd; padding: 2px 7px; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; }
)";

// Click a legend entry: hide or show its series.
constexpr const char* kScript = R"(
document.querySelectorAll('svg.figure .legend-item').forEach(function (item) {
  item.addEventListener('click', function () {
    var svg = item.closest('svg');
    var series = svg.querySelector('.series[data-series="' + item.getAttribute('data-series') + '"]');
    if (series) series.classList.toggle('off');
    item.classList.toggle('off');
  });
});
)";

// The same label gets the same colour in every figure of the page.
class Colours {
 public:
  int of(const std::string& label) { return index_.emplace(label, int(index_.size())).first->second; }

 private:
  std::map<std::string, int> index_;
};

// A family of figures from one grid quantity: one panel per setting and GPU; a setting's GPUs
// side by side on one y range.
struct Family {
  GridQuantity quantity;
  std::string id, heading, what, y_label, missing;  // what: the panels' titles begin with it
  AxisScale y_scale;
  TickFormat y_format;
  double y_per_unit;  // shown = value · y_per_unit
  bool from_zero;
  std::optional<double> reference_y;
  std::string note;  // a sentence under the heading
};

std::string section_start(const std::string& id, const std::string& heading, const std::string& note) {
  std::string s = fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n", id, xml_escape(heading));
  if (!note.empty()) s += "<p class=\"note\">" + xml_escape(note) + "</p>\n";
  return s;
}

std::string none(const std::string& why) { return "<p class=\"none\">" + xml_escape(why) + "</p>\n"; }

// Charts of a row share the y range of all their points.
void share_y_range(std::vector<Chart>& row) {
  std::optional<std::pair<double, double>> r;
  for (const Chart& c : row)
    if (const auto cr = chart_data_range(c, true))
      r = r ? std::make_pair(std::min(r->first, cr->first), std::max(r->second, cr->second)) : *cr;
  if (row.size() > 1 && r)
    for (Chart& c : row) c.y.range = r;
}

std::string figures_of(const Family& f, const std::vector<Grid>& grids, Colours& colours) {
  std::string s = section_start(f.id, f.heading, f.note);
  std::map<std::string, std::vector<Chart>> rows;  // setting → one chart per GPU
  std::vector<std::string> order;
  for (const Grid& g : grids) {
    Chart c;
    c.title = f.what + " — " + g.setting + " — " + g.device;
    c.x = {"sequence length N", AxisScale::Log2, TickFormat::SeqLen, std::nullopt, false};
    c.y = {f.y_label, f.y_scale, f.y_format, std::nullopt, f.from_zero};
    c.reference_y = f.reference_y;
    std::map<std::string, ChartSeries> by_label;
    for (const GridValue& v : g.values) {
      ChartSeries& se = by_label[v.label];
      se.label = v.label;
      se.colour = colours.of(v.label);
      se.points.emplace_back(double(v.n), v.value * f.y_per_unit);
      se.point_note = f.y_label;
    }
    for (auto& [label, se] : by_label) c.series.push_back(std::move(se));
    if (!chart_has_points(c)) continue;
    if (!rows.count(g.setting)) order.push_back(g.setting);
    rows[g.setting].push_back(std::move(c));
  }
  if (rows.empty()) return s + none(f.missing) + "</section>\n";
  for (const auto& setting : order) {
    auto& row = rows[setting];
    share_y_range(row);
    s += "<div class=\"row\">\n";
    for (const Chart& c : row) s += render_svg(c);
    s += "</div>\n";
  }
  return s + "</section>\n";
}

// TFLOP/s of every GPU in one panel per setting measured on two or more GPUs: colour by method,
// dash by GPU.
std::string gpus_together(const std::vector<Grid>& tflops, const std::vector<std::string>& devices, Colours& colours) {
  std::string s = section_start("gpus", "GPUs side by side: TFLOP/s vs N",
                                "Every GPU's TFLOP/s in one panel per setting measured on two or more GPUs: colour "
                                "by method, line style by GPU (" +
                                    fmt::format("{} GPUs", devices.size()) + ").");
  std::map<std::string, std::vector<const Grid*>> by_setting;
  for (const Grid& g : tflops) by_setting[g.setting].push_back(&g);
  std::map<std::string, int> dash;
  for (const auto& d : devices) dash.emplace(d, int(dash.size()));
  int drawn = 0;
  std::string row;
  for (const auto& [setting, gs] : by_setting) {
    if (gs.size() < 2) continue;
    Chart c;
    c.title = "TFLOP/s across GPUs — " + setting;
    c.x = {"sequence length N", AxisScale::Log2, TickFormat::SeqLen, std::nullopt, false};
    c.y = {"TFLOP/s", AxisScale::Linear, TickFormat::Plain, std::nullopt, true};
    for (const Grid* g : gs) {
      std::map<std::string, ChartSeries> by_label;
      for (const GridValue& v : g->values) {
        ChartSeries& se = by_label[v.label];
        se.label = v.label + " — " + g->device;
        se.colour = colours.of(v.label);
        se.dash = dash[g->device];
        se.points.emplace_back(double(v.n), v.value / 1e12);
        se.point_note = "TFLOP/s";
      }
      for (auto& [label, se] : by_label) c.series.push_back(std::move(se));
    }
    if (!chart_has_points(c)) continue;
    row += render_svg(c);
    ++drawn;
  }
  if (drawn == 0)
    return s + none("No setting was measured on two or more of these GPUs: no cross-GPU figure.") + "</section>\n";
  return s + "<div class=\"row\">\n" + row + "</div>\n</section>\n";
}

// The IO model's bytes against the counters, per GPU: analyze's predictions (SM↔L2: what the
// counters should read, reductions as l2_red counts them; DRAM: the two-level model) and
// measurements, one series per level and method.
std::string bytes_figures(const Documents& docs, Colours& colours) {
  std::string s = section_start(
      "bytes", "Bytes: IO model vs measured",
      "Each point is one record with counters: the bytes the IO model predicts (x) against the hardware counters "
      "(y), SM↔L2 and L2↔DRAM, as flashio analyze computes them with its default options; the dashed line is "
      "measured = predicted. flashio analyze gives the verdicts.");
  AnalyzeReport rep;
  try {
    rep = analyze_documents(docs, AnalyzeOptions{});
  } catch (const std::exception& e) {
    return s + none(std::string("The IO model could not be evaluated: ") + e.what()) + "</section>\n";
  }
  std::map<std::string, std::map<std::string, ChartSeries>> by_device;  // device → series label → series
  std::vector<std::string> order;
  for (const auto& f : rep.json.value("files", json::array())) {
    const std::string device = f.value("device", json::object()).value("name", std::string("?"));
    for (const auto& r : f.value("records", json::array())) {
      const json meas = r.value("measured", json::object());
      const std::string name = r.value("name", std::string());
      const std::string method = name.substr(0, name.find('/'));
      auto add = [&](const std::string& level, const json& predicted, const char* measured_key) {
        if (!predicted.is_number() || !meas.contains(measured_key) || !meas[measured_key].is_number()) return;
        const std::string label = level + " · " + method;
        if (!by_device.count(device)) order.push_back(device);
        ChartSeries& se = by_device[device][label];
        se.label = label;
        se.colour = colours.of(label);
        se.lines = false;
        se.point_note = "bytes measured";
        se.points.emplace_back(predicted.get<double>(), meas[measured_key].get<double>());
      };
      add("SM↔L2", r.value("sm_l2_expected", json()), "sm_l2");
      add("DRAM", r.value("dram_model", json::object()).value("predicted", json()), "dram");
    }
  }
  std::string row;
  for (const auto& device : order) {
    Chart c;
    c.title = "Bytes: model vs measured — " + device;
    c.x = {"predicted bytes (IO model)", AxisScale::Log10, TickFormat::Bytes, std::nullopt, false};
    c.y = {"measured bytes (counters)", AxisScale::Log10, TickFormat::Bytes, std::nullopt, false};
    c.diagonal = true;
    c.plot_height = 340;
    c.width = 520;
    for (auto& [label, se] : by_device[device]) c.series.push_back(std::move(se));
    if (chart_has_points(c)) row += render_svg(c);
  }
  if (row.empty())
    return s +
           none(
               "No record carries counters the IO model predicts (run with --counters dram or full on a GPU): "
               "no bytes figure.") +
           "</section>\n";
  s += "<div class=\"row\">\n" + row + "</div>\n";
  s += fmt::format("<p class=\"note\">flashio analyze: {} verdicts, {} do not hold.</p>\n", rep.judged, rep.failed);
  return s + "</section>\n";
}

bool numeric_unit(const std::string& unit) { return !unit.empty(); }

std::string html_table(const Table& t) {
  std::string s = "<h3>" + xml_escape(t.title) + "</h3>\n<div class=\"scroll\"><table>\n<thead><tr>";
  for (const auto& h : t.header) s += "<th>" + xml_escape(h) + "</th>";
  s += "</tr></thead>\n<tbody>\n";
  for (const auto& r : t.rows) {
    s += "<tr>";
    for (size_t i = 0; i < r.size(); ++i) {
      const bool num = i < t.units.size() && numeric_unit(t.units[i]);
      s += (num ? "<td class=\"num\">" : "<td>") + xml_escape(r[i].text) + "</td>";
    }
    s += "</tr>\n";
  }
  return s + "</tbody></table></div>\n";
}

std::string files_table(const Documents& docs) {
  const std::vector<std::string> labels = file_labels(docs);
  std::string s =
      "<table>\n<thead><tr><th>file</th><th>GPU @ revision</th><th>producer</th><th>created</th><th>records</th>"
      "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < docs.size(); ++i) {
    const json& doc = docs[i].second;
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
                     xml_escape(std::filesystem::path(docs[i].first).filename().string()), xml_escape(labels[i]),
                     xml_escape(doc.value("producer", std::string())), xml_escape(doc.value("created", std::string())),
                     doc.value("records", json::array()).size());
  }
  return s + "</tbody></table>\n";
}

}  // namespace

std::string render_html_report(const Documents& docs) {
  Colours colours;
  std::set<std::string> device_set;
  std::vector<std::string> devices;
  for (const auto& [path, doc] : docs) {
    const std::string d = doc.value("device", json::object()).value("name", std::string("?"));
    if (device_set.insert(d).second) devices.push_back(d);
  }
  const std::vector<Family> families = {
      {GridQuantity::Tflops, "tflops", "TFLOP/s vs sequence length", "TFLOP/s", "TFLOP/s",
       "No timed records: no TFLOP/s figure.", AxisScale::Linear, TickFormat::Plain, 1e-12, true, std::nullopt,
       "One panel per setting (pass, heads, head dim, dtype, masks) and GPU; FLOPs as the papers count them "
       "(causal halves them)."},
      {GridQuantity::SpeedupOverStandard, "speedup-standard", "Speedup over standard", "Speedup over standard",
       "speedup over standard", "No record has a standard record at the same point of its file: no speedup figure.",
       AxisScale::Linear, TickFormat::Ratio, 1, true, 1.0,
       "standard's time divided by the method's, at the same point of the same file."},
      {GridQuantity::SpeedupOverPeers, "speedup-peers", "Speedup over peers (PyTorch SDPA)", "Speedup over peers",
       "speedup over the peer",
       "No peer records (scripts/peers_sdpa.py, methods sdpa_*) at the points of flashio's records on the same GPU: "
       "no speedup-over-peers figure.",
       AxisScale::Linear, TickFormat::Ratio, 1, true, 1.0,
       "The peer's time divided by the method's, at the same point (batch, heads, N, head dim, dtype, causal) on the "
       "same GPU, from any of the files."},
      {GridQuantity::Memory, "memory", "Memory vs sequence length", "Memory", "memory (bytes)",
       "No record carries its memory: no memory figure.", AxisScale::Log10, TickFormat::Bytes, 1, false, std::nullopt,
       "Inputs, outputs and the method's workspace (FlashAttention Table 26's footprint), log scale."},
  };

  std::string body;
  std::string nav = "<nav><ul>\n";
  std::vector<Grid> tflops;
  std::vector<Grid> peers;
  for (const Family& f : families) {
    std::vector<Grid> grids = report_grids(docs, f.quantity);
    body += figures_of(f, grids, colours);
    nav += fmt::format("<li><a href=\"#{}\">{}</a></li>\n", f.id, xml_escape(f.heading));
    if (f.quantity == GridQuantity::Tflops) tflops = grids;
    if (f.quantity == GridQuantity::SpeedupOverPeers) peers = std::move(grids);
  }
  body += bytes_figures(docs, colours);
  nav += "<li><a href=\"#bytes\">Bytes: IO model vs measured</a></li>\n";
  if (devices.size() > 1) {
    body += gpus_together(tflops, devices, colours);
    nav += "<li><a href=\"#gpus\">GPUs side by side</a></li>\n";
  }
  body += section_start("tables", "Tables", "flashio report's tables (the same as its Markdown output).");
  for (const Table& t : report_tables(docs)) body += html_table(t);
  for (const Grid& g : peers) body += html_table(grid_table(g));
  body += "</section>\n";
  nav += "<li><a href=\"#tables\">Tables</a></li>\n</ul></nav>\n";

  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>flashio report</title>\n<style>" +
      std::string(kStyle) + "</style>\n</head>\n<body>\n<h1>flashio report</h1>\n";
  s += fmt::format(
      "<p class=\"note\">{} result file{} from {} GPU{}. Click a legend entry to hide or show its series; "
      "hover a point for its value.</p>\n",
      docs.size(), docs.size() == 1 ? "" : "s", devices.size(), devices.size() == 1 ? "" : "s");
  s += files_table(docs) + nav + body;
  s += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return s;
}

}  // namespace flashio::analysis
