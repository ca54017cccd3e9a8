// Self-contained SVG charts for reports (tbench rate-distortion curves and throughput
// bars, tdecomp rank-selection curves): no scripts, no external fonts or styles, so a
// file opens in any browser and reads without the table beside it.
#pragma once

#include <string>
#include <vector>

namespace tk::cli {

struct Series {
  std::string name;          // legend entry
  std::vector<double> x, y;  // same length; points are drawn in the given order
  // Points that are separate things (one scheme each), not a curve: markers without a
  // line, each with its label beside it (`labels` empty, or as long as x).
  bool points_only = false;
  std::vector<std::string> labels;
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  std::vector<Series> series;  // one coloured line with markers per series
  // Optional second y axis on the right for series listed in `right` (e.g. error and
  // silhouette against rank).
  std::string y2_label;
  std::vector<Series> right;
};

struct BarGroup {
  std::string label;            // category on the x axis (e.g. a method)
  std::vector<double> values;   // one bar per entry of BarChart::bar_names
};

struct BarChart {
  std::string title, y_label;
  std::vector<std::string> bar_names;  // legend (e.g. "compress", "decompress")
  std::vector<BarGroup> groups;
};

// A complete SVG document (XML, UTF-8). Non-finite points are skipped.
std::string render_svg(const LineChart& chart);
std::string render_svg(const BarChart& chart);

// One SVG document showing `documents` (each from render_svg) one below the other, e.g.
// a rate-distortion chart above a throughput chart. A single document is returned as is.
std::string stack_svg(const std::vector<std::string>& documents);

}  // namespace tk::cli
