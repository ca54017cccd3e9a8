// Quantize one tensor, restore it and measure the error: what the report shows and
// what the budget solver weighs.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tk/quant/scheme.h"

namespace tk::quant {

struct Measured {
  Quantized q;
  ErrorStats stats;
  uint64_t bytes = 0;  // all parts
  double bpw = 0;      // bytes * 8 / elements
  double signal = 0;   // sum of x^2, for the totals' SQNR
  // dtype and shape of every part, kept when the parts are dropped.
  std::map<std::string, std::pair<DType, Shape>> part_infos;
};

// Quantize under the scheme's best view (tk/quant/view.h). `keep_parts` false drops
// the parts after measuring (budget candidates, or results written later).
Measured quantize_measure(const Scheme& scheme, const std::vector<float>& x, const Shape& shape,
                          const QuantOptions& options, bool keep_parts);

// A candidate's cost and error on one tensor, for the budget: the exact stored bytes,
// and the weighted squared error measured on every row (`exact`) or estimated from a
// systematic sample of the view's rows, with the estimate's standard error.
struct Estimate {
  uint64_t bytes = 0;
  double error = 0;
  double se = 0;
  // Where the scheme fits something to the whole tensor (a codebook, a tensor scale),
  // a sample's fit differs from the tensor's: the estimate may be off by up to this
  // (kBiasShare of the estimate; up to 5% seen on 384 x 384 to 11008 x 4096 matrices)
  // besides its sampling error.
  double bias = 0;
  bool exact = true;
  // For paired comparisons: the view and sampling share, and the errors of the evenly
  // spaced sampled rows.
  int64_t view = 0, share = 0;
  std::vector<double> rows;
};
inline constexpr double kBiasShare = 0.05;

// Rows sampled from a view of R rows: R / share (kSampleShare at first, a quarter of it
// at each refinement), at least kSampleMinRows; a view with fewer than 4x that many
// rows is measured whole.
inline constexpr int64_t kSampleShare = 128;
inline constexpr int64_t kSampleMinRows = 32;

// The rows of a view to estimate errors on: two strata, the k/4 rows of largest
// magnitude (outlier rows carry much of the error and a thin sample misses them), and k
// rows evenly spaced through the others (rows (j + 1/2) R' / k), with each row's
// (importance-weighted) energy. Empty `chosen` when the view has fewer than 4k rows.
struct RowSample {
  int64_t view = 0, share = 0, rows = 0, top = 0, others = 0;
  std::vector<int64_t> chosen;     // top rows, then the evenly spaced ones
  std::vector<float> picked;       // their values, chosen.size() x view
  std::vector<double> energy;      // of each chosen row
  double rest_energy = 0;          // of all rows outside the top stratum
  std::vector<float> importance;   // repeated along the view's columns, when given
};
// How many evenly spaced rows sample_rows takes from R rows at `share` (0: the view is
// measured whole). Shares that give the same count give the same sample.
int64_t sample_rows_taken(int64_t rows, int64_t share);
RowSample sample_rows(const std::vector<float>& x, int64_t view, int64_t cols, const float* importance,
                      int64_t share = kSampleShare);
// Free the sample's values (picked) once its estimates are made, keeping what paired
// comparisons and a later refinement need. (`picked = {}` keeps the capacity: a budget
// over a model kept every tensor's sampled rows.)
inline void release_values(RowSample& s) { std::vector<float>().swap(s.picked); }

// kConfidence standard errors of the difference of two estimates made on the same
// sample (the same rows: their errors move together, so the difference is known far
// better than either), from the spread of the rows' differences about the ratio
// estimate; infinity when the two were not made on the same sample.
inline constexpr double kConfidence = 3;
double paired_spread(const Estimate& a, const Estimate& b, const RowSample& sample);

// The error of `scheme` on `x` under the sample's view: the top stratum's error plus the
// ratio estimate of the rest (sampled error / sampled energy x the rest's energy), with
// its standard error (finite-population correction). Exact (a full measurement) without
// a sample, or when the sample is empty; then, when `whole` is given, the measurement
// with its parts is moved there (what quantize_measure gives for these options).
Estimate estimate_error(const Scheme& scheme, const std::vector<float>& x, const Shape& shape,
                        const QuantOptions& options, const RowSample* sample, Measured* whole = nullptr);

}  // namespace tk::quant
