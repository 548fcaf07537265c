// Line and scatter charts as inline SVG for `flashio report --html`: axes with ticks and
// labels, a title, a legend, one marker per point with a <title> tooltip. Plain C++, no fonts or
// scripts fetched: the SVG is meant to sit inside an HTML page.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace flashio::analysis {

enum class AxisScale { Linear, Log2, Log10 };
enum class TickFormat { Plain, SeqLen, Bytes, Ratio };  // 1.5 · 16k · 1.2 GB · 1.5×

struct ChartAxis {
  std::string label;
  AxisScale scale = AxisScale::Linear;
  TickFormat format = TickFormat::Plain;
  std::optional<std::pair<double, double>> range;  // forced [lo, hi] (shared by panels side by side)
  bool from_zero = false;                          // linear: the axis starts at 0
};

struct ChartSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y); non-finite or, on a log axis, non-positive: left out
  int colour = 0;                                 // index into the palette (cycles)
  int dash = 0;                                   // 0 solid, 1 dashed, 2 dotted, 3 dash-dot (cycles)
  bool lines = true;                              // join the points (sorted by x); false: a scatter
  std::string point_note;                         // appended to each marker's tooltip ("TFLOP/s")
};

struct Chart {
  std::string title;
  ChartAxis x, y;
  std::vector<ChartSeries> series;
  std::optional<double> reference_y;  // a horizontal guide (speedup 1)
  bool diagonal = false;              // the y = x guide (measured against predicted)
  int width = 560, plot_height = 300;
};

// Whether the chart has a point to draw (a series with a point that its axes can show).
bool chart_has_points(const Chart& c);
// The data range of the drawable points on one axis (x: false, y: true); nullopt without any.
std::optional<std::pair<double, double>> chart_data_range(const Chart& c, bool y);
// <svg class="figure" role="img">…</svg>; the points in <g class="marks">.
std::string render_svg(const Chart& c);

// Text made safe for HTML and SVG (& < > " ').
std::string xml_escape(const std::string& s);

}  // namespace flashio::analysis
