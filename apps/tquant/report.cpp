#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "cli/display_text.h"
#include "cli/number_format.h"
#include "cli/path_args.h"
#include "cli/report.h"
#include "results.h"

namespace tk::tquant {

namespace {

using nlohmann::json;

// The totals of a run. Per-tensor SQNRs are summarised four ways, because they answer
// different questions: the median and the worst tensor (what a layer sees), the mean
// weighted by elements (what an average weight sees), and the energy-weighted figure
// (the error of the whole model as one vector, which a few large-valued tensors can
// dominate).
struct Totals {
  uint64_t weights = 0, bytes = 0;
  double signal = 0, noise = 0, weighted_sse = 0;
  double median_db = INFINITY, element_db = INFINITY, worst_db = INFINITY;
  std::string worst;  // name of the worst tensor
  double bpw() const { return weights ? static_cast<double>(bytes) * 8 / static_cast<double>(weights) : 0; }
  double sqnr_db() const { return noise > 0 ? 10 * std::log10(signal / noise) : INFINITY; }
};

Totals totals_of(const std::vector<Result>& results) {
  Totals t;
  std::vector<double> dbs;
  double weighted_db = 0, finite_weights = 0;
  for (const Result& r : results) {
    const quant::Measured& m = r.measured;
    const uint64_t n = r.entry->info.shape.empty() ? 1 : shape_numel(r.entry->info.shape);
    t.weights += n;
    t.bytes += m.bytes;
    t.signal += m.signal;
    t.noise += m.signal * m.stats.rel_rmse * m.stats.rel_rmse;
    t.weighted_sse += m.stats.weighted_sse;
    const double db = m.stats.sqnr_db;
    dbs.push_back(db);
    if (std::isfinite(db)) weighted_db += db * static_cast<double>(n), finite_weights += static_cast<double>(n);
    if (db < t.worst_db) t.worst_db = db, t.worst = r.entry->info.name;
  }
  if (!dbs.empty()) {
    std::sort(dbs.begin(), dbs.end());
    const size_t h = dbs.size() / 2;
    t.median_db = dbs.size() % 2 ? dbs[h] : (dbs[h - 1] + dbs[h]) / 2;
  }
  if (finite_weights > 0) t.element_db = weighted_db / finite_weights;
  return t;
}

std::string db_text(double db) { return std::isinf(db) ? "inf" : fmt::format("{:.2f}", db); }

std::string device_of(const Result& r) { return r.device >= 0 ? "cuda:" + std::to_string(r.device) : "cpu"; }

// Weights quantized on each device ("cpu", "cuda:0").
std::map<std::string, uint64_t> weights_by_device(const std::vector<Result>& results) {
  std::map<std::string, uint64_t> by;
  for (const Result& r : results) by[device_of(r)] += shape_numel(r.entry->info.shape);
  return by;
}

std::string text_report(const std::vector<PlanEntry>& plan, const std::vector<Result>& results, const Totals& t,
                        const std::optional<std::string>& sha256, const QuantArgs& args, uint64_t out_bytes) {
  cli::TextTable table({"tensor", "scheme", "shape", "bpw", "rel_rmse", "sqnr_db", "max_abs", "clipped"});
  for (const Result& r : results) {
    const quant::ErrorStats& s = r.measured.stats;
    table.add_row({r.entry->info.name, r.entry->scheme, shape_to_string(r.entry->info.shape),
                   fmt::format("{:.4f}", r.measured.bpw), cli::format_number(s.rel_rmse), db_text(s.sqnr_db),
                   cli::format_number(s.max_abs), fmt::format("{:.3f}%", 100 * s.clipped_share)});
  }
  size_t passed = plan.size() - results.size();
  std::string text = table.render();
  text += fmt::format("total: {} quantized, {} passed through; {} weights in {} at {:.4f} bpw\n",
                      cli::count_noun(results.size(), "tensor", "tensors"),
                      cli::count_noun(passed, "tensor", "tensors"), t.weights, cli::format_bytes(t.bytes), t.bpw());
  if (!results.empty()) {
    text += fmt::format("SQNR dB: median {}, element-weighted {}, worst {} ({}), energy-weighted {}\n",
                        db_text(t.median_db), db_text(t.element_db), db_text(t.worst_db), cli::escape_text(t.worst),
                        db_text(t.sqnr_db()));
  }
  // Said where a GPU took part: a run on the CPU alone reads as it always has.
  const std::map<std::string, uint64_t> by_device = weights_by_device(results);
  if (by_device.size() > 1 || (by_device.size() == 1 && by_device.begin()->first != "cpu")) {
    std::string where;
    for (const auto& [name, weights] : by_device) where += fmt::format("{}{} ({} weights)", where.empty() ? "" : ", ", name, weights);
    text += "device: " + where + "\n";
  }
  if (args.dry_run) {
    text += "dry run: nothing written\n";
  } else if (sha256) {
    text += fmt::format("output: {} ({}), sha256 {}\n", cli::escape_text(args.output), cli::format_bytes(out_bytes), *sha256);
  } else {
    text += fmt::format("output: {} ({} of tensor data)\n", cli::escape_text(cli::output_display_name(args.output)),
                        cli::format_bytes(out_bytes));
  }
  return text;
}

json json_report(const QuantArgs& args, const std::vector<PlanEntry>& plan, const std::vector<Result>& results,
                 const Totals& t, const std::optional<std::string>& sha256, uint64_t out_bytes) {
  std::map<const PlanEntry*, const Result*> by_entry;
  for (const Result& r : results) by_entry[r.entry] = &r;
  json tensors = json::array();
  for (const PlanEntry& e : plan) {
    json j = {{"name", e.info.name}, {"dtype", dtype_name(e.info.dtype)}, {"shape", e.info.shape},
              {"reason", e.reason}};
    auto it = by_entry.find(&e);
    if (it == by_entry.end()) {
      j["action"] = "pass";
    } else {
      const quant::Measured& m = it->second->measured;
      j["action"] = "quantize";
      j["scheme"] = e.scheme;
      j["device"] = device_of(*it->second);
      j["bytes"] = m.bytes;
      j["bpw"] = m.bpw;
      j["rel_rmse"] = cli::json_number(m.stats.rel_rmse);
      j["sqnr_db"] = cli::json_number(m.stats.sqnr_db);
      j["max_abs"] = cli::json_number(m.stats.max_abs);
      j["clipped_share"] = m.stats.clipped_share;
      j["weighted_sse"] = cli::json_number(m.stats.weighted_sse);
      j["params"] = m.q.params;
    }
    tensors.push_back(std::move(j));
  }
  json doc = {{"input", args.input},
              {"output", args.dry_run ? json(nullptr) : json(args.output)},
              {"mode", args.budget ? "budget" : !args.size.empty() ? "size" : "scheme"},
              {"tensors", std::move(tensors)},
              {"totals",
               {{"quantized", results.size()},
                {"passed", plan.size() - results.size()},
                {"weights", t.weights},
                {"bytes", t.bytes},
                {"bpw", t.bpw()},
                {"sqnr_db", cli::json_number(t.sqnr_db())},
                {"sqnr_db_energy_weighted", cli::json_number(t.sqnr_db())},
                {"sqnr_db_median", cli::json_number(t.median_db)},
                {"sqnr_db_element_weighted", cli::json_number(t.element_db)},
                {"sqnr_db_worst", cli::json_number(t.worst_db)},
                {"worst_tensor", results.empty() ? json(nullptr) : json(t.worst)},
                {"weighted_sse", cli::json_number(t.weighted_sse)}}},
              {"weights_by_device", weights_by_device(results)},
              {"output_bytes", out_bytes},
              {"output_sha256", sha256 ? json(*sha256) : json(nullptr)}};
  if (args.budget) doc["budget_bpw"] = *args.budget;
  if (!args.size.empty()) doc["size"] = args.size;
  return doc;
}

}  // namespace

void report_quantize(const cli::Tool& tool, const QuantArgs& args, const std::vector<PlanEntry>& plan,
                     const std::vector<Result>& results, const std::optional<std::string>& sha256,
                     uint64_t out_bytes) {
  const cli::CommonOptions& common = tool.options();
  Totals t = totals_of(results);
  if (common.text_report()) {
    std::string text = text_report(plan, results, t, sha256, args, out_bytes);
    if (args.dry_run || !cli::is_std_stream(args.output)) {
      cli::write_stdout(text);
    } else if (!common.quiet) {
      std::fputs(text.c_str(), stderr);
    }
  }
  if (common.json) cli::write_json(json_report(args, plan, results, t, sha256, out_bytes), *common.json);
}

}  // namespace tk::tquant
