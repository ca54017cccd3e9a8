// The three text forms of a report: JSON (docs/TBENCH.md), an aligned table and CSV.
#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "cli/display_text.h"
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

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_number(double v) { return std::isfinite(v) ? cli::format_number(v) : ""; }

// ---- the text table: at most kTableWidth columns ----
// A table must read in a terminal beside another: the keys every row shares go to a
// header line, units to a second header line, a timed metric's spread to one percentage,
// notes to numbered lines below, and the metric columns wrap into blocks that repeat the
// row keys. The JSON and CSV keep every value.
constexpr size_t kTableWidth = 100;

// Columns on screen: escape_text gives printable ASCII or UTF-8, one column per code point.
size_t text_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The largest distance of a timed run from the median, as a percentage of it.
std::string spread_text(const Metric& m) {
  if (!m.timed || m.runs < 2 || !std::isfinite(m.value) || m.value == 0) return "";
  const double pct = std::max(std::abs(m.max - m.value), std::abs(m.value - m.min)) / std::abs(m.value) * 100;
  if (!std::isfinite(pct)) return "";
  return pct < 10 ? fmt::format(" \u00b1{:.1f}%", pct) : fmt::format(" \u00b1{:.0f}%", pct);
}

struct Column {
  std::string name, unit;
  std::vector<std::string> cells;  // escaped, one per row
  size_t width = 0;
};

Column make_column(std::string name, std::string unit, std::vector<std::string> cells) {
  Column c{std::move(name), std::move(unit), {}, 0};
  c.width = std::max(text_width(c.name), text_width(c.unit));
  for (auto& cell : cells) {
    c.cells.push_back(cli::escape_text(cell));
    c.width = std::max(c.width, text_width(c.cells.back()));
  }
  return c;
}

size_t line_width(const std::vector<const Column*>& cols) {
  size_t w = 0;
  for (const Column* c : cols) w += c->width + 2;
  return cols.empty() ? 0 : w - 2;
}

// One block: a header line, a unit line when a column has a unit, then the rows; two
// spaces between columns, the last one unpadded.
std::string render_block(const std::vector<const Column*>& cols, size_t rows) {
  std::string out;
  auto line = [&](auto cell_of) {
    std::string l;
    for (size_t i = 0; i < cols.size(); ++i) {
      const std::string& cell = cell_of(*cols[i]);
      l += cell;
      if (i + 1 < cols.size()) l.append(cols[i]->width - text_width(cell) + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + '\n';
  };
  line([](const Column& c) -> const std::string& { return c.name; });
  bool units = false;
  for (const Column* c : cols) units = units || !c->unit.empty();
  if (units) line([](const Column& c) -> const std::string& { return c.unit; });
  for (size_t r = 0; r < rows; ++r) line([r](const Column& c) -> const std::string& { return c.cells[r]; });
  return out;
}

// `text` broken at spaces into lines of at most kTableWidth columns, continued indented.
std::string wrap_text(const std::string& text, const std::string& indent) {
  std::string out, l;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!l.empty() && text_width(l) + 1 + text_width(word) > kTableWidth) {
      out += l + '\n';
      l = indent + word;
    } else {
      l += (l.empty() ? "" : " ") + word;
    }
    start = end + 1;
  }
  return out + l + '\n';
}

std::string wrapped_table(const std::vector<Result>& results) {
  // Parameter values every row has alike, and a single input, are said once above.
  Params shared;
  if (!results.empty()) shared = results.front().params;
  bool one_input = !results.empty();
  for (const auto& r : results) {
    for (auto it = shared.begin(); it != shared.end();) {
      auto p = r.params.find(it->first);
      it = p == r.params.end() || p->second != it->second ? shared.erase(it) : std::next(it);
    }
    one_input = one_input && r.input == results.front().input;
  }
  std::vector<std::string> common;
  for (const auto& [k, v] : shared) common.push_back(k + "=" + v);
  if (one_input) common.push_back("input " + results.front().input);

  // Notes of the rows that did not run, numbered once each.
  std::vector<std::string> notes;
  auto note_ref = [&](const Result& r) {
    if (r.status == "ok" || r.note.empty()) return r.status;
    auto it = std::find(notes.begin(), notes.end(), r.note);
    if (it == notes.end()) it = notes.insert(notes.end(), r.note);
    return fmt::format("{} [{}]", r.status, it - notes.begin() + 1);
  };

  std::vector<std::string> methods, params, inputs, statuses;
  bool all_ok = true, any_params = false;
  for (const auto& r : results) {
    methods.push_back(r.method);
    Params own;
    for (const auto& [k, v] : r.params)
      if (!shared.count(k)) own[k] = v;
    params.push_back(params_text(own));
    any_params = any_params || !own.empty();
    inputs.push_back(r.input);
    statuses.push_back(note_ref(r));
    all_ok = all_ok && r.status == "ok";
  }
  std::vector<Column> keys;
  keys.push_back(make_column("method", "", methods));
  if (any_params) keys.push_back(make_column("params", "", params));
  if (!one_input) keys.push_back(make_column("input", "", inputs));
  const bool show_status = !all_ok;
  Column status = make_column("status", "", statuses);

  // Metric columns in the order they first appear.
  std::vector<Column> metrics;
  std::vector<std::string> names;
  for (const auto& r : results)
    for (const auto& [name, metric] : r.metrics)
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
        std::vector<std::string> cells;
        for (const auto& row : results) {
          const Metric* x = row.find(name);
          cells.push_back(x ? short_number(x->value) + spread_text(*x) : "-");
        }
        metrics.push_back(make_column(name, metric.unit == "1" ? "" : metric.unit, cells));
      }

  // Blocks repeat the keys; when the keys leave too little room for metrics, each row
  // gets a number instead, and the first block holds the keys alone.
  std::vector<const Column*> key_cols;
  for (const auto& k : keys) key_cols.push_back(&k);
  size_t widest_metric = 0;
  for (const auto& c : metrics) widest_metric = std::max(widest_metric, c.width);
  std::vector<std::string> numbers;
  for (size_t i = 0; i < results.size(); ++i) numbers.push_back(std::to_string(i + 1));
  const Column number = make_column("#", "", numbers);
  std::vector<std::vector<const Column*>> blocks;
  std::vector<const Column*> first = key_cols;
  if (show_status) first.push_back(&status);
  std::vector<const Column*> repeat = key_cols;
  if (!metrics.empty() && line_width(first) + 2 + 2 * (widest_metric + 2) > kTableWidth) {
    first.insert(first.begin(), &number);
    blocks.push_back(first);
    first = repeat = {&number};
  }
  std::vector<const Column*> block = first;
  size_t in_block = 0;
  for (const auto& c : metrics) {
    if (in_block > 0 && line_width(block) + 2 + c.width > kTableWidth) {
      blocks.push_back(block);
      block = repeat;
      in_block = 0;
    }
    block.push_back(&c);
    ++in_block;
  }
  blocks.push_back(block);

  std::string out;
  if (!common.empty()) {
    std::string line = "# every row: ";
    for (size_t i = 0; i < common.size(); ++i) line += (i ? ", " : "") + cli::escape_text(common[i]);
    out += wrap_text(line, "#   ");
  }
  for (size_t b = 0; b < blocks.size(); ++b) out += (b ? "\n" : "") + render_block(blocks[b], results.size());
  for (size_t i = 0; i < notes.size(); ++i) out += wrap_text(fmt::format("[{}] {}", i + 1, cli::escape_text(notes[i])), "    ");
  return out;
}

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
  const json& m = report.machine;
  std::string bandwidth = m["memory_bandwidth_gb_s"].is_number()
                              ? fmt::format("{:.1f} GB/s", m["memory_bandwidth_gb_s"].get<double>())
                              : "not measured";
  // A report read back from an older tbench has no wait policy.
  const std::string wait =
      m.contains("omp_wait_policy") ? ", " + m["omp_wait_policy"].get<std::string>() + " waits" : "";
  std::string text = fmt::format("# tbench {}: {}, {} logical CPUs ({} usable)\n", report.area,
                                 m["cpu_model"].get<std::string>(), m["logical_cpus"].get<int>(),
                                 m["usable_cpus"].get<int>());
  text += fmt::format("# {} threads{}; memory {} ({} copy)\n", m["threads"].get<int>(), wait,
                      cli::format_bytes(m["memory_bytes"].get<uint64_t>()), bandwidth);
  text += fmt::format("# timed metrics: the median of {} runs after {} warm-up; \u00b1 the farthest run from it\n",
                      report.settings["reps"].get<int>(), report.settings["warmup"].get<int>());
  return text + wrapped_table(report.results);
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
