// Tensor-Train decomposition: TT-SVD (Oseledets 2011) and TT rounding.
//
// TT-SVD walks left to right. The carried matrix C (r_k n_k x rest; X itself at the
// start, never copied) is truncated to its leading left singular subspace Q, Q becomes
// core k and Q^T C is carried on. The subspace comes from the Gram matrix of the smaller
// side with a symmetric eigensolver (syrk + syevd, far cheaper than an SVD of a wide
// matrix): C C^T when r_k n_k <= rest, else C^T C, whose leading eigenvectors V give
// Q = orth(C V) (QR). Either way Q has orthonormal columns, so the whole approximation
// is an orthogonal projection of X and
//   ||X - X_tt||^2 = sum over steps of the discarded eigenvalue mass,
// which is how rel_error is computed (exact up to the eigensolver's rounding; no
// subtraction of nearly equal norms). Each step discards at most
// delta^2 = tol^2 / (d-1) * ||X||^2, so rel_error <= tol unless max_rank cuts deeper.
//
// Rounding orthogonalises right to left (QR of each core's transpose; an SVD where a
// core is wider than tall), after which the TT's norm is that of the first core and a
// left-to-right sweep of small truncated SVDs (gesdd) discards exactly the squared
// singular values it drops.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "tk/core/error.h"
#include "tk/decomp/decomp.h"
#include "tk/decomp/modes.h"

namespace tk::decomp {
namespace {

using Clock = std::chrono::steady_clock;
using linalg::Op;

void validate_tt_options(const TtOptions& options, const char* what) {
  if (!(options.tol >= 0 && options.tol < 1))
    throw usage_error(std::string(what) + ": the tolerance must be in (0,1)");
  if (options.max_rank < 0) throw usage_error(std::string(what) + ": the maximum rank must be positive");
  if (options.tol == 0 && options.max_rank == 0)
    throw usage_error(std::string(what) + ": give a tolerance, a maximum rank or both");
}

int64_t rank_cap(const TtOptions& options, int64_t largest) {
  return options.max_rank > 0 ? std::min(options.max_rank, largest) : largest;
}

// One TT-SVD step on C (rows x cols, row-major): returns Q (rows x r, orthonormal
// columns), replaces `carried` by Q^T C (r x cols) and adds the discarded mass.
template <typename T>
std::vector<T> truncate_step(const T* c, int64_t rows, int64_t cols, double delta2, int64_t cap,
                             std::vector<T>& carried, double& discarded, int64_t& rank) {
  const bool by_rows = rows <= cols;
  const int64_t side = by_rows ? rows : cols;
  std::vector<T> gram(static_cast<size_t>(side * side));
  if (by_rows)
    linalg::syrk(Op::kNoTrans, rows, cols, T(1), c, cols, T(0), gram.data(), rows);
  else
    linalg::syrk(Op::kTrans, cols, rows, T(1), c, cols, T(0), gram.data(), cols);
  std::vector<double> eigenvalues;
  std::vector<T> all = modes::leading_eigenvectors(side, gram.data(), side, &eigenvalues);
  double tail = 0;
  rank = modes::truncation_rank(eigenvalues, delta2, std::min(cap, side), &tail);
  discarded += tail;
  std::vector<T> q(static_cast<size_t>(rows * rank));
  if (by_rows) {
    for (int64_t i = 0; i < rows; ++i) std::copy_n(&all[i * side], rank, &q[i * rank]);
  } else {
    // Q = orth(C V): C V has orthogonal columns of norms sigma_j; QR makes them exact.
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, rows, rank, cols, T(1), c, cols, all.data(), side, T(0), q.data(),
                 rank);
    linalg::qr(rows, rank, q.data(), nullptr);
  }
  std::vector<T> next(static_cast<size_t>(rank * cols));
  linalg::gemm(Op::kTrans, Op::kNoTrans, rank, cols, rows, T(1), q.data(), rank, c, cols, T(0), next.data(), cols);
  carried = std::move(next);
  return q;
}

template <typename T> TtResult tt_svd_impl(const DenseView<T>& x, const TtOptions& options) {
  const Clock::time_point start = Clock::now();
  validate_tt_options(options, "tt");
  const double norm2 = modes::validated_squared_norm(x.data, x.shape, "tt");
  const size_t d = x.shape.size();
  const double delta2 = options.tol * options.tol / double(d - 1) * norm2;

  TtResult result;
  result.shape = x.shape;
  result.ranks.assign(d + 1, 1);
  result.cores.resize(d);
  const T* c = x.data;
  std::vector<T> carried;
  int64_t rest = modes::element_count(x.shape);
  double discarded = 0;
  for (size_t k = 0; k + 1 < d; ++k) {
    const int64_t rows = result.ranks[k] * x.shape[k];
    rest /= x.shape[k];
    int64_t rank = 0;
    std::vector<T> q = truncate_step(c, rows, rest, delta2, rank_cap(options, std::min(rows, rest)), carried,
                                     discarded, rank);
    result.ranks[k + 1] = rank;
    result.cores[k].assign(q.begin(), q.end());
    c = carried.data();
  }
  result.cores[d - 1].assign(c, c + result.ranks[d - 1] * x.shape[d - 1]);
  result.rel_error = norm2 > 0 ? std::sqrt(discarded / norm2) : 0;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

void validate_tt(const TtResult& tt) {
  const size_t d = tt.shape.size();
  if (d < 2 || tt.ranks.size() != d + 1 || tt.cores.size() != d || tt.ranks.front() != 1 || tt.ranks.back() != 1)
    throw invalid_input("tt-round: the TT's shape, ranks and cores do not match");
  for (size_t k = 0; k < d; ++k) {
    if (tt.shape[k] < 1 || tt.ranks[k] < 1 || tt.ranks[k + 1] < 1 ||
        static_cast<int64_t>(tt.cores[k].size()) != tt.ranks[k] * tt.shape[k] * tt.ranks[k + 1])
      throw invalid_input("tt-round: core " + std::to_string(k) + " does not have the size its ranks give");
    for (double v : tt.cores[k])
      if (!std::isfinite(v)) throw invalid_input("tt-round: core " + std::to_string(k) + " holds NaN or Inf values");
  }
}

// Make cores 1..d-1 right-orthonormal (each r_k x (n_k r_{k+1}) with orthonormal rows),
// moving the non-orthogonal part into the core on the left. A rank larger than
// n_k r_{k+1} shrinks to it on the way.
void orthogonalize_right_to_left(TtResult& tt) {
  for (size_t k = tt.shape.size() - 1; k >= 1; --k) {
    const int64_t r = tt.ranks[k], cols = tt.shape[k] * tt.ranks[k + 1];
    std::vector<double> mt(static_cast<size_t>(cols * r));  // core^T, cols x r
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < cols; ++j) mt[j * r + i] = tt.cores[k][i * cols + j];
    int64_t new_r = r;
    std::vector<double> rt;  // R^T in core^T = Q R, so core = R^T Q^T; R is new_r x r
    if (cols >= r) {
      std::vector<double> rr(static_cast<size_t>(r * r));
      linalg::qr(cols, r, mt.data(), rr.data());
      rt = std::move(rr);
    } else {
      new_r = cols;
      std::vector<double> u(static_cast<size_t>(cols * cols)), s(static_cast<size_t>(cols)),
          vt(static_cast<size_t>(cols * r));
      linalg::svd(cols, r, mt.data(), u.data(), s.data(), vt.data());
      for (int64_t i = 0; i < cols; ++i)
        for (int64_t j = 0; j < r; ++j) vt[i * r + j] *= s[i];
      mt = std::move(u);
      rt = std::move(vt);
    }
    std::vector<double> core(static_cast<size_t>(new_r * cols));  // Q^T
    for (int64_t i = 0; i < new_r; ++i)
      for (int64_t j = 0; j < cols; ++j) core[i * cols + j] = mt[j * new_r + i];
    tt.cores[k] = std::move(core);
    // Left core (r_{k-1} n_{k-1} x r) times R^T (r x new_r).
    const int64_t left_rows = tt.ranks[k - 1] * tt.shape[k - 1];
    std::vector<double> left(static_cast<size_t>(left_rows * new_r));
    linalg::gemm(Op::kNoTrans, Op::kTrans, left_rows, new_r, r, 1.0, tt.cores[k - 1].data(), r, rt.data(), r, 0.0,
                 left.data(), new_r);
    tt.cores[k - 1] = std::move(left);
    tt.ranks[k] = new_r;
  }
}

}  // namespace

TtResult tt_svd(const DenseView<double>& x, const TtOptions& options) { return tt_svd_impl(x, options); }
TtResult tt_svd(const DenseView<float>& x, const TtOptions& options) { return tt_svd_impl(x, options); }

TtResult tt_round(const TtResult& tt, const TtOptions& options) {
  const Clock::time_point start = Clock::now();
  validate_tt_options(options, "tt-round");
  validate_tt(tt);
  TtResult out = tt;
  orthogonalize_right_to_left(out);
  const size_t d = out.shape.size();
  const double norm2 = modes::sum_squares(out.cores[0].data(), static_cast<int64_t>(out.cores[0].size()));
  const double delta2 = options.tol * options.tol / double(d - 1) * norm2;
  double discarded = 0;
  for (size_t k = 0; k + 1 < d; ++k) {
    const int64_t rows = out.ranks[k] * out.shape[k], cols = out.ranks[k + 1], p = std::min(rows, cols);
    std::vector<double> u(static_cast<size_t>(rows * p)), s(static_cast<size_t>(p)), vt(static_cast<size_t>(p * cols));
    linalg::svd(rows, cols, out.cores[k].data(), u.data(), s.data(), vt.data());
    std::vector<double> s2(s.size());
    for (size_t i = 0; i < s.size(); ++i) s2[i] = s[i] * s[i];
    double tail = 0;
    const int64_t r = modes::truncation_rank(s2, delta2, rank_cap(options, p), &tail);
    discarded += tail;
    std::vector<double> core(static_cast<size_t>(rows * r));
    for (int64_t i = 0; i < rows; ++i) std::copy_n(&u[i * p], r, &core[i * r]);
    out.cores[k] = std::move(core);
    // Next core becomes diag(s_r) Vt_r (r x cols) times itself (cols x n r').
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < cols; ++j) vt[i * cols + j] *= s[i];
    const int64_t next_cols = out.shape[k + 1] * out.ranks[k + 2];
    std::vector<double> next(static_cast<size_t>(r * next_cols));
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, r, next_cols, cols, 1.0, vt.data(), cols, out.cores[k + 1].data(),
                 next_cols, 0.0, next.data(), next_cols);
    out.cores[k + 1] = std::move(next);
    out.ranks[k + 1] = r;
  }
  out.rel_error = norm2 > 0 ? std::sqrt(discarded / norm2) : 0;
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace tk::decomp
