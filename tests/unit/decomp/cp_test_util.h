// Planted CP models and the factor match score for the CP tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "tk/decomp/decomp.h"

namespace tk::test {

struct PlantedCp {
  std::vector<int64_t> shape;
  int64_t rank = 0;
  std::vector<std::vector<double>> factors;  // I_n x R, row-major
  std::vector<double> data;                  // the dense tensor, row-major
};

// A rank-R tensor with N(0,1) factors (uniform(0.1, 1) when nonneg).
inline PlantedCp planted_cp(std::vector<int64_t> shape, int64_t rank, uint32_t seed, bool nonneg = false) {
  PlantedCp p;
  p.shape = shape;
  p.rank = rank;
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.1, 1.0);
  for (int64_t dim : shape) {
    std::vector<double> f(static_cast<size_t>(dim * rank));
    for (double& v : f) v = nonneg ? uniform(gen) : normal(gen);
    p.factors.push_back(std::move(f));
  }
  int64_t size = 1;
  for (int64_t dim : shape) size *= dim;
  p.data.assign(static_cast<size_t>(size), 0.0);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < size; ++e) {
    double sum = 0;
    for (int64_t r = 0; r < rank; ++r) {
      double prod = 1;
      for (size_t n = 0; n < shape.size(); ++n) prod *= p.factors[n][idx[n] * rank + r];
      sum += prod;
    }
    p.data[e] = sum;
    for (int n = static_cast<int>(shape.size()) - 1; n >= 0; --n) {
      if (++idx[n] < shape[n]) break;
      idx[n] = 0;
    }
  }
  return p;
}

// Factor match (congruence) score as in Tensor Toolbox's `score` and TensorLy's
// congruence_coefficient: the mean over components, under the best matching of
// components, of the product over modes of |cosine| between planted and found columns.
inline double factor_match_score(const std::vector<std::vector<double>>& planted,
                                 const std::vector<std::vector<double>>& found, int64_t rank_planted,
                                 int64_t rank_found) {
  auto column_cos = [](const std::vector<double>& a, int64_t ra, int64_t ca, const std::vector<double>& b, int64_t rb,
                       int64_t cb) {
    const int64_t rows = static_cast<int64_t>(a.size()) / ra;
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < rows; ++i) {
      ab += a[i * ra + ca] * b[i * rb + cb];
      aa += a[i * ra + ca] * a[i * ra + ca];
      bb += b[i * rb + cb] * b[i * rb + cb];
    }
    return std::abs(ab) / std::sqrt(aa * bb);
  };
  std::vector<double> congruence(static_cast<size_t>(rank_planted * rank_found), 1.0);
  for (size_t n = 0; n < planted.size(); ++n)
    for (int64_t p = 0; p < rank_planted; ++p)
      for (int64_t f = 0; f < rank_found; ++f)
        congruence[p * rank_found + f] *= column_cos(planted[n], rank_planted, p, found[n], rank_found, f);
  std::vector<int64_t> perm(static_cast<size_t>(rank_found));
  std::iota(perm.begin(), perm.end(), 0);
  double best = 0;
  do {  // ranks in the tests are small: try every matching
    double s = 0;
    for (int64_t p = 0; p < rank_planted; ++p) s += congruence[p * rank_found + perm[p]];
    best = std::max(best, s / static_cast<double>(rank_planted));
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

// Options for comparing runs at the same iteration count: rank 3, the given start and
// nonnegativity, stopped after 6 iterations before converging (two restarts for random).
inline decomp::CpOptions fixed_iteration_options(decomp::CpInit init, bool nonneg, uint64_t seed) {
  decomp::CpOptions o;
  o.rank = 3;
  o.init = init;
  o.nonneg = nonneg;
  o.seed = seed;
  o.max_iters = 6;
  o.tol = 1e-14;
  o.restarts = init == decomp::CpInit::kRandom ? 2 : 1;
  return o;
}

}  // namespace tk::test
