// Pieces every area uses: metrics of a result, values of an input, parameters, scratch
// directories, and the area table.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "tbench.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"

namespace tk::tbench {

void Result::set(const std::string& name, double value, const char* unit, bench::Better better) {
  Metric m;
  m.value = value;
  m.unit = unit;
  m.better = better;
  metrics.emplace_back(name, m);
}

void Result::set_rate(const std::string& name, const bench::Measurement& m, uint64_t bytes, double scale,
                      const char* unit) {
  auto rate = [&](double seconds) {
    return seconds > 0 ? static_cast<double>(bytes) / seconds / scale : std::numeric_limits<double>::quiet_NaN();
  };
  Metric metric;
  metric.value = rate(m.summary.median);
  metric.min = rate(m.summary.max);  // the slowest run gives the lowest rate
  metric.max = rate(m.summary.min);
  metric.runs = m.summary.runs;
  metric.timed = true;
  metric.unit = unit;
  metric.better = bench::Better::kHigher;
  metrics.emplace_back(name, metric);
}

void Result::set_time(const std::string& name, const bench::Measurement& m, double scale, const char* unit) {
  Metric metric;
  metric.value = m.summary.median * scale;
  metric.min = m.summary.min * scale;
  metric.max = m.summary.max * scale;
  metric.runs = m.summary.runs;
  metric.timed = true;
  metric.unit = unit;
  metric.better = bench::Better::kLower;
  metrics.emplace_back(name, metric);
}

const Metric* Result::find(const std::string& name) const {
  for (const auto& [n, m] : metrics)
    if (n == name) return &m;
  return nullptr;
}

std::vector<float> values_f32(const Tensor& t) {
  std::vector<float> out(t.numel());
  convert_to_f32(t.dtype(), t.data(), 0, t.numel(), out.data());
  return out;
}

std::vector<double> values_f64(const Tensor& t) {
  std::vector<double> out(t.numel());
  convert_to_f64(t.dtype(), t.data(), 0, t.numel(), out.data());
  return out;
}

double param_number(const Cell& cell, const std::string& name) {
  auto it = cell.params.find(name);
  if (it == cell.params.end()) throw internal_error("parameter '" + name + "' not set for " + cell.method);
  try {
    size_t used = 0;
    double v = std::stod(it->second, &used);
    if (used == it->second.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw usage_error("parameter " + name + "=" + it->second + " is not a number");
}

std::string make_scratch_dir(const std::string& dir, const std::string& area) {
  std::string base = dir;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp && *tmp ? tmp : "/tmp";
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(base, ec)) throw io_error("not a directory", base);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string path = base + "/tbench-" + area + "-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
    if (std::filesystem::create_directory(path, ec)) return path;
    if (ec) throw io_error("failed to create a scratch directory: " + ec.message(), path);
  }
  throw io_error("failed to create a scratch directory", base);
}

void set_error_metrics(Result& r, const float* x, const float* y, uint64_t n) {
  double signal = 0, noise = 0, max_abs = 0;
  for (uint64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(x[i]) - y[i];
    signal += static_cast<double>(x[i]) * x[i];
    noise += d * d;
    max_abs = std::max(max_abs, std::abs(d));
  }
  // An exact result has an infinite SQNR; JSON carries it as null (docs/TBENCH.md).
  double sqnr = noise > 0 ? 10 * std::log10(signal / noise) : std::numeric_limits<double>::infinity();
  r.set("sqnr_db", sqnr, "dB", bench::Better::kHigher);
  r.set("rel_rmse", signal > 0 ? std::sqrt(noise / signal) : 0, "1", bench::Better::kLower);
  r.set("max_abs_error", max_abs, "1", bench::Better::kLower);
}

const Area& find_area(const std::string& name) {
  static const std::vector<Area> areas = {quant_area(), compress_area(), decomp_area(), io_area(), ckpt_area()};
  for (const auto& a : areas)
    if (a.name == name) return a;
  throw usage_error("unknown area '" + name + "' (valid: quant, compress, decomp, io, ckpt)");
}

}  // namespace tk::tbench
