// The storage-budget search (budget.h).
#include "tk/decomp/budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "tk/core/error.h"
#include "tk/linalg/blas.h"

namespace tk::decomp {

namespace {

// Tolerances searched for Tucker and TT: from nearly nothing kept to nearly exact.
constexpr double kLooseTol = 0.999;
constexpr double kTightTol = 1e-9;
constexpr int kBisectionSteps = 14;

uint64_t elements(const Decomposition& d) {
  uint64_t n = 0;
  for (const auto& p : d.parts) n += shape_numel(p.shape);
  return n;
}

class Searcher {
 public:
  explicit Searcher(const BudgetProblem& p) : p_(p) {}

  // The largest model with at most `limit` stored elements, if any fits.
  std::optional<Decomposition> largest_within(uint64_t limit) {
    if (p_.method == Method::kCp) {
      const int64_t rank = std::min<int64_t>(p_.max_rank, static_cast<int64_t>(limit) / p_.cp_elements_per_rank);
      if (rank < 1) return std::nullopt;
      return at_rank(static_cast<int>(rank));
    }
    const Decomposition& loose = at_tol(kLooseTol);
    if (elements(loose) > limit) return std::nullopt;
    if (elements(at_tol(kTightTol)) <= limit) return at_tol(kTightTol);
    // Bisection on log(tol): `fits` always fits, `over` never does.
    double fits = std::log(kLooseTol), over = std::log(kTightTol);
    for (int step = 0; step < kBisectionSteps; ++step) {
      const double mid = 0.5 * (fits + over);
      (elements(at_tol(std::exp(mid))) <= limit ? fits : over) = mid;
    }
    return at_tol(std::exp(fits));
  }

  int computed() const { return static_cast<int>(by_tol_.size() + by_rank_.size()); }

 private:
  const Decomposition& at_tol(double tol) {
    auto it = by_tol_.find(tol);
    if (it == by_tol_.end()) it = by_tol_.emplace(tol, p_.at_tol(tol)).first;
    return it->second;
  }
  const Decomposition& at_rank(int rank) {
    auto it = by_rank_.find(rank);
    if (it == by_rank_.end()) it = by_rank_.emplace(rank, p_.at_rank(rank)).first;
    return it->second;
  }

  const BudgetProblem& p_;
  std::map<double, Decomposition> by_tol_;
  std::map<int, Decomposition> by_rank_;
};

template <typename T>
ErrorSums sums(const DenseView<T>& x, const Decomposition& d, const uint8_t* mask) {
  std::vector<double> y = reconstruct(d);
  if (y.size() != shape_numel(x.shape)) throw internal_error("reconstruction has the wrong size", d.name);
  ErrorSums s;
  for (size_t i = 0; i < y.size(); ++i) {
    if (mask && !mask[i]) continue;
    const double v = static_cast<double>(x.data[i]);
    s.diff += (v - y[i]) * (v - y[i]);
    s.norm += v * v;
  }
  return s;
}

template <typename T> double relative_error(const DenseView<T>& x, const Decomposition& d, const uint8_t* mask) {
  const ErrorSums s = sums(x, d, mask);
  return s.relative();
}

}  // namespace

BudgetChoice budget_search(const BudgetProblem& problem, uint64_t budget_bytes, const std::vector<DType>& dtypes) {
  Searcher searcher(problem);
  BudgetChoice choice;
  double best = std::numeric_limits<double>::infinity();
  for (DType dtype : dtypes) {
    const uint64_t width = static_cast<uint64_t>(dtype_bits(dtype)) / 8;
    std::optional<Decomposition> model = searcher.largest_within(budget_bytes / width);
    if (!model) continue;
    round_parts(*model, dtype);
    model->factor_dtype = dtype;
    double error = problem.error_of(*model);
    if (!std::isfinite(error)) error = std::numeric_limits<double>::infinity();  // overflow in a narrow dtype
    model->rel_error = error;
    choice.candidates.push_back({dtype, model->ranks, model->stored_bytes(), error});
    if (choice.candidates.size() == 1 || error < best) {
      best = error;
      choice.model = std::move(*model);
    }
  }
  choice.decompositions = searcher.computed();
  if (choice.candidates.empty())
    throw usage_error("the budget of " + std::to_string(budget_bytes) + " bytes cannot hold even a rank-1 model")
        .with_option("decomp.budget");
  return choice;
}

double reconstruction_error(const DenseView<double>& x, const Decomposition& d, const uint8_t* mask) {
  return relative_error(x, d, mask);
}
ErrorSums reconstruction_sums(const DenseView<double>& x, const Decomposition& d, const uint8_t* mask) {
  return sums(x, d, mask);
}
ErrorSums reconstruction_sums(const DenseView<float>& x, const Decomposition& d, const uint8_t* mask) {
  return sums(x, d, mask);
}
double reconstruction_error(const DenseView<float>& x, const Decomposition& d, const uint8_t* mask) {
  return relative_error(x, d, mask);
}

// ||X - M||^2 = ||X||^2 - 2 <X, M> + ||M||^2, with <X, M> over the nonzeros and
// ||M||^2 = lambda^T (A_0^T A_0 * ... * A_{d-1}^T A_{d-1}) lambda (elementwise products).
double reconstruction_error(const io::SparseTensor& x, const Decomposition& d) {
  const CpResult m = to_cp(d);
  const int64_t rank = static_cast<int64_t>(m.lambda.size());
  const int order = x.order();
  std::vector<double> hadamard(static_cast<size_t>(rank * rank), 1.0), gram(hadamard.size());
  for (int n = 0; n < order; ++n) {
    linalg::gemm(linalg::Op::kTrans, linalg::Op::kNoTrans, rank, rank, x.shape[n], 1.0, m.factors[n].data(), rank,
                 m.factors[n].data(), rank, 0.0, gram.data(), rank);
    for (size_t i = 0; i < gram.size(); ++i) hadamard[i] *= gram[i];
  }
  double model_sq = 0;
  for (int64_t r = 0; r < rank; ++r)
    for (int64_t s = 0; s < rank; ++s) model_sq += m.lambda[r] * m.lambda[s] * hadamard[r * rank + s];
  double inner = 0, norm_sq = 0;
  std::vector<double> product(static_cast<size_t>(rank));
  for (int64_t e = 0; e < x.nnz(); ++e) {
    product = m.lambda;
    for (int n = 0; n < order; ++n) {
      const double* row = m.factors[n].data() + x.indices[e * order + n] * rank;
      for (int64_t r = 0; r < rank; ++r) product[r] *= row[r];
    }
    double value = 0;
    for (double p : product) value += p;
    inner += x.values[e] * value;
    norm_sq += x.values[e] * x.values[e];
  }
  const double diff = std::max(0.0, norm_sq - 2 * inner + model_sq);
  return norm_sq > 0 ? std::sqrt(diff / norm_sq) : std::sqrt(diff);
}

}  // namespace tk::decomp
