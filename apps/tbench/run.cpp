// tbench AREA: validate the matrix, build the inputs, run every cell under the time
// bound, and report.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli/input.h"
#include "cli/path_args.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "tbench.h"
#include "tk/bench/report.h"
#include "tk/bench/peak_memory.h"
#include "tk/bench/synthetic.h"
#include "tk/core/clock.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/io/tensor_file.h"

namespace tk::tbench {
namespace {

using nlohmann::json;

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + 1) out.push_back(text.substr(start, at - start));
  out.push_back(text.substr(start));
  return out;
}

const MethodSpec* find_method(const Area& area, const std::string& name) {
  for (const auto& m : area.methods)
    if (m.name == name) return &m;
  return nullptr;
}

std::vector<std::string> method_names(const Area& area) {
  std::vector<std::string> names;
  for (const auto& m : area.methods) names.push_back(m.name);
  return names;
}

// The methods to run, each checked: a name of the table, or one the area accepts
// beyond it (quant scheme specs such as "kmeans:3").
std::vector<std::string> select_methods(const Area& area, const std::vector<std::string>& asked) {
  if (asked.empty()) return area.default_methods;
  for (const auto& name : asked) {
    if (find_method(area, name)) continue;
    if (area.check_method) {
      area.check_method(name);
      continue;
    }
    throw usage_error("unknown method '" + name + "' for " + area.name + " (valid: " + join(method_names(area)) + ")");
  }
  return asked;
}

// --params KEY=V1,V2 into values per key, each key checked against the area's table.
std::map<std::string, std::vector<std::string>> parse_params(const Area& area, const std::vector<std::string>& given) {
  std::map<std::string, std::vector<std::string>> values;
  for (const auto& p : area.params) values[p.name] = split(p.defaults, ',');
  std::vector<std::string> valid;
  for (const auto& p : area.params) valid.push_back(p.name);
  for (const auto& text : given) {
    size_t eq = text.find('=');
    std::string key = text.substr(0, eq);
    if (eq == std::string::npos || eq + 1 == text.size())
      throw usage_error("--params takes KEY=V1,V2, not '" + text + "' (valid keys for " + area.name + ": " + join(valid) + ")");
    if (!values.count(key))
      throw usage_error("unknown parameter '" + key + "' for " + area.name + " (valid: " + join(valid) + ")");
    values[key] = split(text.substr(eq + 1), ',');
    const ParamSpec& spec = *std::find_if(area.params.begin(), area.params.end(), [&](const ParamSpec& p) { return p.name == key; });
    for (const auto& v : values[key]) {
      if (v.empty()) throw usage_error("--params " + text + ": empty value");
      if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), v) == spec.choices.end())
        throw usage_error("parameter " + key + "=" + v + " is not one of " + join(spec.choices));
    }
  }
  return values;
}

// Every combination of the values of the parameters `names`, in a stable order.
std::vector<Params> combinations(const std::vector<std::string>& names,
                                 const std::map<std::string, std::vector<std::string>>& values) {
  std::vector<Params> out{{}};
  for (const auto& name : names) {
    std::vector<Params> next;
    for (const auto& base : out)
      for (const auto& v : values.at(name)) {
        Params p = base;
        p[name] = v;
        next.push_back(std::move(p));
      }
    out = std::move(next);
  }
  return out;
}

std::vector<Input> synthetic_inputs(const Area& area, const RunOptions& o, uint64_t seed) {
  std::vector<std::string> shapes = o.shapes.empty() ? area.default_shapes : o.shapes;
  std::vector<std::string> dists = o.dists.empty() ? area.default_dists : o.dists;
  std::vector<Input> inputs;
  for (const auto& shape_text : shapes) {
    Shape shape = shape_parse(shape_text);
    for (const auto& dist_text : dists) {
      bench::Distribution d = bench::distribution_parse(dist_text);
      Input in;
      std::string dims;
      for (int64_t v : shape) {
        if (!dims.empty()) dims += 'x';
        dims += std::to_string(v);
      }
      in.name = std::string(bench::distribution_name(d)) + "-" + dims;
      in.source = "synthetic";
      in.dist = bench::distribution_name(d);
      in.data = bench::synthetic_tensor(d, shape, seed + inputs.size());
      inputs.push_back(std::move(in));
    }
  }
  return inputs;
}

// The selected float tensors of the input files; a file without any is invalid input.
std::vector<Input> file_inputs(cli::Tool& tool, const std::vector<std::string>& paths) {
  std::vector<Input> inputs;
  cli::TensorSelection selection = tool.options().selection();
  for (const auto& path : paths) {
    auto reader = cli::open_reader(tool, path);
    size_t before = inputs.size();
    for (size_t i = 0; i < reader->tensors().size(); ++i) {
      const auto& info = reader->tensors()[i];
      if (!selection.selects(info.name) || !dtype_is_float(info.dtype) || info.nbytes == 0) continue;
      Input in;
      in.name = path + ":" + info.name;
      in.source = "file";
      in.file = path;
      in.tensor = info.name;
      in.data = reader->read(i).clone();  // owned: the reader (and its mapping) goes away
      inputs.push_back(std::move(in));
    }
    if (inputs.size() == before) throw invalid_input("no selected float tensors to benchmark", path);
  }
  selection.check_all_patterns_used();
  return inputs;
}

// io measures whole files: one input per file, its data not loaded up front.
std::vector<Input> whole_file_inputs(const std::vector<std::string>& paths) {
  std::vector<Input> inputs;
  for (const auto& path : paths) {
    auto reader = cli::open_tensor_file(path);
    bool any_float = false;
    for (const auto& info : reader->tensors()) any_float = any_float || dtype_is_float(info.dtype);
    if (!any_float) throw invalid_input("no float tensors to benchmark", path);
    Input in;
    in.name = path;
    in.source = "file";
    in.file = path;
    inputs.push_back(std::move(in));
  }
  return inputs;
}

std::string describe_params(const Params& p) {
  std::string out;
  for (const auto& [k, v] : p) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

void write_text_file(const std::string& path, const std::string& text) {
  if (cli::is_std_stream(path)) return cli::write_stdout(text);
  std::string tmp = path + ".tmp-tbench";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close();
    if (!out) throw io_error("failed to write", path);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw io_error("failed to rename into place: " + ec.message(), path);
}

// The parameters method `name` takes: its table entry's, or those the area gives for it.
std::vector<std::string> method_takes(const Area& area, const std::string& name) {
  if (const MethodSpec* spec = find_method(area, name)) return spec->params;
  return area.method_params ? area.method_params(name) : area.methods.front().params;
}

// A --params key that none of the methods to run takes would be silently ignored.
void check_params_used(const Area& area, const std::vector<std::string>& methods, const std::vector<std::string>& given) {
  for (const auto& text : given) {
    std::string key = text.substr(0, text.find('='));
    std::vector<std::string> takers;
    for (const auto& m : area.methods)
      if (std::find(m.params.begin(), m.params.end(), key) != m.params.end()) takers.push_back(m.name);
    bool used = false;
    for (const auto& name : methods) {
      const std::vector<std::string> takes = method_takes(area, name);
      used = used || std::find(takes.begin(), takes.end(), key) != takes.end();
    }
    if (!used)
      throw usage_error("parameter '" + key + "' is taken by none of the methods run (" + join(methods) +
                        "); it applies to " + join(takers));
  }
}

}  // namespace

std::string area_help(const Area& area) {
  std::string text = "Methods (default: " + join(area.default_methods) + "):\n";
  for (const auto& m : area.methods)
    text += "  " + m.name + (m.params.empty() ? "" : " [" + join(m.params) + "]") + ": " + m.description + "\n";
  if (!area.params.empty()) text += "Parameters (--params KEY=V1,V2; default values in brackets):\n";
  for (const auto& p : area.params) text += "  " + p.name + " [" + p.defaults + "]: " + p.description + "\n";
  text += "Synthetic inputs (no INPUT): --shape " + join(area.default_shapes) + " --dist " + join(area.default_dists, ",");
  return text;
}

int run_area(cli::Tool& tool, const RunOptions& o) {
  const Area& area = find_area(o.area);
  std::vector<std::string> methods = select_methods(area, o.methods);
  auto values = parse_params(area, o.params);
  check_params_used(area, methods, o.params);
  if (cli::is_std_stream(o.csv) && !tool.options().text_report())
    throw usage_error("--csv - and --json - both want stdout; give one of them a file");

  uint64_t seed = tool.options().seed.value_or(0);
  Report report;
  report.area = area.name;
  report.command = tool.args();
  report.command.insert(report.command.begin(), "tbench");
  if (o.inputs.empty())
    report.inputs = synthetic_inputs(area, o, seed);
  else if (area.name == "io")
    report.inputs = whole_file_inputs(o.inputs);
  else
    report.inputs = file_inputs(tool, o.inputs);
  report.machine = bench::machine_json(tool.options().threads, true);
  report.settings = json{{"warmup", o.warmup}, {"reps", o.reps}, {"max_seconds", o.max_seconds}, {"seed", seed}};

  std::vector<Cell> cells;
  for (const auto& name : methods) {
    for (const auto& params : combinations(method_takes(area, name), values))
      for (const auto& input : report.inputs) {
        Cell c;
        c.method = name;
        c.params = params;
        c.input = &input;
        c.timing.warmup = o.warmup;
        c.timing.repetitions = o.reps;
        c.dir = o.dir;
        c.threads = tool.options().threads;
        cells.push_back(std::move(c));
      }
  }

  cli::Progress progress(tool.options().show_progress, "tbench");
  double start = bench::monotonic_seconds();
  size_t skipped = 0, failed = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    Result r;
    r.area = area.name;
    r.method = c.method;
    r.params = c.params;
    r.input = c.input->name;
    std::string label = c.method + (c.params.empty() ? "" : " " + describe_params(c.params)) + " on " + r.input;
    if (i > 0 && o.max_seconds > 0 && bench::monotonic_seconds() - start > o.max_seconds) {
      r.status = "skipped";
      r.note = fmt::format("--max-seconds {} reached", o.max_seconds);
      ++skipped;
    } else {
      progress.show(fmt::format("{} {}/{}: {}", area.name, i + 1, cells.size(), label), true);
      tool.verbose(1, fmt::format("{} {}/{}: {}", area.name, i + 1, cells.size(), label));
      bench::reset_peak_rss();
      try {
        area.run(c, r);
        r.set("peak_rss_mb", static_cast<double>(bench::peak_rss_bytes()) / (1 << 20), "MiB", bench::Better::kLower);
      } catch (const Error& e) {
        // A missing codec skips its cells; anything else fails the cell, not the run.
        r.status = e.kind() == ErrorKind::kUnavailable ? "skipped" : "failed";
        r.note = e.message() + (e.where().empty() ? std::string() : " (" + e.where() + ")");
        r.metrics.clear();
        if (r.status == "skipped") ++skipped;
        else ++failed;
        tool.warning(label + ": " + r.note);
      }
    }
    report.results.push_back(std::move(r));
  }
  progress.clear();

  // stdout carries one report: the table, or the JSON or CSV asked for with '-'.
  if (tool.options().text_report() && !cli::is_std_stream(o.csv)) cli::write_stdout(report_table(report));
  if (tool.options().json) cli::write_json(report_json(report), *tool.options().json);
  if (!o.csv.empty()) write_text_file(o.csv, report_csv(report));
  if (!o.svg.empty()) write_text_file(o.svg, report_svg(report));
  tool.summary(fmt::format("{} cells in {:.1f} s ({} skipped, {} failed)", cells.size(),
                           bench::monotonic_seconds() - start, skipped, failed));
  return failed ? cli::kExitFailure : cli::kExitOk;
}

}  // namespace tk::tbench
