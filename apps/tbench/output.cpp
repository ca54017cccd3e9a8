// The three text forms of a report: JSON (docs/TBENCH.md), an aligned table and CSV.
#include <cmath>

#include <fmt/format.h>

#include "cli/number_format.h"
#include "cli/report.h"
#include "cli/version.h"
#include "tbench.h"
#include "tk/core/clock.h"
#include "tk/core/dtype.h"

namespace tk::tbench {
namespace {

using nlohmann::json;

json metric_json(const Metric& m) {
  json j{{"value", cli::json_number(m.value)}, {"unit", m.unit}, {"better", bench::better_name(m.better)}};
  if (m.timed) {
    j["min"] = cli::json_number(m.min);
    j["max"] = cli::json_number(m.max);
    j["runs"] = m.runs;
  }
  return j;
}

json input_json(const Input& in) {
  json j{{"name", in.name}, {"source", in.source}};
  if (in.source == "synthetic") j["dist"] = in.dist;
  if (!in.file.empty()) j["file"] = in.file;
  if (!in.tensor.empty()) j["tensor"] = in.tensor;
  if (in.data.nbytes() > 0) {
    j["shape"] = in.data.shape();
    j["dtype"] = dtype_name(in.data.dtype());
    j["bytes"] = in.data.nbytes();
  }
  return j;
}

std::string params_text(const Params& p) {
  std::string out;
  for (const auto& [k, v] : p) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out.empty() ? "-" : out;
}

// Four significant digits: what a table reader compares (JSON and CSV keep all).
std::string short_number(double v) {
  if (!std::isfinite(v)) return std::isinf(v) ? (v > 0 ? "inf" : "-inf") : "-";
  return fmt::format("{:.4g}", v);
}

// A table cell: the value, and for timed metrics the spread of the runs.
std::string metric_cell(const Metric& m) {
  std::string v = short_number(m.value);
  if (std::isfinite(m.value) && m.timed && m.runs > 1) v += " [" + short_number(m.min) + ", " + short_number(m.max) + "]";
  return v;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_number(double v) { return std::isfinite(v) ? cli::format_number(v) : ""; }

}  // namespace

json report_json(const Report& report) {
  json inputs = json::array(), results = json::array();
  for (const auto& in : report.inputs) inputs.push_back(input_json(in));
  for (const auto& r : report.results) {
    json metrics = json::object();
    for (const auto& [name, m] : r.metrics) metrics[name] = metric_json(m);
    json params = json::object();
    for (const auto& [k, v] : r.params) params[k] = v;
    results.push_back(json{{"area", r.area},
                           {"method", r.method},
                           {"implementation", r.implementation},
                           {"params", params},
                           {"input", r.input},
                           {"status", r.status},
                           {"note", r.note},
                           {"metrics", metrics}});
  }
  return json{{"schema", kSchema},      {"tool", "tbench"},     {"version", cli::tk_version()},
              {"created", utc_now_iso8601()}, {"command", report.command}, {"machine", report.machine},
              {"settings", report.settings},  {"inputs", inputs},          {"results", results}};
}

std::string report_table(const Report& report) {
  // Columns: the metrics in the order they first appear.
  std::vector<std::string> columns;
  std::map<std::string, std::string> units;
  for (const auto& r : report.results)
    for (const auto& [name, m] : r.metrics)
      if (!units.count(name)) {
        columns.push_back(name);
        units[name] = m.unit;
      }
  std::vector<std::string> header{"method", "params", "input"};
  for (const auto& c : columns) header.push_back(units[c] == "1" || units[c].empty() ? c : c + " (" + units[c] + ")");
  header.push_back("status");
  cli::TextTable table(header);
  for (const auto& r : report.results) {
    std::vector<std::string> row{r.method, params_text(r.params), r.input};
    for (const auto& c : columns) {
      const Metric* m = r.find(c);
      row.push_back(m ? metric_cell(*m) : "-");
    }
    row.push_back(r.status == "ok" ? "ok" : r.status + ": " + r.note);
    table.add_row(std::move(row));
  }
  const json& m = report.machine;
  std::string bandwidth = m["memory_bandwidth_gb_s"].is_number()
                              ? fmt::format("{:.1f} GB/s", m["memory_bandwidth_gb_s"].get<double>())
                              : "not measured";
  // A report read back from an older tbench has no wait policy.
  const std::string wait =
      m.contains("omp_wait_policy") ? ", " + m["omp_wait_policy"].get<std::string>() + " waits" : "";
  std::string text = fmt::format("# tbench {}: {}, {} logical CPUs ({} usable), {} threads{}, memory {} ({} copy)\n",
                                 report.area, m["cpu_model"].get<std::string>(), m["logical_cpus"].get<int>(),
                                 m["usable_cpus"].get<int>(), m["threads"].get<int>(), wait,
                                 cli::format_bytes(m["memory_bytes"].get<uint64_t>()), bandwidth);
  text += fmt::format("# timed metrics: median [min, max] of {} runs after {} warm-up\n",
                      report.settings["reps"].get<int>(), report.settings["warmup"].get<int>());
  return text + table.render();
}

std::string report_csv(const Report& report) {
  std::string out = "area,method,implementation,params,input,status,metric,value,min,max,runs,unit,better\n";
  for (const auto& r : report.results) {
    std::string prefix = csv_field(r.area) + "," + csv_field(r.method) + "," + csv_field(r.implementation) + "," +
                         csv_field(params_text(r.params)) + "," + csv_field(r.input) + "," + csv_field(r.status) + ",";
    if (r.metrics.empty()) out += prefix + ",,,,,,\n";
    for (const auto& [name, m] : r.metrics)
      out += prefix + csv_field(name) + "," + csv_number(m.value) + "," + (m.timed ? csv_number(m.min) : "") + "," +
             (m.timed ? csv_number(m.max) : "") + "," + (m.timed ? std::to_string(m.runs) : "") + "," +
             csv_field(m.unit) + "," + bench::better_name(m.better) + "\n";
  }
  return out;
}

}  // namespace tk::tbench
