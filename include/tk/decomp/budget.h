// Storage budgets: choose the ranks and the dtype of the stored factors that minimise
// the error of a decomposition within a number of bytes ("rank compensation": a
// narrower dtype leaves room for higher ranks, which can more than repay its rounding).
//
// The search, per dtype (f32, bf16, f16 by default): the largest model that fits, found
// by bisection on the tolerance for Tucker and TT (ranks grow as the tolerance shrinks;
// bf16 and f16 share the search, having the same width) and directly for CP (its size is
// linear in the rank). Each candidate's parts are rounded to the dtype and its error is
// measured against the data by reconstruction; the smallest error wins.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "tk/decomp/format.h"

namespace tk::decomp {

struct BudgetProblem {
  Method method = Method::kTucker;
  // Tucker / TT: the decomposition at a tolerance in (0, 1). CP: at a rank >= 1.
  std::function<Decomposition(double tol)> at_tol;
  std::function<Decomposition(int rank)> at_rank;
  int64_t cp_elements_per_rank = 0;  // CP: 1 + sum of the mode sizes
  int max_rank = 0;                  // CP: the largest rank tried
  // Relative error of a decomposition (parts already rounded) against the data.
  std::function<double(const Decomposition&)> error_of;
};

struct BudgetCandidate {
  DType dtype = DType::kF32;
  std::vector<int64_t> ranks;
  uint64_t bytes = 0;
  double rel_error = 0;  // after rounding the parts to dtype
};

struct BudgetChoice {
  Decomposition model;                     // the winner, parts rounded, factor_dtype set
  std::vector<BudgetCandidate> candidates; // one per dtype that fits at all
  int decompositions = 0;                  // how many models the search computed
};

// Throws kUsage when not even the smallest model (all ranks 1) fits in `budget_bytes`.
BudgetChoice budget_search(const BudgetProblem& problem, uint64_t budget_bytes,
                           const std::vector<DType>& dtypes = {DType::kF32, DType::kBF16, DType::kF16});

// ||X - reconstruct(d)|| / ||X||, the model reshaped to x's shape. Where `mask` (one
// byte per element, may be null) is 0, the entry counts in neither norm.
double reconstruction_error(const DenseView<double>& x, const Decomposition& d, const uint8_t* mask = nullptr);
double reconstruction_error(const DenseView<float>& x, const Decomposition& d, const uint8_t* mask = nullptr);
// The two sums behind it, ||X - X^||^2 and ||X||^2, for a tensor whose parts (slabs held
// by different processes, each with its slab of the model) are added up.
struct ErrorSums {
  double diff = 0, norm = 0;
  double relative() const { return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff); }
};
ErrorSums reconstruction_sums(const DenseView<double>& x, const Decomposition& d, const uint8_t* mask = nullptr);
ErrorSums reconstruction_sums(const DenseView<float>& x, const Decomposition& d, const uint8_t* mask = nullptr);
// The same for a CP model `d` of sparse coordinates, from inner products (O(nnz R) plus
// the factors' Gram matrices; never densified). kInvalidInput when d is not CP.
double reconstruction_error(const io::SparseTensor& x, const Decomposition& d);

}  // namespace tk::decomp
