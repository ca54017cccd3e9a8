// What the CPU Tucker (tucker.cpp) and the GPU one (cuda/tucker.cpp) share, so that both
// follow one set of rules: the option checks, the order of the modes, the rank a
// tolerance allows at each ST-HOSVD step, the retries that make --tol hold, the error
// of a model and HOOI's rule for keeping a sweep. The file comment of tucker.cpp says
// why each rule is what it is.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "tk/decomp/decomp.h"

namespace tk::decomp::tucker_rules {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A model in the compute precision: factors I_n x r_n row-major, core r_1 x ... x r_d.
template <typename T> struct Model {
  std::vector<int64_t> ranks;
  std::vector<std::vector<T>> factors;
  std::vector<T> core;
};

// kUsage for options that cannot apply to a tensor of `shape`.
void validate_options(const std::vector<int64_t>& shape, const TuckerOptions& options);

// The order the modes are projected in; `ranks` empty: by size alone.
std::vector<size_t> projection_order(const std::vector<int64_t>& shape, const std::vector<int64_t>& ranks);

// The rank of ST-HOSVD's step `step` of `d` under a tolerance: the smallest whose
// discarded eigenvalue mass fits this step's share of tol^2 * norm2 (what the earlier
// steps left unused passes on). `discarded` (the mass so far) grows by this step's.
int64_t tolerance_rank(const std::vector<double>& eigenvalues, double tol, double norm2, size_t step, size_t d,
                       double& discarded);

// sqrt(norm2 - ||core||^2) / sqrt(norm2): the error of a model with orthonormal factors
// whose core is the projection of X (0 for a zero tensor).
double core_relative_error(double norm2, const std::vector<double>& core);
double core_relative_error(double norm2, const std::vector<float>& core);

// The error of a model of the whole tensor x: core_relative_error, or, where that is too
// small for the subtraction to hold its digits, measured on a reconstruction.
double measured_relative_error(const DenseView<double>& x, const Model<double>& model, double norm2);
double measured_relative_error(const DenseView<float>& x, const Model<float>& model, double norm2);

// ST-HOSVD under options.tol, kept within it: `sthosvd(options, tol)` runs one pass and
// `error_of(model)` measures it. When the rank rule's budget, trusted to the eigenvalues'
// rounding, overshoots, the pass is rerun with a hundred times smaller budget and then at
// full ranks. Fixed ranks: one pass. `error` receives the kept model's error.
template <typename T, typename Sthosvd, typename ErrorOf>
Model<T> sthosvd_within_tol(const TuckerOptions& options, const std::vector<int64_t>& shape, Sthosvd&& sthosvd,
                            ErrorOf&& error_of, double& error) {
  Model<T> model = sthosvd(options, options.tol);
  error = error_of(model);
  for (int attempt = 1; options.ranks.empty() && error > options.tol; ++attempt) {
    TuckerOptions retry = options;
    if (attempt == 2) retry.ranks = shape;
    model = sthosvd(retry, attempt == 2 ? 0.0 : options.tol / 100);
    error = error_of(model);
    if (attempt == 2) break;
  }
  return model;
}

// HOOI sweeps from an ST-HOSVD model: `sweep(next)` replaces next's factors (and its
// core) by one sweep's. The fit never decreases in exact arithmetic; a sweep that lowers
// it (rounding) is not kept. Returns the sweeps run.
template <typename T, typename Sweep>
int hooi_sweeps(const TuckerOptions& options, double norm2, Clock::time_point start, Model<T>& model, Sweep&& sweep) {
  double fit = 1 - core_relative_error(norm2, model.core);
  int sweeps = 0;
  for (int it = 1; it <= options.max_iters; ++it) {
    Model<T> next = model;
    sweep(next);
    const double next_fit = 1 - core_relative_error(norm2, next.core);
    sweeps = it;
    if (next_fit < fit) break;
    const double change = next_fit - fit;
    model = std::move(next);
    fit = next_fit;
    if (options.on_iteration) options.on_iteration({it, fit, change, seconds_since(start), 0});
    if (change < options.hooi_tol) break;
  }
  return sweeps;
}

// The result of a model in the compute precision. An f64 model's parts are moved, not
// copied: a tall mode's factor can be as large as the tensor.
template <typename T>
TuckerResult to_result(Model<T>&& model, double error, int iterations, Clock::time_point start) {
  TuckerResult result;
  result.ranks = model.ranks;
  if constexpr (std::is_same_v<T, double>) {
    result.core = std::move(model.core);
    result.factors = std::move(model.factors);
  } else {
    result.core.assign(model.core.begin(), model.core.end());
    for (auto& f : model.factors) {
      result.factors.emplace_back(f.begin(), f.end());
      std::vector<T>().swap(f);
    }
  }
  result.rel_error = error;
  result.iterations = iterations;
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace tk::decomp::tucker_rules
