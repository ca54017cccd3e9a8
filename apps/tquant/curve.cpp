// tquant curve: the mixed-precision proof. Every budgeted tensor is measured once
// under every candidate; then each single scheme (the same scheme for every tensor)
// and the budget solver at the same average bpw are compared by total SQNR.
#include <cmath>
#include <cstdio>
#include <algorithm>

#include <fmt/format.h>

#include "cli/input.h"
#include "cli/path_args.h"
#include "cli/report.h"
#include "cli/svg_plot.h"
#include "session.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"
#include "tk/quant/layout.h"

namespace tk::tquant {

namespace {

using nlohmann::json;

struct Point {
  std::string label;
  double bpw = 0, sqnr_db = 0;
  std::map<std::string, int> schemes;  // tensors per scheme
};

double sqnr(double signal, double error) { return error > 0 ? 10 * std::log10(signal / error) : INFINITY; }

// Each candidate that applies to every tensor, used for all of them.
std::vector<Point> single_points(const quant::CandidateTable& t, const std::vector<std::string>& candidates,
                                 double signal) {
  std::vector<Point> out;
  for (const std::string& c : candidates) {
    uint64_t bytes = t.fixed_bytes;
    double error = t.fixed_error;
    bool everywhere = true;
    for (size_t i = 0; i < t.items.size() && everywhere; ++i) {
      auto it = std::find(t.usable[i].begin(), t.usable[i].end(), c);
      everywhere = it != t.usable[i].end();
      if (!everywhere) break;
      size_t k = it - t.usable[i].begin();
      bytes += t.items[i].bytes[k];
      error += t.items[i].error[k];
    }
    if (!everywhere) continue;
    out.push_back({c, bytes * 8.0 / t.weights, sqnr(signal, error), {{c, static_cast<int>(t.items.size())}}});
  }
  std::sort(out.begin(), out.end(), [](const Point& a, const Point& b) { return a.bpw < b.bpw; });
  return out;
}

Point budget_point(const quant::CandidateTable& t, double bpw, double signal) {
  uint64_t capacity = static_cast<uint64_t>(std::floor(bpw * t.weights / 8)) - t.fixed_bytes;
  quant::BudgetResult r = quant::budget_solve(t.items, capacity);
  Point p{fmt::format("budget {:.4f}", bpw), (r.bytes + t.fixed_bytes) * 8.0 / t.weights,
          sqnr(signal, r.error + t.fixed_error), {}};
  for (size_t i = 0; i < t.items.size(); ++i) ++p.schemes[t.usable[i][r.choice[i]]];
  return p;
}

json point_json(const Point& p) {
  return {{"label", p.label}, {"bpw", p.bpw}, {"sqnr_db", p.sqnr_db}, {"schemes", p.schemes}};
}

}  // namespace

int run_curve(cli::Tool& tool, const QuantArgs& args, const std::string& svg_path) {
  Session session{tool, args, options_from_args(args), {}, {}};
  session.base.seed = tool.options().seed.value_or(0);
  if (!args.importance.empty()) session.read_importance();
  for (const std::string& r : args.rules) session.scheme(parse_rule(r).second);
  Source src(cli::open_seekable_reader(tool, args.input));
  if (!args.importance.empty()) session.match_importance(src.reader().tensors());
  cli::TensorSelection selection = tool.options().selection();
  std::vector<PlanEntry> plan = plan_tensors(src.reader().tensors(), args, selection, true);
  selection.check_all_patterns_used();
  std::vector<std::string> candidates = candidate_list(args);
  cli::Progress progress(tool.options().show_progress, tool.name());
  quant::CandidateTable t = measure_candidates(session, src, plan, candidates, progress);
  progress.clear();
  if (t.items.empty()) throw usage_error("no tensor to quantize");
  double signal = t.fixed_signal;
  for (double s : t.signal) signal += s;

  std::vector<Point> singles = single_points(t, candidates, signal);
  if (singles.empty()) throw usage_error("no candidate applies to every tensor");
  // The budget at every single scheme's bpw, and on a grid between the extremes.
  std::vector<double> budgets;
  double lo = quant::budget_min_bytes(t.items) * 8.0 / t.weights + (t.fixed_bytes * 8.0 / t.weights);
  for (double b = std::ceil(lo * 4) / 4; b <= singles.back().bpw + 1e-9; b += 0.25) budgets.push_back(b);
  for (const Point& p : singles) budgets.push_back(p.bpw);
  std::sort(budgets.begin(), budgets.end());
  budgets.erase(std::unique(budgets.begin(), budgets.end()), budgets.end());
  std::vector<Point> budgeted;
  for (double b : budgets) budgeted.push_back(budget_point(t, b, signal));

  cli::TextTable table({"single scheme", "bpw", "sqnr_db", "budgeted sqnr_db", "gain_db"});
  json comparison = json::array();
  for (const Point& p : singles) {
    Point b = budget_point(t, p.bpw, signal);
    table.add_row({p.label, fmt::format("{:.4f}", p.bpw), fmt::format("{:.2f}", p.sqnr_db),
                   fmt::format("{:.2f}", b.sqnr_db), fmt::format("{:+.2f}", b.sqnr_db - p.sqnr_db)});
    comparison.push_back({{"scheme", p.label}, {"bpw", p.bpw}, {"single_sqnr_db", p.sqnr_db},
                          {"budget_bpw", b.bpw}, {"budget_sqnr_db", b.sqnr_db}, {"budget_schemes", b.schemes}});
  }
  if (tool.options().text_report()) cli::write_stdout(table.render());

  json doc = {{"input", args.input}, {"tensors", t.items.size()}, {"weights", t.weights},
              {"candidates", candidates}, {"comparison", comparison}};
  doc["single"] = json::array();
  for (const Point& p : singles) doc["single"].push_back(point_json(p));
  doc["budget"] = json::array();
  for (const Point& p : budgeted) doc["budget"].push_back(point_json(p));
  if (tool.options().json) cli::write_json(doc, *tool.options().json);

  if (!svg_path.empty()) {
    cli::LineChart chart;
    chart.title = "Budgeted mixed precision vs single schemes";
    chart.x_label = "bits per weight (metadata included)";
    chart.y_label = "SQNR (dB)";
    cli::Series single, mixed;
    single.name = "single scheme (each point one scheme)";
    single.points_only = true;
    mixed.name = "budgeted (one scheme per tensor)";
    for (const Point& p : singles) {
      single.x.push_back(p.bpw);
      single.y.push_back(p.sqnr_db);
      single.labels.push_back(p.label);
    }
    for (const Point& p : budgeted) mixed.x.push_back(p.bpw), mixed.y.push_back(p.sqnr_db);
    chart.series = {single, mixed};
    std::string svg = cli::render_svg(chart);
    auto out = cli::open_output(svg_path);
    out->write(svg.data(), svg.size());
    out->commit();
  }
  return cli::kExitOk;
}

}  // namespace tk::tquant
