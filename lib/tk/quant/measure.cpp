#include "tk/quant/measure.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "tk/core/error.h"
#include "tk/quant/view.h"

namespace tk::quant {

namespace {

// Each row's error sums of x (rows x cols) against q's values: computed on the GPU that
// decodes q, where one does, else from the values decoded here.
std::vector<detail::RowSums> rows_measured(const Scheme& scheme, const Quantized& q, const float* x, int64_t rows,
                                           int64_t cols, const float* weights, int64_t block, int device) {
  std::vector<detail::RowSums> sums(static_cast<size_t>(rows));
  if (device >= 0 && measure_view(scheme, q, x, weights, block, device, sums.data())) return sums;
  std::vector<float> y(static_cast<size_t>(rows * cols));
  dequantize_view(scheme, q, y.data(), false, device);
  return row_errors(x, y.data(), rows, cols, weights, block);
}

}  // namespace

Measured quantize_measure(const Scheme& scheme, const std::vector<float>& x, const Shape& shape,
                          const QuantOptions& options, bool keep_parts) {
  Measured m;
  const int64_t view = choose_view_cols(scheme, shape, options);
  m.q = quantize_view(scheme, x.data(), shape, view, options);
  const int64_t rows = view == 0 ? 0 : static_cast<int64_t>(x.size()) / view;
  // Clipping is counted per block of the scheme's group size, else per row.
  int64_t block = 0;
  if (auto it = m.q.params.find("group_size"); it != m.q.params.end()) {
    std::from_chars(it->second.data(), it->second.data() + it->second.size(), block);
  }
  if (block <= 0 || block > view) block = view;
  const int64_t cols = shape.empty() ? 1 : shape.back();
  const std::vector<float> weights =
      options.importance ? repeat_columns(options.importance, cols, view) : std::vector<float>();
  const float* w = weights.empty() ? nullptr : weights.data();
  m.stats = error_stats(rows_measured(scheme, m.q, x.data(), rows, view, w, block, options.device),
                        static_cast<int64_t>(x.size()));
  m.signal = m.stats.signal;
  m.bytes = m.q.stored_bytes();
  m.bpw = x.empty() ? 0 : static_cast<double>(m.bytes) * 8 / static_cast<double>(x.size());
  for (const auto& [suffix, part] : m.q.parts) m.part_infos[suffix] = {part.dtype(), part.shape()};
  if (!keep_parts) m.q.parts.clear();
  return m;
}

double paired_spread(const Estimate& a, const Estimate& b, const RowSample& s) {
  const size_t k = a.rows.size();
  if (a.exact || b.exact || a.view != b.view || a.share != b.share || a.view != s.view || a.share != s.share || k < 2 ||
      b.rows.size() != k) {
    return INFINITY;
  }
  double sum_d = 0, sum_s = 0;
  for (size_t j = 0; j < k; ++j) sum_d += a.rows[j] - b.rows[j], sum_s += s.energy[s.top + j];
  const double ratio = sum_s > 0 ? sum_d / sum_s : 0;
  double d2 = 0;
  for (size_t j = 0; j < k; ++j) {
    const double d = a.rows[j] - b.rows[j] - (sum_s > 0 ? ratio * s.energy[s.top + j] : sum_d / static_cast<double>(k));
    d2 += d * d;
  }
  const double kd = static_cast<double>(k), nd = static_cast<double>(s.others);
  return kConfidence * nd * std::sqrt((1 - kd / nd) * d2 / (kd - 1) / kd);
}

int64_t sample_rows_taken(int64_t rows, int64_t share) {
  const int64_t k = std::max(kSampleMinRows, (rows + share - 1) / share);
  return rows < 4 * k ? 0 : k;
}

RowSample sample_rows(const std::vector<float>& x, int64_t view, int64_t cols, const float* importance,
                      int64_t share) {
  RowSample s;
  s.view = view;
  s.share = share;
  const auto n = static_cast<int64_t>(x.size());
  s.rows = view == 0 ? 0 : n / view;
  const int64_t k = sample_rows_taken(s.rows, share);
  if (k == 0) return s;  // too few rows: measured whole
  if (importance) s.importance = repeat_columns(importance, cols, view);
  // Each row's peak magnitude and (weighted) energy, in one pass.
  std::vector<float> peak(static_cast<size_t>(s.rows));
  std::vector<double> energy(static_cast<size_t>(s.rows));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.rows; ++r) {
    float m = 0;
    double e = 0;
    const float* xr = x.data() + r * view;
    for (int64_t c = 0; c < view; ++c) {
      m = std::max(m, std::fabs(xr[c]));
      e += (importance ? s.importance[c] : 1.0) * static_cast<double>(xr[c]) * xr[c];
    }
    peak[r] = m, energy[r] = e;
  }
  // The top stratum: the rows of largest magnitude (ties to the lower row).
  s.top = k / 4;
  std::vector<int64_t> order(static_cast<size_t>(s.rows));
  for (int64_t r = 0; r < s.rows; ++r) order[r] = r;
  std::partial_sort(order.begin(), order.begin() + s.top, order.end(),
                    [&](int64_t a, int64_t b) { return peak[a] != peak[b] ? peak[a] > peak[b] : a < b; });
  std::vector<char> in_top(static_cast<size_t>(s.rows), 0);
  for (int64_t j = 0; j < s.top; ++j) in_top[order[j]] = 1;
  std::vector<int64_t> rest;
  for (int64_t r = 0; r < s.rows; ++r) {
    if (in_top[r]) continue;
    rest.push_back(r);
    s.rest_energy += energy[r];
  }
  s.others = static_cast<int64_t>(rest.size());
  s.chosen.assign(order.begin(), order.begin() + s.top);
  for (int64_t j = 0; j < k; ++j) s.chosen.push_back(rest[(2 * j + 1) * s.others / (2 * k)]);
  s.picked.resize(s.chosen.size() * static_cast<size_t>(view));
  for (size_t j = 0; j < s.chosen.size(); ++j) {
    std::copy_n(x.data() + s.chosen[j] * view, view, s.picked.data() + j * view);
    s.energy.push_back(energy[s.chosen[j]]);
  }
  return s;
}

Estimate estimate_error(const Scheme& scheme, const std::vector<float>& x, const Shape& shape,
                        const QuantOptions& options, const RowSample* sample, Measured* whole) {
  if (!sample || sample->chosen.empty()) {
    Measured m = quantize_measure(scheme, x, shape, options, whole != nullptr);
    Estimate exact;
    exact.bytes = m.bytes;
    exact.error = m.stats.weighted_sse;
    if (whole) *whole = std::move(m);
    return exact;
  }
  const RowSample& s = *sample;
  Estimate e;
  e.exact = false;
  e.bytes = static_cast<uint64_t>(
      std::llround(scheme.bits_per_weight(s.rows, s.view, options) * static_cast<double>(x.size()) / 8));
  QuantOptions o = options;
  if (options.importance) o.importance = s.importance.data();
  const auto picked_rows = static_cast<int64_t>(s.chosen.size());
  const Quantized q = scheme.quantize(s.picked.data(), Shape{picked_rows, s.view}, o);
  const std::vector<detail::RowSums> sums =
      rows_measured(scheme, q, s.picked.data(), picked_rows, s.view, o.importance, 0, o.device);
  std::vector<double> err(static_cast<size_t>(picked_rows));
  for (int64_t j = 0; j < picked_rows; ++j) err[j] = sums[static_cast<size_t>(j)].weighted;
  // Ratio estimator over the sampled stratum: a row's error follows its energy closely
  // (the schemes scale with the values), so error / energy varies far less between rows
  // than the error does.
  double top_sum = 0, sum_e = 0, sum_s = 0;
  for (int64_t j = 0; j < picked_rows; ++j) {
    if (j < s.top) {
      top_sum += err[j];
    } else {
      sum_e += err[j], sum_s += s.energy[j];
    }
  }
  const int64_t k = picked_rows - s.top;
  const double kd = static_cast<double>(k), nd = static_cast<double>(s.others);
  const double ratio = sum_s > 0 ? sum_e / sum_s : 0;
  double d2 = 0;
  for (int64_t j = s.top; j < picked_rows; ++j) {
    const double d = sum_s > 0 ? err[j] - ratio * s.energy[j] : err[j] - sum_e / kd;
    d2 += d * d;
  }
  e.error = top_sum + (sum_s > 0 ? ratio * s.rest_energy : nd * sum_e / kd);
  e.view = s.view;
  e.share = s.share;
  e.rows.assign(err.begin() + s.top, err.end());
  e.se = nd * std::sqrt((1 - kd / nd) * d2 / (kd - 1) / kd);
  if (!scheme.rows_independent(o)) e.bias = kBiasShare * e.error;
  return e;
}

}  // namespace tk::quant
