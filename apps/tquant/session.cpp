#include "session.h"

#include <cmath>

#include <fmt/format.h>

#include "cli/number_format.h"
#include "measure.h"
#include "tk/core/error.h"
#include "tk/quant/layout.h"

namespace tk::tquant {

Source::Source(std::unique_ptr<io::TensorReader> reader) : reader_(std::move(reader)) {
  if (reader_->random_access()) return;
  for (size_t i = 0; i < reader_->tensors().size(); ++i) held_.push_back(reader_->read(i));
}

Tensor Source::read(size_t index) { return held_.empty() ? reader_->read(index) : held_[index]; }

std::vector<float> Source::read_f32(size_t index, bool* finite) {
  Tensor t = read(index);
  std::vector<float> x(t.numel());
  convert_to_f32(t.dtype(), t.data(), 0, t.numel(), x.data());
  bool ok = true;
  for (float v : x) ok &= std::isfinite(v);
  *finite = ok;
  return x;
}

const quant::Scheme& Session::scheme(const std::string& spec) {
  auto& s = schemes[spec];
  if (!s) s = quant::make_scheme(spec);
  return *s;
}

quant::QuantOptions Session::options_for(const PlanEntry& e) const {
  quant::QuantOptions o = base;
  int64_t cols = e.info.shape.empty() ? 1 : e.info.shape.back();
  o.importance = quant::importance_for(importance, e.info.name, cols);
  return o;
}

bool Session::accept_values(PlanEntry& e, bool finite) {
  if (finite) return true;
  if (!args.allow_nonfinite) {
    throw invalid_input("tensor holds NaN or Inf (--allow-nonfinite keeps such tensors unquantized)",
                        "tensor '" + e.info.name + "'");
  }
  tool.warning(fmt::format("{}: holds NaN or Inf, passed through unquantized", e.info.name));
  e.quantize = false;
  e.reason = "NaN or Inf (--allow-nonfinite)";
  return false;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> candidate_list(const QuantArgs& args) {
  std::vector<std::string> c = args.candidates.empty() ? default_candidates() : split_list(args.candidates);
  if (c.empty()) throw usage_error("no candidate schemes", "--candidates");
  return c;
}

namespace {

double weighted_signal(const std::vector<float>& x, int64_t cols, const float* importance) {
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (importance ? importance[i % cols] : 1.0) * x[i] * x[i];
  return s;
}

}  // namespace

CandidateTable measure_candidates(Session& s, Source& src, std::vector<PlanEntry>& plan,
                                  const std::vector<std::string>& candidates, cli::Progress& progress) {
  for (const auto& c : candidates) s.scheme(c);
  CandidateTable table;
  for (size_t k = 0; k < plan.size(); ++k) {
    PlanEntry& e = plan[k];
    progress.show(fmt::format("measuring {}/{}: {}", k + 1, plan.size(), e.info.name));
    bool finite = true;
    std::vector<float> x;
    if (e.quantize) x = src.read_f32(e.index, &finite);
    if (!e.quantize || !s.accept_values(e, finite)) {
      table.pass_bytes += e.info.nbytes;
      continue;
    }
    quant::QuantOptions o = s.options_for(e);
    int64_t cols = e.info.shape.empty() ? 1 : e.info.shape.back();
    table.weights += x.size();
    double signal = weighted_signal(x, cols, o.importance);
    if (!e.budgeted) {
      Measured m = quantize_measure(s.scheme(e.scheme), x, e.info.shape, o, false);
      table.fixed_bytes += m.bytes;
      table.fixed_error += m.stats.weighted_sse;
      table.fixed_signal += signal;
      continue;
    }
    quant::BudgetItem item;
    std::vector<std::string> usable;
    for (const std::string& c : candidates) {
      try {
        Measured m = quantize_measure(s.scheme(c), x, e.info.shape, o, false);
        item.bytes.push_back(m.bytes);
        item.error.push_back(m.stats.weighted_sse);
        usable.push_back(c);
      } catch (const Error& err) {
        if (err.kind() != ErrorKind::kUsage) throw;
      }
    }
    if (usable.empty()) throw usage_error("no candidate scheme applies", "tensor '" + e.info.name + "'");
    table.items.push_back(std::move(item));
    table.entries.push_back(&e);
    table.usable.push_back(std::move(usable));
    table.signal.push_back(signal);
  }
  return table;
}

void allocate(Session& s, Source& src, std::vector<PlanEntry>& plan, cli::Progress& progress) {
  CandidateTable t = measure_candidates(s, src, plan, candidate_list(s.args), progress);
  if (t.items.empty()) return;
  const bool by_bpw = s.args.budget.has_value();
  uint64_t capacity = by_bpw ? static_cast<uint64_t>(std::floor(*s.args.budget * static_cast<double>(t.weights) / 8))
                             : cli::bytes_parse(s.args.size, "--size");
  uint64_t reserved = t.fixed_bytes + (by_bpw ? 0 : t.pass_bytes);
  uint64_t min_bytes = quant::budget_min_bytes(t.items) + reserved;
  if (capacity < min_bytes) {
    if (by_bpw) {
      throw usage_error(fmt::format("budget {} bpw is below the smallest reachable {:.4f} bpw", *s.args.budget,
                                    static_cast<double>(min_bytes) * 8 / static_cast<double>(t.weights)),
                        "--budget");
    }
    throw usage_error(fmt::format("size {} is below the smallest reachable {} bytes", s.args.size, min_bytes),
                      "--size");
  }
  quant::BudgetResult r = quant::budget_solve(t.items, capacity - reserved);
  for (size_t i = 0; i < t.entries.size(); ++i) t.entries[i]->scheme = t.usable[i][r.choice[i]];
}

}  // namespace tk::tquant
