// tbench compare OLD.json NEW.json: what got faster, slower, better, worse, per
// (area, method, params, input, metric); exit 1 when a metric regressed past the
// threshold, so that CI can gate on it.
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "cli/number_format.h"
#include "cli/report.h"
#include "tbench.h"
#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"

namespace tk::tbench {
namespace {

using nlohmann::json;

json load_results(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw errno_error("failed to open for reading", path, errno);
  std::ostringstream text;
  text << in.rdbuf();
  json doc = json_parse(text.str(), "tbench results", path);
  if (!doc.is_object()) throw invalid_input("not a JSON object", path);
  if (!doc.contains("schema") || !doc["schema"].is_string())
    throw invalid_input("not a tbench result file (no \"schema\")", path);
  std::string schema = doc["schema"].get<std::string>();
  if (schema != kSchema)
    throw invalid_input("results of schema " + schema + ", this tbench reads " + kSchema, path);
  if (!doc.contains("results") || !doc["results"].is_array()) throw invalid_input("no \"results\" array", path);
  return doc;
}

double parse_threshold(const std::string& text) {
  std::string t = text;
  bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  try {
    size_t used = 0;
    double v = std::stod(t, &used);
    if (used == t.size() && v >= 0 && std::isfinite(v)) return percent ? v / 100 : v;
  } catch (const std::exception&) {
  }
  throw usage_error("--threshold takes a relative change such as 5% or 0.05, not '" + text + "'");
}

// The identity of a cell: area, method, implementation, params as canonical JSON, input.
std::string cell_key(const json& r, const std::string& where) {
  for (const char* field : {"area", "method", "input"})
    if (!r.contains(field) || !r[field].is_string())
      throw invalid_input(std::string("a result without a string \"") + field + "\"", where);
  std::string impl = r.value("implementation", std::string("tensorkit"));
  return r["area"].get<std::string>() + " " + r["method"].get<std::string>() +
         (impl == "tensorkit" ? "" : " [" + impl + "]") + " " + r.value("params", json::object()).dump() + " " +
         r["input"].get<std::string>();
}

std::map<std::string, const json*> index_cells(const json& doc, const std::string& where) {
  std::map<std::string, const json*> cells;
  for (const auto& r : doc["results"]) {
    if (!r.is_object()) throw invalid_input("a result that is not an object", where);
    cells[cell_key(r, where)] = &r;
  }
  return cells;
}

// The spread a timed metric records ("min", "max" over "runs" > 1), if any.
std::optional<bench::Spread> spread_of(const json& m) {
  if (!m.contains("min") || !m.contains("max") || !m["min"].is_number() || !m["max"].is_number()) return std::nullopt;
  if (m.value("runs", 0) < 2) return std::nullopt;
  return bench::Spread{m["min"].get<double>(), m["max"].get<double>()};
}

// Throughput and time are faster/slower; everything else better/worse.
bool is_speed(const std::string& unit) { return unit == "MB/s" || unit == "GB/s" || unit == "s" || unit == "ms"; }

const char* verdict_word(bench::Verdict v, bool speed) {
  switch (v) {
    case bench::Verdict::kImproved: return speed ? "faster" : "better";
    case bench::Verdict::kRegressed: return speed ? "slower" : "worse";
    case bench::Verdict::kSame: return "same";
  }
  return "same";
}

std::string percent(double relative) {
  if (std::isinf(relative)) return relative > 0 ? "+inf" : "-inf";
  return fmt::format("{:+.1f}%", relative * 100);
}

}  // namespace

int run_compare(cli::Tool& tool, const CompareOptions& o) {
  double threshold = parse_threshold(o.threshold);
  json old_doc = load_results(o.old_path), new_doc = load_results(o.new_path);
  auto old_cells = index_cells(old_doc, o.old_path), new_cells = index_cells(new_doc, o.new_path);

  cli::TextTable table({"cell", "metric", "old", "new", "change", "verdict"});
  json changes = json::array(), only_old = json::array(), only_new = json::array();
  int regressions = 0, improvements = 0, compared = 0;
  for (const auto& [key, old_r] : old_cells) {
    auto it = new_cells.find(key);
    if (it == new_cells.end()) {
      only_old.push_back(key);
      continue;
    }
    const json& old_metrics = old_r->value("metrics", json::object());
    const json& new_metrics = it->second->value("metrics", json::object());
    for (const auto& [name, om] : old_metrics.items()) {
      if (!new_metrics.contains(name)) continue;
      const json& nm = new_metrics[name];
      if (!om.is_object() || !nm.is_object() || !om["value"].is_number() || !nm["value"].is_number()) continue;
      bench::Better better = bench::better_parse(om.value("better", std::string("none")));
      double ov = om["value"].get<double>(), nv = nm["value"].get<double>();
      bench::Change c = bench::judge_change(ov, nv, better, threshold, spread_of(om), spread_of(nm));
      ++compared;
      std::string word = verdict_word(c.verdict, is_speed(om.value("unit", std::string())));
      if (c.verdict == bench::Verdict::kRegressed) ++regressions;
      if (c.verdict == bench::Verdict::kImproved) ++improvements;
      if (c.verdict != bench::Verdict::kSame || tool.options().verbose > 0)
        table.add_row({key, name, cli::format_number(ov), cli::format_number(nv), percent(c.relative), word});
      changes.push_back(json{{"cell", key}, {"metric", name}, {"old", ov}, {"new", nv},
                             {"relative_change", cli::json_number(c.relative)}, {"verdict", word},
                             {"regressed", c.verdict == bench::Verdict::kRegressed}});
    }
  }
  for (const auto& [key, r] : new_cells)
    if (!old_cells.count(key)) only_new.push_back(key);

  if (tool.options().text_report()) {
    std::string text = fmt::format("# compare {} -> {}: {} metrics, threshold {}\n", o.old_path, o.new_path, compared,
                                   percent(threshold).substr(1));
    if (table.rows() > 0) text += table.render();
    for (const auto& k : only_old) text += "only in old: " + k.get<std::string>() + "\n";
    for (const auto& k : only_new) text += "only in new: " + k.get<std::string>() + "\n";
    text += fmt::format("{} regressed, {} improved, {} within the threshold or the noise\n", regressions, improvements,
                        compared - regressions - improvements);
    cli::write_stdout(text);
  }
  if (tool.options().json)
    cli::write_json(json{{"schema", "tensorkit.tbench-compare/1"}, {"threshold", threshold}, {"regressions", regressions},
                         {"improvements", improvements}, {"changes", changes}, {"only_old", only_old},
                         {"only_new", only_new}},
                    *tool.options().json);
  return regressions > 0 ? cli::kExitFailure : cli::kExitOk;
}

}  // namespace tk::tbench
