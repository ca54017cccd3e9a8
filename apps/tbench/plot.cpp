// tbench --svg: rate-distortion curves (one per method, points along its parameter
// sweep) and throughput bars (one group per cell, one bar per throughput metric).
#include <algorithm>
#include <cmath>

#include "cli/svg_plot.h"
#include "tbench.h"

namespace tk::tbench {
namespace {

bool is_rate(const Metric& m) { return m.unit == "MB/s" || m.unit == "GB/s"; }

std::string params_label(const Params& p) {
  std::string out;
  for (const auto& [k, v] : p) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

// The distortion axis: SQNR where results have it (quant, lossy compress, decomp), else
// the relative error.
const char* distortion_metric(const Report& report) {
  for (const auto& r : report.results)
    if (const Metric* m = r.find("sqnr_db"); m && std::isfinite(m->value) && r.find("bits_per_value")) return "sqnr_db";
  for (const auto& r : report.results)
    if (r.find("rel_error") && r.find("bits_per_value")) return "rel_error";
  return nullptr;
}

// One series per (method, input): a method's points at its parameter values, ordered by
// bits per value so the curve reads left to right.
std::optional<cli::LineChart> rate_distortion(const Report& report) {
  const char* y_metric = distortion_metric(report);
  if (!y_metric) return std::nullopt;
  bool several_inputs = report.inputs.size() > 1;
  std::map<std::string, std::vector<std::pair<double, double>>> points;
  std::vector<std::string> order;
  for (const auto& r : report.results) {
    const Metric* x = r.find("bits_per_value");
    const Metric* y = r.find(y_metric);
    if (!x || !y || !std::isfinite(x->value) || !std::isfinite(y->value)) continue;
    std::string name = r.method + (several_inputs ? " (" + r.input + ")" : "");
    if (!points.count(name)) order.push_back(name);
    points[name].emplace_back(x->value, y->value);
  }
  if (order.empty()) return std::nullopt;
  cli::LineChart chart;
  bool sqnr = std::string(y_metric) == "sqnr_db";
  chart.title = "tbench " + report.area + ": rate-distortion" +
                (several_inputs ? "" : " on " + report.inputs.front().name);
  chart.x_label = "bits per value (stored bits / values)";
  chart.y_label = sqnr ? "SQNR (dB, higher is better)" : "relative error ||X - X^|| / ||X|| (lower is better)";
  chart.log_y = !sqnr;
  for (const auto& name : order) {
    auto& p = points[name];
    std::sort(p.begin(), p.end());
    cli::Series s{name, {}, {}, false, {}};
    for (const auto& [x, y] : p) s.x.push_back(x), s.y.push_back(y);
    chart.series.push_back(std::move(s));
  }
  return chart;
}

// Bars of every throughput metric; cells become groups labelled method, params, input.
std::optional<cli::BarChart> throughput(const Report& report) {
  cli::BarChart chart;
  std::string unit;
  for (const auto& r : report.results)
    for (const auto& [name, m] : r.metrics)
      if (is_rate(m) && std::find(chart.bar_names.begin(), chart.bar_names.end(), name) == chart.bar_names.end()) {
        chart.bar_names.push_back(name);
        unit = unit.empty() || unit == m.unit ? m.unit : "MB/s";
      }
  if (chart.bar_names.empty()) return std::nullopt;
  bool several_inputs = report.inputs.size() > 1;
  for (const auto& r : report.results) {
    if (r.status != "ok") continue;
    cli::BarGroup g;
    g.label = r.method;
    if (!r.params.empty()) g.label += " " + params_label(r.params);
    if (several_inputs) g.label += " (" + r.input + ")";
    for (const auto& name : chart.bar_names) {
      const Metric* m = r.find(name);
      // One axis: GB/s figures are drawn in MB/s when the chart mixes both.
      double v = m ? m->value * (m->unit == "GB/s" && unit == "MB/s" ? 1000 : 1) : std::nan("");
      g.values.push_back(v);
    }
    chart.groups.push_back(std::move(g));
  }
  chart.title = "tbench " + report.area + ": throughput (median of " +
                std::to_string(report.settings["reps"].get<int>()) + " runs)";
  chart.y_label = unit + " of input (higher is better)";
  return chart;
}

}  // namespace

std::string report_svg(const Report& report) {
  std::vector<std::string> parts;
  if (auto rd = rate_distortion(report)) parts.push_back(cli::render_svg(*rd));
  if (auto bars = throughput(report)) parts.push_back(cli::render_svg(*bars));
  if (parts.empty()) {
    cli::LineChart empty;
    empty.title = "tbench " + report.area + ": no results to plot";
    parts.push_back(cli::render_svg(empty));
  }
  return cli::stack_svg(parts);
}

}  // namespace tk::tbench
