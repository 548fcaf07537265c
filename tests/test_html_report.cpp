// `flashio report --html` (issue 18): the grids its figures share with report's tables, the speedup
// over the SDPA peers, the SVG charts, the page's missing-figure sentences and its safe write. The
// page in a browser: tests/test_html_report.py (CTest html_report_in_chromium).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "analysis/html_report.h"
#include "analysis/svg_chart.h"
#include "analysis/tables.h"
#include "bench/cli/commands.h"

using namespace flashio;
using namespace flashio::analysis;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kResults = std::string(FLASHIO_SOURCE_DIR) + "/results/";

double median_of(const Documents& docs, const std::string& name) {
  for (const auto& [path, doc] : docs)
    for (const auto& r : doc["records"])
      if (r["name"] == name) return r["time"]["median_s"].get<double>();
  ADD_FAILURE() << "no record " << name;
  return 0;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportGrids, SpeedupOverPeersIsThePeersTimeOverTheMethodsAtThePointOnTheSameGpu) {
  const Documents docs = read_documents({kResults + "nvidia-h100-fa2.json", kResults + "nvidia-h100-fa2-sdpa.json"});
  const std::vector<Grid> grids = report_grids(docs, GridQuantity::SpeedupOverPeers);
  ASSERT_FALSE(grids.empty());
  const std::string point = "/fwd/b:32/h:32/n:512/d:64/fp16";
  const double want = median_of(docs, "sdpa_cudnn" + point) / median_of(docs, "flash2" + point);
  int found = 0;
  std::set<std::string> labels;
  for (const Grid& g : grids) {
    EXPECT_EQ(g.unit, "ratio");
    EXPECT_EQ(g.device, "NVIDIA H100 80GB HBM3");
    for (const GridValue& v : g.values) {
      labels.insert(v.label);
      EXPECT_EQ(v.label.find("standard"), std::string::npos) << v.label;   // not over the baseline
      EXPECT_EQ(v.label.rfind("sdpa_", 0), std::string::npos) << v.label;  // a peer is not compared with peers
      if (g.setting == "fwd · h 32 · d 64 · fp16" && v.n == 512 && v.label == "flash2 over sdpa_cudnn") {
        EXPECT_DOUBLE_EQ(v.value, want);
        ++found;
      }
    }
  }
  EXPECT_EQ(found, 1);
  EXPECT_TRUE(labels.count("flash2 over sdpa_flash"));
  EXPECT_TRUE(labels.count("flash2 over sdpa_efficient"));
}

TEST(ReportGrids, PeersOfAnotherGpuAreNotMatched) {
  const Documents docs = read_documents({kResults + "nvidia-h200-fa2.json", kResults + "nvidia-h100-fa2-sdpa.json"});
  EXPECT_TRUE(report_grids(docs, GridQuantity::SpeedupOverPeers).empty());
}

TEST(ReportGrids, ReportsTablesAreItsGrids) {
  const Documents docs = read_documents({kResults + "nvidia-h200-fa2.json"});
  const std::vector<Table> tables = report_tables(docs);
  const std::vector<Grid> tflops = report_grids(docs, GridQuantity::Tflops);
  ASSERT_FALSE(tflops.empty());
  const Table t = grid_table(tflops.front());
  const auto it = std::find_if(tables.begin(), tables.end(), [&](const Table& x) { return x.title == t.title; });
  ASSERT_NE(it, tables.end()) << t.title;
  ASSERT_EQ(it->rows.size(), t.rows.size());
  for (size_t r = 0; r < t.rows.size(); ++r)
    for (size_t c = 0; c < t.rows[r].size(); ++c) EXPECT_EQ(it->rows[r][c].text, t.rows[r][c].text);
}

TEST(SvgChart, DrawsTicksALegendAndOneMarkerPerPoint) {
  Chart c;
  c.title = "TFLOP/s <fwd> & more";
  c.x = {"sequence length N", AxisScale::Log2, TickFormat::SeqLen, std::nullopt, false};
  c.y = {"TFLOP/s", AxisScale::Linear, TickFormat::Plain, std::nullopt, true};
  c.series.push_back({"flash2", {{1024, 100}, {4096, 300}, {16384, 350}}, 0, 0, true, ""});
  c.series.push_back({"standard", {{1024, 50}}, 1, 1, true, ""});
  const std::string svg = render_svg(c);
  const std::string marks =
      svg.substr(svg.find("<g class=\"marks\">"), svg.find("<g class=\"legend\">") - svg.find("<g class=\"marks\">"));
  EXPECT_EQ(count(marks, "<circle"), 4u);
  EXPECT_EQ(count(marks, "<path"), 1u);  // one line: a series of one point has only its marker
  for (const char* tick : {">1k<", ">4k<", ">16k<", ">0<", ">100<", ">400<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_NE(svg.find("TFLOP/s &lt;fwd&gt; &amp; more"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"legend-item\""), 2u);
}

TEST(SvgChart, NothingDrawableDrawsNothing) {
  Chart c;
  c.x = {"N", AxisScale::Log2, TickFormat::SeqLen, std::nullopt, false};
  c.y = {"bytes", AxisScale::Log10, TickFormat::Bytes, std::nullopt, false};
  c.series.push_back({"s", {{0, 5}, {1024, 0}, {2048, -1}, {4096, std::nan("")}}, 0, 0, true, ""});
  EXPECT_FALSE(chart_has_points(c));
  EXPECT_EQ(render_svg(c), "");
}

TEST(HtmlReport, SaysWhyAFigureIsMissingAndFetchesNothing) {
  // A committed file of one GPU, without peers, its records' counters taken out (as a run with
  // --counters off writes them).
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(kResults + "nvidia-h200-fa1.json"));
  for (auto& r : doc["records"])
    r["counters"] = {{"status", "not_collected"}, {"reason", "counter collection is off (--counters off)"}};
  const std::string path =
      (std::filesystem::temp_directory_path() / ("flashio-html-no-counters-" + std::to_string(getpid()) + ".json"))
          .string();
  std::ofstream(path) << doc.dump();
  const std::string page = render_html_report(read_documents({path}));
  std::filesystem::remove(path);
  EXPECT_NE(page.find("No peer records"), std::string::npos);
  EXPECT_NE(page.find("No record carries counters the IO model predicts"), std::string::npos);
  EXPECT_EQ(page.find("id=\"gpus\""), std::string::npos);  // one GPU: no cross-GPU section
  EXPECT_GT(count(page, "<svg class=\"figure\""), 10u);
  const std::string no_svg_ns = std::regex_replace(page, std::regex("http://www.w3.org/2000/svg"), "");
  EXPECT_EQ(no_svg_ns.find("http"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find(" src="), std::string::npos);
}

TEST(HtmlReport, WritesOnceAndNeverOverAnInput) {
  const fs::path dir = fs::temp_directory_path() / ("flashio-html-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string in = kResults + "nvidia-h100-dsweep.json", out = (dir / "r.html").string();
  std::vector<std::string> args = {"flashio", "report", in, "--html", out};
  testing::internal::CaptureStderr();
  EXPECT_EQ(flashio_main(args), 0);
  EXPECT_EQ(flashio_main(args), 2);  // exists: not replaced without --force
  args.push_back("--force");
  EXPECT_EQ(flashio_main(args), 0);
  EXPECT_EQ(flashio_main({"flashio", "report", in, "--html", in, "--force"}), 2);  // the input
  testing::internal::GetCapturedStderr();
  std::ifstream f(out);
  std::string first;
  std::getline(f, first);
  EXPECT_EQ(first, "<!DOCTYPE html>");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) ++files, (void)e;
  EXPECT_EQ(files, 1u);  // no temporary file left
  fs::remove_all(dir);
}

}  // namespace
