// Masked CP-ALS: weighted least squares with weight 0 on missing entries, solved row by
// row. For row i of mode n the observed entries give the rows z (Khatri-Rao rows of the
// other factors) of a small least-squares problem; its normal equations
// (Z^T Z + l2 I) a_i = Z^T x are formed by SYRK/GEMV and solved exactly (or by HALS
// coordinate steps under --nonneg). This is the exact weighted-ALS step, not EM
// imputation, and the residual over observed entries falls out of the last mode's rows:
// ||x - Z a||^2 = x^T x - 2 a^T Z^T x + a^T Z^T Z a.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "tk/core/error.h"
#include "tk/decomp/cp_internal.h"
#include "tk/linalg/blas.h"

namespace tk::decomp::cp_detail {
namespace {

using linalg::Op;

int64_t product(const std::vector<int64_t>& shape, int first, int last) {
  int64_t p = 1;
  for (int k = first; k < last; ++k) p *= shape[k];
  return p;
}

template <typename T> class MaskedProblem : public CpProblem<T> {
 public:
  MaskedProblem(const DenseView<T>& x, const CpOptions& options)
      : x_(x.data), mask_(options.mask), shape_(x.shape), rank_(options.rank), l2_(options.l2),
        nonneg_(options.nonneg) {}

  void update(int mode, CpState<T>& s) override {
    const int order = static_cast<int>(shape_.size());
    const int64_t dim = shape_[mode];
    const int64_t before = product(shape_, 0, mode), after = product(shape_, mode + 1, order);
    const std::vector<T> kb = khatri_rao(s.a, shape_, 0, mode, rank_);
    const std::vector<T> kc = khatri_rao(s.a, shape_, mode + 1, order, rank_);
    std::vector<double> row_residual(static_cast<size_t>(dim));
    std::vector<T>& a = s.a[mode];
    const int64_t work = before * dim * after * rank_ * rank_;
#pragma omp parallel if (work > (int64_t{1} << 20))
    {
      std::vector<T> z, xv, g(static_cast<size_t>(rank_ * rank_)), rhs(static_cast<size_t>(rank_));
      z.reserve(static_cast<size_t>(before * after * rank_));
      xv.reserve(static_cast<size_t>(before * after));
#pragma omp for schedule(static)
      for (int64_t i = 0; i < dim; ++i) {
        z.clear();
        xv.clear();
        for (int64_t b = 0; b < before; ++b) {
          const int64_t base = (b * dim + i) * after;
          for (int64_t c = 0; c < after; ++c) {
            if (!mask_[base + c]) continue;
            xv.push_back(x_[base + c]);
            for (int64_t r = 0; r < rank_; ++r) z.push_back(kb[b * rank_ + r] * kc[c * rank_ + r]);
          }
        }
        T* row = a.data() + i * rank_;
        row_residual[i] = solve_row(static_cast<int64_t>(xv.size()), z, xv, g, rhs, s.lambda, row);
      }
    }
    if (mode == order - 1) {
      residual_ = 0;
      for (double v : row_residual) residual_ += v;  // in row order: thread-count independent
    }
  }

  double residual_sq(const CpState<T>&) override { return std::max(0.0, residual_); }

 private:
  // Solve one row (count observed entries, their Khatri-Rao rows z and values xv); the
  // row holds the current unit-norm factor row on entry. Returns its squared residual.
  double solve_row(int64_t count, const std::vector<T>& z, const std::vector<T>& xv, std::vector<T>& g,
                   std::vector<T>& rhs, const std::vector<double>& lambda, T* row) const {
    double xx = 0;
    for (T v : xv) xx += static_cast<double>(v) * v;
    if (count == 0) {
      std::fill(row, row + rank_, T(0));
      return 0;
    }
    linalg::syrk(Op::kTrans, rank_, count, T(1), z.data(), rank_, T(0), g.data(), rank_);
    linalg::gemv(Op::kTrans, count, rank_, T(1), z.data(), rank_, xv.data(), T(0), rhs.data());
    std::vector<T> gl = g;
    for (int64_t r = 0; r < rank_; ++r) gl[r * rank_ + r] += static_cast<T>(l2_);
    if (nonneg_) {
      for (int64_t r = 0; r < rank_; ++r) row[r] = std::max(T(0), static_cast<T>(row[r] * lambda[r]));
      constexpr int kSweeps = 5;
      hals_update(1, rank_, rhs.data(), gl.data(), row, kSweeps);
    } else {
      std::copy(rhs.begin(), rhs.end(), row);
      linalg::solve_spd_right(rank_, gl.data(), 1, row);
    }
    double a_rhs = 0, a_g_a = 0;
    for (int64_t r = 0; r < rank_; ++r) {
      a_rhs += static_cast<double>(row[r]) * rhs[r];
      double gr = 0;
      for (int64_t q = 0; q < rank_; ++q) gr += static_cast<double>(g[r * rank_ + q]) * row[q];
      a_g_a += row[r] * gr;
    }
    return xx - 2 * a_rhs + a_g_a;
  }

  const T* x_;
  const uint8_t* mask_;
  std::vector<int64_t> shape_;
  int64_t rank_;
  double l2_;
  bool nonneg_;
  double residual_ = 0;
};

// Gram initialisation on the observed entries: a temporary copy with the missing ones set
// to 0 (masked data may hold NaN there), released before the iterations start.
template <typename T> Factors<T> masked_gram_init(const DenseView<T>& x, const CpOptions& o) {
  const int64_t size = product(x.shape, 0, static_cast<int>(x.shape.size()));
  std::vector<T> filled(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) filled[i] = o.mask[i] ? x.data[i] : T(0);
  return gram_init(filled.data(), x.shape, o);
}

}  // namespace

template <typename T> CpResult cp_als_masked(const DenseView<T>& x, const CpOptions& o, double norm_sq) {
  // The row solves call BLAS/LAPACK inside OpenMP loops, and every other BLAS call here
  // is R x R: one BLAS thread for the whole run.
  linalg::SerialBlas serial_blas;
  auto make_problem = [&]() -> std::unique_ptr<CpProblem<T>> { return std::make_unique<MaskedProblem<T>>(x, o); };
  auto init = [&](int restart) {
    Factors<T> a = initial_factors<T>(x.shape, o, restart);
    return a.empty() ? masked_gram_init(x, o) : a;
  };
  return run_cp_als<T>(x.shape, o, norm_sq, make_problem, init);
}

template CpResult cp_als_masked<float>(const DenseView<float>&, const CpOptions&, double);
template CpResult cp_als_masked<double>(const DenseView<double>&, const CpOptions&, double);

}  // namespace tk::decomp::cp_detail
