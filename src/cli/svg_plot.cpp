#include "cli/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

namespace tk::cli {
namespace {

// Colour-blind-safe qualitative palette (Okabe-Ito, then Tableau for more series).
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                    "#56B4E9", "#000000", "#F0E442", "#8C564B", "#7F7F7F"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr const char* kFont = "font-family=\"sans-serif\"";

const char* colour(size_t i) { return kPalette[i % kPaletteSize]; }

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// A tick label: short and exact enough to read ("0.001", "2.5", "1e+06").
std::string tick_text(double v) {
  if (v == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Value range of one axis; `log` maps values through log10 (non-positive values are
// then unplottable and skipped like non-finite ones).
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;  // in data units

  bool plottable(double v) const { return std::isfinite(v) && (!log || v > 0); }
  double unit(double v) const { return log ? std::log10(v) : v; }
  // Position in [0, 1] along the axis.
  double fraction(double v) const { return (unit(v) - lo) / (hi - lo); }
};

// Round a step up to 1, 2 or 5 times a power of ten.
double nice_step(double raw) {
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  double m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

// Build an axis over the plottable values, with about five ticks at round numbers.
Axis make_axis(const std::vector<double>& values, bool log, bool include_zero = false) {
  Axis axis;
  axis.log = log;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!axis.plottable(v)) continue;
    lo = std::min(lo, axis.unit(v));
    hi = std::max(hi, axis.unit(v));
  }
  if (include_zero && !log) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
    double pad = log ? 0.5 : std::max(std::abs(hi) * 0.1, 0.5);
    lo -= pad, hi += pad;
  }
  if (log) {
    axis.lo = std::floor(lo), axis.hi = std::ceil(hi);
    if (axis.hi == axis.lo) axis.hi += 1;
    double decades = axis.hi - axis.lo;
    int every = static_cast<int>(std::ceil(decades / 8));
    for (double e = axis.lo; e <= axis.hi + 1e-9; e += every) axis.ticks.push_back(std::pow(10, e));
    if (decades <= 2) {  // few decades: also 2 and 5 within each
      for (double e = axis.lo; e < axis.hi; e += 1)
        for (double m : {2.0, 5.0}) axis.ticks.push_back(m * std::pow(10, e));
      std::sort(axis.ticks.begin(), axis.ticks.end());
    }
    return axis;
  }
  double step = nice_step((hi - lo) / 5);
  axis.lo = std::floor(lo / step) * step;
  axis.hi = std::ceil(hi / step) * step;
  for (double t = axis.lo; t <= axis.hi + step * 1e-6; t += step)
    axis.ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return axis;
}

// Plot area and canvas in pixels.
struct Frame {
  double width, height;   // canvas
  double left, top, right, bottom;  // plot area edges
  double px(const Axis& a, double v) const { return left + a.fraction(v) * (right - left); }
  double py(const Axis& a, double v) const { return bottom - a.fraction(v) * (bottom - top); }
};

void open_document(std::string& svg, const Frame& f, const std::string& title) {
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(f.width) + "\" height=\"" +
         num(f.height) + "\" viewBox=\"0 0 " + num(f.width) + " " + num(f.height) + "\">\n";
  svg += "<title>" + escape_xml(title) + "</title>\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + num(f.width / 2) + "\" y=\"26\" text-anchor=\"middle\" font-size=\"16\" " +
         kFont + " font-weight=\"bold\">" + escape_xml(title) + "</text>\n";
}

void text(std::string& svg, double x, double y, std::string_view anchor, int size,
          const std::string& content, const std::string& extra = "") {
  svg += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + std::string(anchor) +
         "\" font-size=\"" + std::to_string(size) + "\" " + kFont + extra + ">" +
         escape_xml(content) + "</text>\n";
}

void line(std::string& svg, double x1, double y1, double x2, double y2, const char* stroke,
          const std::string& extra = "") {
  svg += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
         num(y2) + "\" stroke=\"" + stroke + "\"" + extra + "/>\n";
}

// Grid lines and tick labels of the x axis and the left (or right) y axis.
void draw_x_axis(std::string& svg, const Frame& f, const Axis& x, const std::string& label) {
  for (double t : x.ticks) {
    double px = f.px(x, t);
    line(svg, px, f.top, px, f.bottom, "#e0e0e0");
    text(svg, px, f.bottom + 16, "middle", 11, tick_text(t));
  }
  line(svg, f.left, f.bottom, f.right, f.bottom, "#333333");
  text(svg, (f.left + f.right) / 2, f.bottom + 38, "middle", 13, label);
}

void draw_y_axis(std::string& svg, const Frame& f, const Axis& y, const std::string& label,
                 bool right_side) {
  double edge = right_side ? f.right : f.left;
  for (double t : y.ticks) {
    double py = f.py(y, t);
    if (!right_side) line(svg, f.left, py, f.right, py, "#e0e0e0");
    text(svg, right_side ? edge + 6 : edge - 6, py + 4, right_side ? "start" : "end", 11,
         tick_text(t));
  }
  line(svg, edge, f.top, edge, f.bottom, "#333333");
  double lx = right_side ? f.width - 14 : 16, ly = (f.top + f.bottom) / 2;
  text(svg, lx, ly, "middle", 13, label,
       " transform=\"rotate(" + std::string(right_side ? "90 " : "-90 ") + num(lx) + " " +
           num(ly) + ")\"");
}

// One series as a polyline through its plottable points plus a marker on each point.
void draw_series(std::string& svg, const Frame& f, const Axis& x, const Axis& y,
                 const Series& s, const char* stroke, bool dashed) {
  std::string points;
  std::string markers;
  size_t n = std::min(s.x.size(), s.y.size());
  for (size_t i = 0; i < n; ++i) {
    if (!x.plottable(s.x[i]) || !y.plottable(s.y[i])) continue;
    double px = f.px(x, s.x[i]), py = f.py(y, s.y[i]);
    points += num(px) + "," + num(py) + " ";
    if (dashed)
      markers += "<rect x=\"" + num(px - 3.5) + "\" y=\"" + num(py - 3.5) +
                 "\" width=\"7\" height=\"7\" fill=\"" + stroke + "\"/>\n";
    else
      markers += "<circle cx=\"" + num(px) + "\" cy=\"" + num(py) + "\" r=\"3.5\" fill=\"" +
                 stroke + "\"/>\n";
    // Labels alternate above and below the point, so that neighbours overlap less.
    if (i < s.labels.size() && !s.labels[i].empty())
      text(markers, px + 6, py + (i % 2 == 0 ? -6 : 14), "start", 10, s.labels[i],
           std::string(" fill=\"") + stroke + "\"");
  }
  svg += "<g class=\"series\" data-name=\"" + escape_xml(s.name) + "\">\n";
  if (!points.empty() && !s.points_only) {
    points.pop_back();
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(stroke) +
           "\" stroke-width=\"2\" points=\"" + points + "\"" +
           (dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
  }
  svg += markers + "</g>\n";
}

struct LegendEntry {
  std::string name;
  const char* colour;
  bool dashed;
  bool points_only = false;  // a marker, not a line
};

// Legend in the column right of the plot area.
void draw_legend(std::string& svg, double x, double y, const std::vector<LegendEntry>& entries,
                 bool bars) {
  for (size_t i = 0; i < entries.size(); ++i) {
    double ly = y + 20.0 * static_cast<double>(i);
    const auto& e = entries[i];
    if (bars)
      svg += "<rect x=\"" + num(x) + "\" y=\"" + num(ly - 9) + "\" width=\"14\" height=\"10\" fill=\"" +
             e.colour + "\"/>\n";
    else if (e.points_only)
      svg += "<circle cx=\"" + num(x + 10) + "\" cy=\"" + num(ly - 4) + "\" r=\"3.5\" fill=\"" + e.colour + "\"/>\n";
    else
      line(svg, x, ly - 4, x + 20, ly - 4, e.colour,
           std::string(" stroke-width=\"2\"") + (e.dashed ? " stroke-dasharray=\"6 4\"" : ""));
    text(svg, x + 26, ly, "start", 12, e.name);
  }
}

// Width in pixels a 12 px label takes, roughly (no font metrics in a plain SVG).
double label_width(const std::string& s, double px_per_char = 7) {
  return px_per_char * static_cast<double>(s.size());
}

double legend_width(const std::vector<std::string>& names) {
  double w = 0;
  for (const auto& n : names) w = std::max(w, label_width(n));
  return std::min(w + 40, 260.0);
}

std::vector<double> gather(const std::vector<Series>& series, bool want_x) {
  std::vector<double> v;
  for (const auto& s : series) v.insert(v.end(), (want_x ? s.x : s.y).begin(), (want_x ? s.x : s.y).end());
  return v;
}

}  // namespace

std::string render_svg(const LineChart& chart) {
  std::vector<std::string> names;
  for (const auto& s : chart.series) names.push_back(s.name);
  for (const auto& s : chart.right) names.push_back(s.name);
  bool has_right = !chart.right.empty();

  Frame f{};
  f.left = 80, f.top = 50;
  f.right = f.left + 520;
  f.bottom = f.top + 340;
  double legend_x = f.right + (has_right ? 80 : 24);
  f.width = legend_x + legend_width(names) + 10;
  f.height = std::max(f.bottom + 60, f.top + 20.0 * static_cast<double>(names.size()) + 20);

  std::vector<double> xs = gather(chart.series, true), rx = gather(chart.right, true);
  xs.insert(xs.end(), rx.begin(), rx.end());
  Axis x = make_axis(xs, chart.log_x);
  Axis y = make_axis(gather(chart.series, false), chart.log_y);

  std::string svg;
  open_document(svg, f, chart.title);
  draw_x_axis(svg, f, x, chart.x_label);
  draw_y_axis(svg, f, y, chart.y_label, false);
  Axis y2;
  if (has_right) {
    y2 = make_axis(gather(chart.right, false), false);
    draw_y_axis(svg, f, y2, chart.y2_label, true);
  }
  std::vector<LegendEntry> legend;
  size_t c = 0;
  for (const auto& s : chart.series) {
    draw_series(svg, f, x, y, s, colour(c), false);
    legend.push_back({s.name, colour(c++), false, s.points_only});
  }
  for (const auto& s : chart.right) {
    draw_series(svg, f, x, y2, s, colour(c), true);
    legend.push_back({s.name, colour(c++), true});
  }
  if (names.empty()) text(svg, (f.left + f.right) / 2, (f.top + f.bottom) / 2, "middle", 13, "no data");
  draw_legend(svg, legend_x, f.top + 10, legend, false);
  svg += "</svg>\n";
  return svg;
}

std::string render_svg(const BarChart& chart) {
  size_t bars = std::max<size_t>(1, chart.bar_names.size());
  double slot = std::max(60.0, 22.0 * static_cast<double>(bars) + 20);
  double longest = 0;
  for (const auto& g : chart.groups) longest = std::max(longest, label_width(g.label, 6.5));
  bool rotate = longest > slot - 6;

  Frame f{};
  f.left = 80, f.top = 50;
  f.right = f.left + std::max(400.0, slot * static_cast<double>(chart.groups.size()));
  f.bottom = f.top + 320;
  double legend_x = f.right + 24;
  f.width = legend_x + legend_width(chart.bar_names) + 10;
  f.height = f.bottom + (rotate ? std::min(longest * 0.6, 160.0) + 50 : 50);

  std::vector<double> values;
  for (const auto& g : chart.groups) values.insert(values.end(), g.values.begin(), g.values.end());
  // Values over more than two decades (lossy MB/s beside lossless GB/s) on a linear axis
  // leave the small bars invisible: then the axis is logarithmic, bars rising from its foot.
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  bool all_positive = true;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    all_positive = all_positive && v > 0;
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  const bool log = all_positive && std::isfinite(lo) && hi > 100 * lo;
  Axis y = make_axis(values, log, !log);
  const double base = log ? f.bottom : f.py(y, 0);

  std::string svg;
  open_document(svg, f, chart.title);
  draw_y_axis(svg, f, y, log ? chart.y_label + " (log scale)" : chart.y_label, false);
  line(svg, f.left, base, f.right, base, "#333333");
  double group_w = (f.right - f.left) / std::max<double>(1, static_cast<double>(chart.groups.size()));
  double bar_w = std::min(22.0, (group_w - 16) / static_cast<double>(bars));
  for (size_t g = 0; g < chart.groups.size(); ++g) {
    const auto& group = chart.groups[g];
    double gx = f.left + group_w * static_cast<double>(g);
    double first = gx + (group_w - bar_w * static_cast<double>(bars)) / 2;
    svg += "<g class=\"group\" data-name=\"" + escape_xml(group.label) + "\">\n";
    for (size_t b = 0; b < group.values.size() && b < bars; ++b) {
      double v = group.values[b];
      if (!std::isfinite(v)) continue;
      double y0 = base, y1 = f.py(y, v);
      double bx = first + bar_w * static_cast<double>(b);
      svg += "<rect x=\"" + num(bx) + "\" y=\"" + num(std::min(y0, y1)) + "\" width=\"" +
             num(bar_w - 2) + "\" height=\"" + num(std::abs(y0 - y1)) + "\" fill=\"" +
             colour(b) + "\"><title>" + escape_xml(group.label) + " " +
             escape_xml(b < chart.bar_names.size() ? chart.bar_names[b] : "") + ": " +
             tick_text(v) + "</title></rect>\n";
    }
    svg += "</g>\n";
    double lx = gx + group_w / 2, ly = f.bottom + 16;
    if (rotate)
      text(svg, lx, ly, "end", 11, group.label,
           " transform=\"rotate(-35 " + num(lx) + " " + num(ly) + ")\"");
    else
      text(svg, lx, ly, "middle", 11, group.label);
  }
  line(svg, f.left, f.bottom, f.right, f.bottom, "#333333");
  if (chart.groups.empty()) text(svg, (f.left + f.right) / 2, (f.top + f.bottom) / 2, "middle", 13, "no data");
  std::vector<LegendEntry> legend;
  for (size_t b = 0; b < chart.bar_names.size(); ++b) legend.push_back({chart.bar_names[b], colour(b), false});
  draw_legend(svg, legend_x, f.top + 10, legend, true);
  svg += "</svg>\n";
  return svg;
}

std::string stack_svg(const std::vector<std::string>& documents) {
  if (documents.size() == 1) return documents.front();
  // Each part keeps its own <svg> element (nested SVG is plain SVG 1.1); only the XML
  // declaration goes, and each is placed by y at the sum of the heights above it.
  double width = 0, height = 0;
  std::string body;
  for (const auto& doc : documents) {
    size_t start = doc.find("<svg ");
    if (start == std::string::npos) continue;
    auto attribute = [&](const char* name) {
      size_t at = doc.find(std::string(name) + "=\"", start);
      return at == std::string::npos ? 0.0 : std::atof(doc.c_str() + at + std::strlen(name) + 2);
    };
    double w = attribute("width"), h = attribute("height");
    body += "<svg x=\"0\" y=\"" + num(height) + "\"" + doc.substr(start + 4);
    width = std::max(width, w);
    height += h;
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         num(width) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
         "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + body + "</svg>\n";
}

}  // namespace tk::cli
