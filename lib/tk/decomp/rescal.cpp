// RESCAL (Nickel, Tresp and Kriegel 2011): X_k ~ A R_k A^T for the slices X_k = x[:, :, k]
// of an n x n x m tensor, fitted by alternating least squares, or with nonnegative
// multiplicative updates (Krompass, Nickel, Jiang and Tresp 2013) when options.nonneg.
//
// The tensor is never copied or unfolded: x, row-major n x n x m, is read as the matrix
// X1 = [i, (j,k)] (n x nm). Every product with all slices at once is one of
//   sum_k X_k F_k       = X1 F,                  F = [(j,k), c] stacked F_k (nm x r)
//   sum_k X_k^T A R_k   = (X1^T A as n x mr) R,  R = the R_k stacked (mr x r)
//   Q^T X_k Q (all k)   = (Q^T X1) then r GEMMs of (n x m)^T (n x r)
// ALS updates:
//   A   <- [sum_k X_k A R_k^T + X_k^T A R_k] [sum_k R_k A^T A R_k^T + R_k^T A^T A R_k + la I]^-1
//   R_k <- V (S ⊙ (U^T X_k U)) V^T  with A = U diag(s) V^T, S_ab = s_a s_b / (s_a^2 s_b^2 + lr),
// the closed-form ridge solution that avoids the r^2 x r^2 Kronecker system. The fit
// comes from norms and inner products: with R'_k = V^T R_k V,
//   ||X - X^||^2 = ||X||^2 - 2 sum_k <S W_k S, R'_k> + sum_k ||S R'_k S||^2,  W_k = U^T X_k U
// (S here diag(s)), so it costs nothing beyond the R update.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "tk/core/error.h"
#include "tk/decomp/decomp.h"
#include "tk/decomp/modes.h"

namespace tk::decomp {
namespace {

using Clock = std::chrono::steady_clock;
using linalg::Op;
using Matrix = std::vector<double>;

// Guards the multiplicative updates against 0/0.
constexpr double kTiny = 1e-12;

struct Problem {
  const double* x;
  int64_t n, m, r;
};

void validate_rescal(const DenseView<double>& x, const RescalOptions& options) {
  if (x.shape.size() != 3 || x.shape[0] != x.shape[1])
    throw invalid_input("rescal needs an n x n x m tensor (slice k = x[:, :, k])");
  if (options.rank < 1) throw usage_error("rescal: the rank must be at least 1");
  if (options.rank > x.shape[0])
    throw usage_error("rescal: the rank " + std::to_string(options.rank) + " exceeds n = " +
                      std::to_string(x.shape[0]));
  if (!(options.lambda_a >= 0) || !(options.lambda_r >= 0))
    throw usage_error("rescal: the regularisation weights must be >= 0");
  if (options.max_iters < 1 || !(options.tol >= 0) || !(options.max_seconds >= 0))
    throw usage_error("rescal: max_iters must be >= 1, tol and max_seconds >= 0");
}

// Out (nm x r) with rows (j,k): F_k = A op(R_k), op = R_k^T (trans) or R_k.
Matrix stack_a_times_r(const Problem& p, const Matrix& a, const Matrix& r, Op op) {
  Matrix f(static_cast<size_t>(p.n * p.m * p.r));
  for (int64_t k = 0; k < p.m; ++k)
    linalg::gemm(Op::kNoTrans, op, p.n, p.r, p.r, 1.0, a.data(), p.r, &r[k * p.r * p.r], p.r, 0.0, &f[k * p.r],
                 p.m * p.r);
  return f;
}

// sum_k X_k A R_k^T + X_k^T A R_k (n x r), in four GEMMs.
Matrix a_numerator(const Problem& p, const Matrix& a, const Matrix& r) {
  Matrix out(static_cast<size_t>(p.n * p.r));
  Matrix f = stack_a_times_r(p, a, r, Op::kTrans);
  linalg::gemm(Op::kNoTrans, Op::kNoTrans, p.n, p.r, p.n * p.m, 1.0, p.x, p.n * p.m, f.data(), p.r, 0.0, out.data(),
               p.r);
  // sum_k X_k^T A R_k: Y = X1^T A is [(j,k), b] = (X_k^T A)[j, b]; read as n x (m r) it
  // multiplies the R_k stacked as (m r) x r.
  Matrix y(static_cast<size_t>(p.n * p.m * p.r));
  linalg::gemm(Op::kTrans, Op::kNoTrans, p.n * p.m, p.r, p.n, 1.0, p.x, p.n * p.m, a.data(), p.r, 0.0, y.data(), p.r);
  linalg::gemm(Op::kNoTrans, Op::kNoTrans, p.n, p.r, p.m * p.r, 1.0, y.data(), p.m * p.r, r.data(), p.r, 1.0,
               out.data(), p.r);
  return out;
}

// sum_k R_k G R_k^T + R_k^T G R_k (r x r) for G = A^T A.
Matrix a_gram(const Problem& p, const Matrix& ata, const Matrix& r) {
  Matrix out(static_cast<size_t>(p.r * p.r), 0.0), t(static_cast<size_t>(p.r * p.r));
  for (int64_t k = 0; k < p.m; ++k) {
    const double* rk = &r[k * p.r * p.r];
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, p.r, p.r, p.r, 1.0, rk, p.r, ata.data(), p.r, 0.0, t.data(), p.r);
    linalg::gemm(Op::kNoTrans, Op::kTrans, p.r, p.r, p.r, 1.0, t.data(), p.r, rk, p.r, 1.0, out.data(), p.r);
    linalg::gemm(Op::kTrans, Op::kNoTrans, p.r, p.r, p.r, 1.0, rk, p.r, ata.data(), p.r, 0.0, t.data(), p.r);
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, p.r, p.r, p.r, 1.0, t.data(), p.r, rk, p.r, 1.0, out.data(), p.r);
  }
  return out;
}

Matrix gram_of(const Problem& p, const Matrix& a) {
  Matrix g(static_cast<size_t>(p.r * p.r));
  linalg::syrk(Op::kTrans, p.r, p.n, 1.0, a.data(), p.r, 0.0, g.data(), p.r);
  return g;
}

// W_k = Q^T X_k Q for every k (m x r x r), Q n x r.
Matrix project_slices(const Problem& p, const Matrix& q) {
  Matrix z(static_cast<size_t>(p.r * p.n * p.m));  // Q^T X1: [a, (j,k)]
  linalg::gemm(Op::kTrans, Op::kNoTrans, p.r, p.n * p.m, p.n, 1.0, q.data(), p.r, p.x, p.n * p.m, 0.0, z.data(),
               p.n * p.m);
  Matrix w(static_cast<size_t>(p.m * p.r * p.r));
  for (int64_t a = 0; a < p.r; ++a)  // W[k][a][:] = Z_a^T Q, Z_a = [j, k] (n x m)
    linalg::gemm(Op::kTrans, Op::kNoTrans, p.m, p.r, p.n, 1.0, &z[a * p.n * p.m], p.m, q.data(), p.r, 0.0,
                 &w[a * p.r], p.r * p.r);
  return w;
}

double rel_error_from(double norm2, double inner, double model2) {
  return norm2 > 0 ? std::sqrt(std::max(0.0, norm2 - 2 * inner + model2) / norm2) : 0;
}

// ALS R update for the current A; returns the relative error of (A, new R).
double update_r_als(const Problem& p, const Matrix& a, double lambda_r, double norm2, Matrix& r) {
  Matrix u(a), s(static_cast<size_t>(p.r)), vt(static_cast<size_t>(p.r * p.r)), left(static_cast<size_t>(p.n * p.r));
  linalg::svd(p.n, p.r, u.data(), left.data(), s.data(), vt.data());
  const Matrix w = project_slices(p, left);
  double inner = 0, model2 = 0;
  Matrix rp(static_cast<size_t>(p.r * p.r)), t(static_cast<size_t>(p.r * p.r));
  for (int64_t k = 0; k < p.m; ++k) {
    for (int64_t i = 0; i < p.r; ++i)
      for (int64_t j = 0; j < p.r; ++j) {
        const double si = s[i] * s[j], wk = w[k * p.r * p.r + i * p.r + j];
        const double denom = si * si + lambda_r;
        rp[i * p.r + j] = denom > 0 ? si * wk / denom : 0;
        inner += si * wk * rp[i * p.r + j];
        model2 += si * si * rp[i * p.r + j] * rp[i * p.r + j];
      }
    // R_k = V R' V^T = Vt^T R' Vt.
    linalg::gemm(Op::kTrans, Op::kNoTrans, p.r, p.r, p.r, 1.0, vt.data(), p.r, rp.data(), p.r, 0.0, t.data(), p.r);
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, p.r, p.r, p.r, 1.0, t.data(), p.r, vt.data(), p.r, 0.0,
                 &r[k * p.r * p.r], p.r);
  }
  return rel_error_from(norm2, inner, model2);
}

void update_a_als(const Problem& p, double lambda_a, const Matrix& r, Matrix& a) {
  Matrix numerator = a_numerator(p, a, r);
  Matrix g = a_gram(p, gram_of(p, a), r);
  for (int64_t i = 0; i < p.r; ++i) g[i * p.r + i] += lambda_a;
  linalg::solve_spd_right(p.r, g.data(), p.n, numerator.data());
  a = std::move(numerator);
}

void update_a_nonneg(const Problem& p, double lambda_a, const Matrix& r, Matrix& a) {
  const Matrix numerator = a_numerator(p, a, r);
  const Matrix g = a_gram(p, gram_of(p, a), r);
  Matrix denom(static_cast<size_t>(p.n * p.r));
  linalg::gemm(Op::kNoTrans, Op::kNoTrans, p.n, p.r, p.r, 1.0, a.data(), p.r, g.data(), p.r, 0.0, denom.data(), p.r);
  for (size_t i = 0; i < a.size(); ++i) a[i] *= numerator[i] / (denom[i] + lambda_a * a[i] + kTiny);
}

// R_k <- R_k ⊙ (A^T X_k A) / (G R_k G + lr R_k), G = A^T A; returns the relative error
// of (A, new R).
double update_r_nonneg(const Problem& p, const Matrix& a, double lambda_r, double norm2, Matrix& r) {
  const Matrix w = project_slices(p, a), g = gram_of(p, a);
  const int64_t rr = p.r * p.r;
  Matrix t(static_cast<size_t>(rr)), grg(static_cast<size_t>(rr));
  auto g_r_g = [&](const double* rk) {
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, p.r, p.r, p.r, 1.0, g.data(), p.r, rk, p.r, 0.0, t.data(), p.r);
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, p.r, p.r, p.r, 1.0, t.data(), p.r, g.data(), p.r, 0.0, grg.data(), p.r);
  };
  double inner = 0, model2 = 0;
  for (int64_t k = 0; k < p.m; ++k) {
    double* rk = &r[k * rr];
    g_r_g(rk);
    for (int64_t i = 0; i < rr; ++i) rk[i] *= w[k * rr + i] / (grg[i] + lambda_r * rk[i] + kTiny);
    g_r_g(rk);  // ||A R_k A^T||^2 = <G R_k G, R_k>
    for (int64_t i = 0; i < rr; ++i) {
      inner += w[k * rr + i] * rk[i];
      model2 += grg[i] * rk[i];
    }
  }
  return rel_error_from(norm2, inner, model2);
}

// Eigenvectors of sum_k X_k + X_k^T for the r eigenvalues of largest magnitude.
Matrix eigen_init(const Problem& p) {
  Matrix sum(static_cast<size_t>(p.n * p.n)), ones(static_cast<size_t>(p.m), 1.0);
  linalg::gemv(Op::kNoTrans, p.n * p.n, p.m, 1.0, p.x, p.m, ones.data(), 0.0, sum.data());
  Matrix sym(sum.size());
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t j = 0; j < p.n; ++j) sym[i * p.n + j] = sum[i * p.n + j] + sum[j * p.n + i];
  Matrix w(static_cast<size_t>(p.n));
  linalg::syev(p.n, sym.data(), w.data());
  std::vector<int64_t> idx(static_cast<size_t>(p.n));
  std::iota(idx.begin(), idx.end(), int64_t(0));
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return std::abs(w[a]) > std::abs(w[b]); });
  Matrix a(static_cast<size_t>(p.n * p.r));
  for (int64_t c = 0; c < p.r; ++c)
    for (int64_t i = 0; i < p.n; ++i) a[i * p.r + c] = sym[i * p.n + idx[c]];
  return a;
}

Matrix random_init(const Problem& p, uint64_t seed, bool nonneg) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Matrix a(static_cast<size_t>(p.n * p.r));
  for (double& v : a) v = nonneg ? uniform(rng) : normal(rng);
  return a;
}

// Initial A and R: A from the chosen init (made positive for nonneg), R the ridge LS
// solution for that A (its absolute value for nonneg, so that no entry starts at a
// sign the multiplicative updates cannot leave).
void initialize(const Problem& p, const RescalOptions& options, double norm2, Matrix& a, Matrix& r) {
  a = options.init == RescalInit::kRandom ? random_init(p, options.seed, options.nonneg) : eigen_init(p);
  r.assign(static_cast<size_t>(p.m * p.r * p.r), 0.0);
  if (options.nonneg)
    for (double& v : a) v = std::abs(v) + kTiny;
  update_r_als(p, a, options.lambda_r, norm2, r);
  if (options.nonneg)
    for (double& v : r) v = std::abs(v) + kTiny;
}

}  // namespace

RescalResult rescal(const DenseView<double>& x, const RescalOptions& options) {
  const Clock::time_point start = Clock::now();
  validate_rescal(x, options);
  const double norm2 = modes::validated_squared_norm(x.data, x.shape, "rescal");
  const Problem p{x.data, x.shape[0], x.shape[2], options.rank};
  if (options.nonneg) {
    const int64_t count = modes::element_count(x.shape);
    for (int64_t i = 0; i < count; ++i)
      if (x.data[i] < 0)
        throw invalid_input("rescal: non-negative factors need a tensor without negative values")
            .with_option("decomp.rescal_nonneg");
  }
  RescalResult result;
  result.n = p.n;
  result.m = p.m;
  initialize(p, options, norm2, result.a, result.r);
  double fit = 0;
  for (int it = 1; it <= options.max_iters; ++it) {
    double error;
    if (options.nonneg) {
      update_a_nonneg(p, options.lambda_a, result.r, result.a);
      error = update_r_nonneg(p, result.a, options.lambda_r, norm2, result.r);
    } else {
      update_a_als(p, options.lambda_a, result.r, result.a);
      error = update_r_als(p, result.a, options.lambda_r, norm2, result.r);
    }
    const double change = std::abs((1 - error) - fit);
    fit = 1 - error;
    result.iterations = it;
    result.rel_error = error;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (options.on_iteration) options.on_iteration({it, fit, change, elapsed, 0});
    if (it > 1 && change < options.tol) {
      result.converged = true;
      break;
    }
    if (options.max_seconds > 0 && elapsed >= options.max_seconds) break;
  }
  result.fit = fit;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace tk::decomp
