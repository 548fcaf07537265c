// Inline SVG charts; see svg_chart.h.
#include "analysis/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace flashio::analysis {

namespace {

// Tableau 10, the yellow darkened to read on white.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#b8960c", "#b07aa1", "#ff9da7", "#9c755f", "#6b6b6b"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr const char* kDashes[] = {"", "6 3", "2 3", "8 3 2 3"};
constexpr int kDashCount = sizeof(kDashes) / sizeof(kDashes[0]);

constexpr int kLeft = 72, kRight = 18, kTitleLine = 16, kBottom = 48, kLegendLine = 18;
constexpr int kMaxTicks = 9;

const char* colour_of(int i) { return kPalette[((i % kPaletteSize) + kPaletteSize) % kPaletteSize]; }
const char* dash_of(int i) { return kDashes[((i % kDashCount) + kDashCount) % kDashCount]; }

bool drawable(double v, AxisScale s) { return std::isfinite(v) && (s == AxisScale::Linear || v > 0); }

double to_axis(double v, AxisScale s) {
  return s == AxisScale::Log2 ? std::log2(v) : s == AxisScale::Log10 ? std::log10(v) : v;
}

// A step of 1, 2 or 5 × 10^k near span / target.
double nice_step(double span, int target) {
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

// An axis laid out: its transformed bounds and the ticks (values in data units).
struct Layout {
  double lo = 0, hi = 1;  // transformed (log2 / log10 / linear)
  std::vector<double> ticks;
  double step = 0;  // linear ticks' step, for rounding their labels
};

Layout layout_axis(const ChartAxis& a, std::pair<double, double> data) {
  Layout L;
  double lo = data.first, hi = data.second;
  if (a.scale == AxisScale::Linear) {
    if (a.from_zero) lo = std::min(lo, 0.0);
    if (hi <= lo) hi = lo + (lo == 0 ? 1 : std::abs(lo) * 0.1);
    const double step = nice_step(hi - lo, 5);
    lo = std::floor(lo / step) * step;
    hi = std::ceil(hi * (1 + 1e-9) / step) * step;
    if (hi - lo < step * 1.5) hi = lo + 2 * step;
    L.lo = lo, L.hi = hi, L.step = step;
    for (double t = lo; t <= hi + step * 1e-6; t += step) L.ticks.push_back(std::round(t / step) * step);
    return L;
  }
  double tlo = to_axis(lo, a.scale), thi = to_axis(hi, a.scale);
  if (thi - tlo < 1e-9) tlo -= 0.5, thi += 0.5;
  const double pad = std::max(0.04 * (thi - tlo), a.scale == AxisScale::Log2 ? 0.25 : 0.05);
  tlo -= pad, thi += pad;
  L.lo = tlo, L.hi = thi;
  const double base = a.scale == AxisScale::Log2 ? 2.0 : 10.0;
  std::vector<double> powers;
  for (double k = std::ceil(tlo); k <= std::floor(thi); k += 1) powers.push_back(std::pow(base, k));
  if (a.scale == AxisScale::Log2) {
    int every = 1;
    while (int(powers.size()) / every > kMaxTicks) ++every;
    for (size_t i = 0; i < powers.size(); i += every) L.ticks.push_back(powers[i]);
    return L;
  }
  // log10: decades, with 2 and 5 between them where there are few.
  if (powers.size() >= 3) {
    int every = 1;
    while (int(powers.size()) / every > kMaxTicks) ++every;
    for (size_t i = 0; i < powers.size(); i += every) L.ticks.push_back(powers[i]);
    return L;
  }
  for (double k = std::floor(tlo); k <= std::ceil(thi); k += 1)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, k);
      const double t = std::log10(v);
      if (t >= tlo && t <= thi) L.ticks.push_back(v);
    }
  if (L.ticks.size() < 2) {  // less than a factor 2 across: linear ticks on the log axis
    L.ticks.clear();
    const double vlo = std::pow(10.0, tlo), vhi = std::pow(10.0, thi);
    const double step = nice_step(vhi - vlo, 4);
    for (double v = std::ceil(vlo / step) * step; v <= vhi; v += step) L.ticks.push_back(v);
    L.step = step;
  }
  return L;
}

std::string number_text(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.3g}", v);
  return fmt::format("{:.4g}", v);
}

std::string tick_text(double v, TickFormat f, double step) {
  if (step > 0) v = std::round(v / step) * step;
  switch (f) {
    case TickFormat::SeqLen: {
      const double r = std::round(v);
      if (std::abs(v - r) < 1e-9 && r >= 1024 && std::fmod(r, 1024) == 0) return fmt::format("{:.0f}k", r / 1024);
      return number_text(v);
    }
    case TickFormat::Bytes: {
      const double a = std::abs(v);
      if (a >= 1e12) return number_text(v / 1e12) + " TB";
      if (a >= 1e9) return number_text(v / 1e9) + " GB";
      if (a >= 1e6) return number_text(v / 1e6) + " MB";
      if (a >= 1e3) return number_text(v / 1e3) + " kB";
      return number_text(v) + " B";
    }
    case TickFormat::Ratio:
      return number_text(v) + "×";
    case TickFormat::Plain:
      break;
  }
  return number_text(v);
}

// Titles wrap once, at " — " or the last space before the limit.
std::vector<std::string> title_lines(const std::string& t, size_t per_line) {
  if (t.size() <= per_line) return {t};
  size_t cut = t.rfind(" — ", per_line);
  size_t skip = 5;  // " — " is 5 bytes in UTF-8
  if (cut == std::string::npos || cut < per_line / 3) {
    cut = t.rfind(' ', per_line);
    skip = 1;
  }
  if (cut == std::string::npos) return {t};
  return {t.substr(0, cut), t.substr(cut + skip)};
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  return o;
}

std::optional<std::pair<double, double>> chart_data_range(const Chart& c, bool y) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : c.series)
    for (const auto& [px, py] : s.points) {
      if (!drawable(px, c.x.scale) || !drawable(py, c.y.scale)) continue;
      const double v = y ? py : px;
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
  if (!(lo <= hi)) return std::nullopt;
  return std::make_pair(lo, hi);
}

bool chart_has_points(const Chart& c) { return chart_data_range(c, false).has_value(); }

std::string render_svg(const Chart& c) {
  const auto xr = chart_data_range(c, false), yr = chart_data_range(c, true);
  if (!xr || !yr) return {};
  std::pair<double, double> xd = c.x.range.value_or(*xr), yd = c.y.range.value_or(*yr);
  if (c.diagonal) {  // both axes one range, so that y = x is the diagonal
    const double lo = std::min(xd.first, yd.first), hi = std::max(xd.second, yd.second);
    xd = yd = {lo, hi};
  }
  if (c.reference_y && drawable(*c.reference_y, c.y.scale))
    yd = {std::min(yd.first, *c.reference_y), std::max(yd.second, *c.reference_y)};
  const Layout X = layout_axis(c.x, xd), Y = layout_axis(c.y, yd);

  const auto lines = title_lines(c.title, size_t(c.width / 7));
  const int top = 10 + kTitleLine * int(lines.size()) + 8;
  const int pw = c.width - kLeft - kRight, ph = c.plot_height;
  const int legend_top = top + ph + kBottom;
  const int height = legend_top + kLegendLine * int(c.series.size()) + 6;
  auto px = [&](double v) { return kLeft + (to_axis(v, c.x.scale) - X.lo) / (X.hi - X.lo) * pw; };
  auto py = [&](double v) { return top + ph - (to_axis(v, c.y.scale) - Y.lo) / (Y.hi - Y.lo) * ph; };

  std::string s = fmt::format(
      "<svg class=\"figure\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\">\n<title>{2}</title>\n",
      c.width, height, xml_escape(c.title));
  s += "<text class=\"title\" x=\"" + std::to_string(c.width / 2) + "\" text-anchor=\"middle\">";
  for (size_t i = 0; i < lines.size(); ++i)
    s += fmt::format("<tspan x=\"{}\" y=\"{}\">{}</tspan>", c.width / 2, 10 + kTitleLine * int(i + 1) - 3,
                     xml_escape(lines[i]));
  s += "</text>\n";
  // Grid lines and ticks.
  s += "<g class=\"axes\">\n";
  for (double t : X.ticks) {
    const double x = px(t);
    s += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/><text class=\"tick\" x=\"{0:.1f}\" "
        "y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x, top, top + ph, top + ph + 16, xml_escape(tick_text(t, c.x.format, X.step)));
  }
  for (double t : Y.ticks) {
    const double y = py(t);
    s += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/><text class=\"tick\" x=\"{3}\" "
        "y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, y, kLeft + pw, kLeft - 6, y + 4, xml_escape(tick_text(t, c.y.format, Y.step)));
  }
  s += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", kLeft, top, pw, ph);
  s += fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + pw / 2,
                   top + ph + 36, xml_escape(c.x.label));
  s += fmt::format(
      "<text class=\"label\" x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" transform=\"rotate(-90 {0} {1})\">{2}</text>\n",
      16, top + ph / 2, xml_escape(c.y.label));
  if (c.reference_y && drawable(*c.reference_y, c.y.scale))
    s += fmt::format("<line class=\"guide\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/>\n", kLeft,
                     py(*c.reference_y), kLeft + pw, py(*c.reference_y));
  if (c.diagonal) {
    const double lo = std::pow(c.x.scale == AxisScale::Log2 ? 2.0 : 10.0, std::max(X.lo, Y.lo));
    const double hi = std::pow(c.x.scale == AxisScale::Log2 ? 2.0 : 10.0, std::min(X.hi, Y.hi));
    if (c.x.scale != AxisScale::Linear && c.y.scale == c.x.scale)
      s += fmt::format("<line class=\"guide\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", px(lo),
                       py(lo), px(hi), py(hi));
  }
  s += "</g>\n";

  // The data: one group per series, a path through its points and a marker on each.
  s += "<g class=\"marks\">\n";
  for (size_t i = 0; i < c.series.size(); ++i) {
    const ChartSeries& se = c.series[i];
    std::vector<std::pair<double, double>> pts;
    for (const auto& p : se.points)
      if (drawable(p.first, c.x.scale) && drawable(p.second, c.y.scale)) pts.push_back(p);
    if (se.lines) std::stable_sort(pts.begin(), pts.end(), [](auto& a, auto& b) { return a.first < b.first; });
    const char* colour = colour_of(se.colour);
    s += fmt::format("<g class=\"series\" data-series=\"{}\">", i);
    if (se.lines && pts.size() > 1) {
      std::string d;
      for (size_t k = 0; k < pts.size(); ++k)
        d += fmt::format("{}{:.1f},{:.1f}", k ? " L" : "M", px(pts[k].first), py(pts[k].second));
      s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"{}/>", d, colour,
                       *dash_of(se.dash) ? fmt::format(" stroke-dasharray=\"{}\"", dash_of(se.dash)) : "");
    }
    for (const auto& [x, y] : pts)
      s += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" fill=\"{}\"><title>{}: {} {}, {} {}</title></circle>", px(x),
          py(y), colour, xml_escape(se.label), xml_escape(c.x.label), xml_escape(tick_text(x, c.x.format, 0)),
          xml_escape(number_text(y)), xml_escape(se.point_note));
    s += "</g>\n";
  }
  s += "</g>\n";

  // The legend, one line per series, below the plot.
  s += "<g class=\"legend\">\n";
  for (size_t i = 0; i < c.series.size(); ++i) {
    const ChartSeries& se = c.series[i];
    const int y = legend_top + kLegendLine * int(i) + 9;
    const char* colour = colour_of(se.colour);
    s += fmt::format("<g class=\"legend-item\" data-series=\"{}\">", i);
    if (se.lines)
      s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1.8\"{}/>", kLeft, y,
                       kLeft + 26, y, colour,
                       *dash_of(se.dash) ? fmt::format(" stroke-dasharray=\"{}\"", dash_of(se.dash)) : "");
    s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3.2\" fill=\"{}\"/>", kLeft + 13, y, colour);
    s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text></g>\n", kLeft + 34, y + 4, xml_escape(se.label));
  }
  s += "</g>\n</svg>\n";
  return s;
}

}  // namespace flashio::analysis
