#include "tk/quant/allocation.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tk/quant/view.h"

namespace tk::quant {

bool fills_blocks(const Scheme& scheme, const Shape& shape, const QuantOptions& options) {
  const int64_t view = choose_view_cols(scheme, shape, options);
  const uint64_t n = shape_numel(shape);
  const uint64_t stored = padded_values(scheme, view == 0 ? 0 : static_cast<int64_t>(n) / view, view, options);
  return (stored - n) * 16 <= n;
}

int fallback_int_bits(const std::string& spec) {
  if (spec.size() == 3 && spec[0] == 'q' && spec[2] == 'k') return spec[1] - '0';
  if (spec == "nf4" || spec == "mxfp4" || spec == "nvfp4") return 4;
  if (spec.rfind("mxfp6", 0) == 0) return 6;
  if (spec.rfind("mxfp8", 0) == 0 || spec == "mxint8") return 8;
  for (const char* family : {"int", "trellis:", "kmeans:"}) {
    const size_t n = std::strlen(family);
    if (spec.rfind(family, 0) == 0 && spec.size() > n && spec[n] >= '2' && spec[n] <= '8') return spec[n] - '0';
  }
  return 0;
}

namespace {

// How far apart the error estimates of candidates a and b of tensor i may lie while
// the sampling leaves their order open: paired on a shared sample where both were
// estimated on it, else the sum of their own spreads (kConfidence standard errors
// plus the bias allowance).
double margin(const Candidates& t, size_t i, size_t a, size_t b) {
  const Estimate& ea = t.estimates[i][a];
  const Estimate& eb = t.estimates[i][b];
  const double own = kConfidence * (ea.se + eb.se) + ea.bias + eb.bias;
  auto it = t.samples[i].find({ea.view, ea.share});
  if (it == t.samples[i].end()) return own;
  return std::min(own, paired_spread(ea, eb, it->second) + ea.bias + eb.bias);
}

// Keeps tensor i's candidates where keep[j]; returns how many went.
size_t keep_only(Candidates& t, size_t i, const std::vector<char>& keep) {
  BudgetItem& item = t.items[i];
  const size_t n = item.bytes.size();
  size_t kept = 0;
  for (size_t j = 0; j < n; ++j) {
    if (!keep[j]) continue;
    item.bytes[kept] = item.bytes[j];
    item.error[kept] = item.error[j];
    t.usable[i][kept] = t.usable[i][j];
    t.estimates[i][kept] = std::move(t.estimates[i][j]);
    ++kept;
  }
  item.bytes.resize(kept), item.error.resize(kept), t.usable[i].resize(kept), t.estimates[i].resize(kept);
  return n - kept;
}

}  // namespace

double lossless_sqnr_db(DType dtype) {
  int mantissa = 0;
  switch (dtype) {
    case DType::kF16: mantissa = 10; break;
    case DType::kBF16: mantissa = 7; break;
    case DType::kF8E4M3: case DType::kF8E4M3FNUZ: mantissa = 3; break;
    case DType::kF8E5M2: case DType::kF8E5M2FNUZ: mantissa = 2; break;
    default: return 60;
  }
  // Rounding to nearest with a unit roundoff u = 2^-(mantissa+1) leaves a relative
  // noise power of about u^2/3.
  const double floor_db = 6.0206 * (mantissa + 1) + 10 * std::log10(3.0);
  return std::min(60.0, floor_db - 10);
}

std::vector<std::string> allocation_drop_snaps(Candidates& t, size_t i, double signal, uint64_t weights,
                                               DType source) {
  const BudgetItem& item = t.items[i];
  const size_t n = item.bytes.size();
  if (n < 4 || signal <= 0 || weights == 0) return {};
  std::vector<double> sqnr(n), excess(n);
  for (size_t j = 0; j < n; ++j) {
    sqnr[j] = item.error[j] > 0 ? 10 * std::log10(signal / item.error[j]) : 1e9;
    excess[j] = sqnr[j] - 6.0206 * 8 * static_cast<double>(item.bytes[j]) / static_cast<double>(weights);
  }
  std::vector<double> sorted = excess;
  std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.end());
  const double line = sorted[n / 2];
  const double lossless = lossless_sqnr_db(source);
  // A candidate far above the line shows that the tensor sits near a grid (a snap). A
  // lossless one shows it sits on a grid exactly (a quantized model stored as floats):
  // then there is no change to revert, and the others' errors near that grid are
  // quantization noise like any other.
  std::vector<size_t> snaps;
  for (size_t j = 0; j < n; ++j) {
    if (sqnr[j] >= lossless) return {};
    if (excess[j] > line + kSnapMarginDb) snaps.push_back(j);
  }
  if (snaps.empty()) return {};
  // Finer grids that hold the same levels (Q5_1 holds Q4_1's at half its step) land on
  // the same plateau: more bits for less than kSnapPlateauGainDb, still above the line.
  // A scheme that lands on no grid gains about 6 dB a bit and sits near the line.
  std::vector<char> keep(n, 1);
  for (size_t j : snaps) keep[j] = 0;
  for (size_t k = 0; k < n; ++k) {
    for (size_t j : snaps) {
      if (keep[k] && item.bytes[k] > item.bytes[j] && sqnr[k] - sqnr[j] < kSnapPlateauGainDb && excess[k] > line)
        keep[k] = 0;
    }
  }
  if (std::find(keep.begin(), keep.end(), 1) == keep.end()) return {};  // keeps at least one
  std::vector<std::string> dropped;
  for (size_t j = 0; j < n; ++j)
    if (!keep[j]) dropped.push_back(t.usable[i][j]);
  keep_only(t, i, keep);
  return dropped;
}

size_t allocation_drop_dominated(Candidates& t, size_t i) {
  BudgetItem& item = t.items[i];
  const size_t n = item.bytes.size();
  std::vector<char> keep(n, 1);
  for (size_t j = 0; j < n; ++j) {
    for (size_t c = 0; c < n && keep[j]; ++c) {
      if (c == j || !keep[c] || item.bytes[c] > item.bytes[j]) continue;
      // Known exactly (a margin of 0: the same rows, every row's error the same, as Q5_1's
      // on values that sit on Q4_1's grid), no better is beaten when it costs more.
      const double d = item.error[j] - item.error[c], m = margin(t, i, c, j);
      const bool beaten = d > m || (m == 0 && d >= 0 && item.bytes[c] < item.bytes[j]);
      const bool tie_lower = item.bytes[c] == item.bytes[j] && item.error[c] == item.error[j] && c < j;
      if (beaten || tie_lower) keep[j] = 0;
    }
  }
  return keep_only(t, i, keep);
}

std::vector<size_t> allocation_undecided(const Candidates& t, size_t i, int choice) {
  std::vector<size_t> out;
  const auto c = static_cast<size_t>(choice);
  for (size_t j = 0; j < t.items[i].bytes.size(); ++j) {
    if (j == c) continue;
    if (std::fabs(t.items[i].error[j] - t.items[i].error[c]) > margin(t, i, c, j)) continue;
    if (!t.estimates[i][j].exact) out.push_back(j);
    if (!t.estimates[i][c].exact && (out.empty() || out.front() != c)) out.insert(out.begin(), c);
  }
  return out;
}

Estimate allocation_refine(Candidates& t, size_t i, size_t j, const Scheme& scheme, const std::vector<float>& x,
                           const Shape& shape, const QuantOptions& options, Measured* whole) {
  const Estimate& was = t.estimates[i][j];
  const int64_t cols = shape.empty() ? 1 : shape.back();
  const std::pair<int64_t, int64_t> key{was.view, was.share / 4};
  auto it = t.samples[i].find(key);
  // A view so short that the larger share still takes the fewest rows (kSampleMinRows)
  // samples the same rows again: the estimate would be the same, so it is kept, under
  // the new share (which paired comparisons and the next refinement go by).
  const auto from = t.samples[i].find({was.view, was.share});
  if (!was.exact && key.second >= 4 && from != t.samples[i].end() && from->second.rows > 0 &&
      sample_rows_taken(from->second.rows, was.share) == sample_rows_taken(from->second.rows, key.second)) {
    if (it == t.samples[i].end()) {
      RowSample same = from->second;
      same.share = key.second;
      release_values(same);
      t.samples[i].emplace(key, std::move(same));
    }
    Estimate again = was;
    again.share = key.second;
    t.estimates[i][j] = again;
    return again;
  }
  if (it == t.samples[i].end() || it->second.picked.empty()) {
    it = t.samples[i].insert_or_assign(key, sample_rows(x, was.view, cols, options.importance, key.second)).first;
  }
  const Estimate again = estimate_error(scheme, x, shape, options, key.second >= 4 ? &it->second : nullptr, whole);
  t.items[i].error[j] = again.error;
  t.estimates[i][j] = again;
  return again;
}

}  // namespace tk::quant
