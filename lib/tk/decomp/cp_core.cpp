// The CP-ALS loop shared by the dense, masked and sparse front ends (see cp_internal.h).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include "tk/core/error.h"
#include "tk/decomp/cp_internal.h"
#include "tk/decomp/modes.h"
#include "tk/linalg/blas.h"

namespace tk::decomp::cp_detail {

using linalg::Op;

double NormalRng::uniform_open() {
  // 53 random bits, shifted by half a step so that 0 and 1 never occur.
  return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53;
}

double NormalRng::next() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  const double radius = std::sqrt(-2.0 * std::log(uniform_open()));
  const double angle = 2.0 * std::numbers::pi * uniform_open();
  spare_ = radius * std::sin(angle);
  have_spare_ = true;
  return radius * std::cos(angle);
}

template <typename T> std::vector<T> gaussian_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  NormalRng rng(seed);
  std::vector<T> out(static_cast<size_t>(rows * cols));
  for (T& v : out) v = static_cast<T>(rng.next());
  return out;
}

template <typename T>
std::vector<T> khatri_rao(const Factors<T>& a, const std::vector<int64_t>& shape, int first, int last,
                          int64_t rank) {
  std::vector<T> out(static_cast<size_t>(rank), T(1));
  int64_t rows = 1;
  for (int k = first; k < last; ++k) {
    const int64_t dim = shape[k];
    std::vector<T> next(static_cast<size_t>(rows * dim * rank));
    for (int64_t j = 0; j < rows; ++j) {
      const T* left = &out[j * rank];
      for (int64_t i = 0; i < dim; ++i) {
        const T* right = &a[k][i * rank];
        T* dst = &next[(j * dim + i) * rank];
        for (int64_t r = 0; r < rank; ++r) dst[r] = left[r] * right[r];
      }
    }
    out.swap(next);
    rows *= dim;
  }
  return out;
}

template <typename T> std::vector<T> gram_hadamard(const CpState<T>& s, int skip, int64_t rank) {
  std::vector<T> h(static_cast<size_t>(rank * rank), T(1));
  for (size_t k = 0; k < s.grams.size(); ++k) {
    if (static_cast<int>(k) == skip) continue;
    for (size_t e = 0; e < h.size(); ++e) h[e] *= s.grams[k][e];
  }
  return h;
}

template <typename T>
void hals_update(int64_t rows, int64_t rank, const T* m, const T* h, T* a, int sweeps) {
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    for (int64_t r = 0; r < rank; ++r) {
      const T diag = h[r * rank + r];
      if (!(diag > T(0))) continue;
      for (int64_t i = 0; i < rows; ++i) {
        T* row = a + i * rank;
        T ah = 0;
        for (int64_t k = 0; k < rank; ++k) ah += row[k] * h[k * rank + r];
        row[r] = std::max(T(0), row[r] + (m[i * rank + r] - ah) / diag);
      }
    }
  }
}

// ---------------------------------------------------------------- GramProblem

template <typename T>
GramProblem<T>::GramProblem(std::vector<int64_t> shape, int64_t rank, double norm_sq, const CpOptions& options)
    : shape_(std::move(shape)), rank_(rank), norm_sq_(norm_sq), l2_(options.l2), nonneg_(options.nonneg) {}

template <typename T> void GramProblem<T>::update(int mode, CpState<T>& s) {
  const int64_t rows = shape_[mode];
  m_.resize(static_cast<size_t>(rows * rank_));
  mttkrp(mode, s.a, m_.data());
  std::vector<T> h = gram_hadamard(s, mode, rank_);
  for (int64_t r = 0; r < rank_; ++r) h[r * rank_ + r] += static_cast<T>(l2_);
  std::vector<T>& a = s.a[mode];
  if (nonneg_) {
    // HALS starts from the current factor with its weights put back.
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t r = 0; r < rank_; ++r) a[i * rank_ + r] *= static_cast<T>(s.lambda[r]);
    constexpr int kHalsSweeps = 3;  // cheap next to the MTTKRP, and each one helps
    hals_update(rows, rank_, m_.data(), h.data(), a.data(), kHalsSweeps);
  } else {
    a = m_;
    linalg::solve_spd_right(rank_, h.data(), rows, a.data());
  }
}

template <typename T> void GramProblem<T>::sketch(Factors<T>& gaussian) {
  // Modes in ALS order, each sketch using the sketches already made (one power-iteration
  // sweep), orthonormalised as the Gram init's eigenvectors are.
  std::vector<T> m;
  for (size_t n = 0; n < gaussian.size(); ++n) {
    m.resize(static_cast<size_t>(shape_[n] * rank_));
    mttkrp(static_cast<int>(n), gaussian, m.data());
    if (shape_[n] >= rank_) linalg::qr(shape_[n], rank_, m.data(), nullptr);
    gaussian[n] = m;
  }
}

template <typename T> double GramProblem<T>::residual_sq(const CpState<T>& s) {
  const int last = static_cast<int>(shape_.size()) - 1;
  const int64_t rows = shape_[last];
  const std::vector<T>& a = s.a[last];
  double inner = 0;  // <X, X^> = sum_r lambda_r <M_r, a_r>
  for (int64_t r = 0; r < rank_; ++r) {
    double dot = 0;
    for (int64_t i = 0; i < rows; ++i) dot += static_cast<double>(m_[i * rank_ + r]) * a[i * rank_ + r];
    inner += s.lambda[r] * dot;
  }
  if (rows_spread(last)) inner = this->total(inner);
  const std::vector<T> h = gram_hadamard(s, -1, rank_);
  double model_sq = 0;  // ||X^||^2 = lambda^T (Hadamard of all Grams) lambda
  for (int64_t r = 0; r < rank_; ++r)
    for (int64_t q = 0; q < rank_; ++q) model_sq += s.lambda[r] * s.lambda[q] * h[r * rank_ + q];
  return std::max(0.0, norm_sq_ - 2 * inner + model_sq);
}

// ---------------------------------------------------------------- spread rows

template <typename T> void normalise_spread(CpState<T>& s, int mode, int64_t rows, int64_t rank, const SumOver<T>& sum) {
  std::vector<T>& a = s.a[mode];
  std::vector<T> g(static_cast<size_t>(rank * rank), T(0));
  if (rows > 0) linalg::syrk(Op::kTrans, rank, rows, T(1), a.data(), rank, T(0), g.data(), rank);
  sum(g);
  std::vector<double> scale(static_cast<size_t>(rank));
  for (int64_t r = 0; r < rank; ++r) {
    s.lambda[r] = std::sqrt(static_cast<double>(g[r * rank + r]));
    scale[r] = s.lambda[r] > 0 ? 1.0 / s.lambda[r] : 0.0;
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t r = 0; r < rank; ++r) a[i * rank + r] *= static_cast<T>(scale[r]);
  s.grams[mode].resize(g.size());
  for (int64_t r = 0; r < rank; ++r)
    for (int64_t q = 0; q < rank; ++q)
      s.grams[mode][r * rank + q] = static_cast<T>(static_cast<double>(g[r * rank + q]) * scale[r] * scale[q]);
}

template <typename T> void cholesky_qr_spread(std::vector<T>& m, int64_t rows, int64_t rank, const SumOver<T>& sum) {
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<T> g(static_cast<size_t>(rank * rank), T(0));
    if (rows > 0) linalg::syrk(Op::kTrans, rank, rows, T(1), m.data(), rank, T(0), g.data(), rank);
    sum(g);
    std::vector<double> wide_g(g.begin(), g.end()), wide_m(m.begin(), m.end());
    if (!linalg::cholesky_right_solve(rank, wide_g.data(), rows, wide_m.data())) return;
    std::copy(wide_m.begin(), wide_m.end(), m.begin());
  }
}

bool dense_gram_start_pays(int64_t dim, int64_t size) {
  const int64_t threads = omp_get_max_threads();
  return dim <= kMaxGramDim && threads * dim * dim <= std::max<int64_t>(size / 8, int64_t{1} << 16);
}

// ---------------------------------------------------------------- options, init

void validate_options(const std::vector<int64_t>& shape, const CpOptions& o) {
  if (o.rank <= 0) throw usage_error("the CP rank must be positive, got " + std::to_string(o.rank));
  if (!(o.tol > 0 && o.tol < 1)) throw usage_error("the tolerance must lie in (0, 1)");
  if (o.max_iters <= 0) throw usage_error("the iteration limit must be positive");
  if (o.restarts <= 0) throw usage_error("the number of restarts must be positive");
  if (!(o.l2 >= 0) || !std::isfinite(o.l2)) throw usage_error("the l2 regularisation must be >= 0");
  if (!(o.max_seconds >= 0)) throw usage_error("the time limit must be >= 0");
  if (shape.size() < 2)
    throw invalid_input("CP needs a tensor of order >= 2, got order " + std::to_string(shape.size()));
  for (int64_t dim : shape)
    if (dim <= 0) throw invalid_input("CP needs a tensor without empty modes");
  if (o.init == CpInit::kGiven) {
    if (o.init_factors.size() != shape.size())
      throw usage_error("the initial factors must be one matrix per mode (" + std::to_string(shape.size()) + ")");
    for (size_t n = 0; n < shape.size(); ++n) {
      if (o.init_factors[n].size() != static_cast<size_t>(shape[n] * o.rank))
        throw usage_error("initial factor " + std::to_string(n) + " must be " + std::to_string(shape[n]) + " x " +
                          std::to_string(o.rank));
      for (double v : o.init_factors[n])
        if (!std::isfinite(v)) throw invalid_input("initial factor " + std::to_string(n) + " is not finite");
    }
  }
}

template <typename T>
Factors<T> initial_factors(const std::vector<int64_t>& shape, const CpOptions& o, int restart) {
  Factors<T> a;
  if (restart == 0 && o.init == CpInit::kGram) return a;
  for (size_t n = 0; n < shape.size(); ++n) {
    if (restart == 0 && o.init == CpInit::kGiven) {
      a.emplace_back(o.init_factors[n].begin(), o.init_factors[n].end());
    } else {
      // Each restart and mode draws its own stream, independent of the other modes' sizes.
      const uint64_t stream = o.seed * 1000003u + static_cast<uint64_t>(restart) * 1009u + n;
      a.push_back(gaussian_matrix<T>(shape[n], o.rank, stream));
    }
  }
  return a;
}

template <typename T>
std::vector<T> leading_eigenvectors(int64_t n, std::vector<T>& g, int64_t rank, uint64_t seed) {
  const int64_t take = std::min(n, rank);
  const std::vector<T> u = modes::leading_eigenvectors(n, g.data(), take);
  std::vector<T> out = gaussian_matrix<T>(n, rank, seed);
  for (int64_t i = 0; i < n; ++i) std::copy_n(&u[i * take], take, &out[i * rank]);
  return out;
}

// ---------------------------------------------------------------- the ALS loop

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Scale the columns of state.a[mode] to unit norm, the norms into lambda, and refresh the
// mode's Gram matrix. A zero column keeps weight 0.
template <typename T> void normalise_mode(CpState<T>& s, int mode, int64_t rows, int64_t rank) {
  std::vector<T>& a = s.a[mode];
  std::vector<double> norm(static_cast<size_t>(rank), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t r = 0; r < rank; ++r) norm[r] += static_cast<double>(a[i * rank + r]) * a[i * rank + r];
  for (int64_t r = 0; r < rank; ++r) {
    norm[r] = std::sqrt(norm[r]);
    s.lambda[r] = norm[r];
    const T scale = norm[r] > 0 ? static_cast<T>(1.0 / norm[r]) : T(0);
    for (int64_t i = 0; i < rows; ++i) a[i * rank + r] *= scale;
  }
  s.grams[mode].assign(static_cast<size_t>(rank * rank), T(0));
  linalg::syrk(Op::kTrans, rank, rows, T(1), a.data(), rank, T(0), s.grams[mode].data(), rank);
}

}  // namespace

template <typename T> void CpProblem<T>::normalise(int mode, CpState<T>& s) {
  const int64_t rank = static_cast<int64_t>(s.lambda.size());
  normalise_mode(s, mode, static_cast<int64_t>(s.a[mode].size()) / rank, rank);
}

namespace {

// The smallest fit change that is not rounding noise. The squared residual is a
// difference of terms of size ||X||^2 computed in T, so it is known to about
// 4 eps ||X||^2; through the square root that is the bound below (in float on 1%-noise
// data about 1e-5, in double 4e-14, and sqrt(4 eps) for an exact fit). A tolerance below
// it could only be met by chance.
template <typename T> double fit_resolution(double norm_sq, double rel_error) {
  const double noise_sq = 4 * std::numeric_limits<T>::epsilon() * norm_sq;
  const double residual = rel_error * std::sqrt(norm_sq);
  const double by_derivative = residual > 0 ? noise_sq / (2 * residual * std::sqrt(norm_sq)) : HUGE_VAL;
  return std::min(by_derivative, std::sqrt(noise_sq / norm_sq));
}

template <typename T> struct RunResult {
  CpState<T> state;
  double fit = -std::numeric_limits<double>::infinity();
  double rel_error = 1;
  int iterations = 0;
  double iteration_seconds = 0;  // the iterations alone, without the initialisation
  bool converged = false;
};

template <typename T>
RunResult<T> run_once(const std::vector<int64_t>& shape, const CpOptions& o, double norm_sq, CpProblem<T>& problem,
                      Factors<T> init, int restart, Clock::time_point call_start) {
  const int order = static_cast<int>(shape.size());
  const int64_t rank = o.rank;
  RunResult<T> run;
  CpState<T>& s = run.state;
  s.a = std::move(init);
  s.lambda.assign(static_cast<size_t>(rank), 1.0);
  s.grams.resize(static_cast<size_t>(order));
  if (o.nonneg)
    for (auto& a : s.a)
      for (T& v : a) v = std::abs(v);
  for (int n = 0; n < order; ++n) problem.normalise(n, s);
  std::fill(s.lambda.begin(), s.lambda.end(), 1.0);

  const auto t0 = Clock::now();
  const double norm = std::sqrt(norm_sq);
  double previous_fit = 0;
  for (int it = 1; it <= o.max_iters; ++it) {
    for (int n = 0; n < order; ++n) {
      problem.update(n, s);
      problem.normalise(n, s);
    }
    run.rel_error = std::sqrt(problem.residual_sq(s)) / norm;
    run.fit = 1 - run.rel_error;
    run.iterations = it;
    const double change = std::abs(run.fit - previous_fit);
    previous_fit = run.fit;
    const double elapsed = seconds_since(t0);
    if (o.on_iteration) o.on_iteration({it, run.fit, change, elapsed, restart});
    if (change < std::max(o.tol, fit_resolution<T>(norm_sq, run.rel_error))) {
      run.converged = true;
      break;
    }
    if (o.max_seconds > 0 && problem.total(seconds_since(call_start) >= o.max_seconds ? 1 : 0) > 0) break;
  }
  run.iteration_seconds = seconds_since(t0);
  return run;
}

// Sort the components by lambda, descending, and fix signs: in every mode but the last,
// the entry of largest magnitude of each column is made positive, the flip compensated
// in the last mode (the model is unchanged).
template <typename T> CpResult finalise(const std::vector<int64_t>& shape, const CpState<T>& s, int64_t rank) {
  const int order = static_cast<int>(shape.size());
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) { return s.lambda[x] > s.lambda[y]; });
  CpResult out;
  out.factors.resize(static_cast<size_t>(order));
  for (int64_t r = 0; r < rank; ++r) out.lambda.push_back(s.lambda[perm[r]]);
  for (int n = 0; n < order; ++n) {
    std::vector<double>& f = out.factors[n];
    f.resize(static_cast<size_t>(shape[n] * rank));
    for (int64_t i = 0; i < shape[n]; ++i)
      for (int64_t r = 0; r < rank; ++r) f[i * rank + r] = s.a[n][i * rank + perm[r]];
  }
  for (int64_t r = 0; r < rank; ++r) {
    for (int n = 0; n + 1 < order; ++n) {
      std::vector<double>& f = out.factors[n];
      int64_t arg = 0;
      for (int64_t i = 1; i < shape[n]; ++i)
        if (std::abs(f[i * rank + r]) > std::abs(f[arg * rank + r])) arg = i;
      if (f[arg * rank + r] >= 0) continue;
      for (int64_t i = 0; i < shape[n]; ++i) f[i * rank + r] = -f[i * rank + r];
      std::vector<double>& last = out.factors[order - 1];
      for (int64_t i = 0; i < shape[order - 1]; ++i) last[i * rank + r] = -last[i * rank + r];
    }
  }
  return out;
}

}  // namespace

template <typename T>
CpResult run_cp_als(const std::vector<int64_t>& shape, const CpOptions& o, double norm_sq,
                    const std::function<std::unique_ptr<CpProblem<T>>()>& make_problem,
                    const std::function<Factors<T>(int restart)>& init) {
  if (!(norm_sq > 0)) throw invalid_input("the tensor has no nonzero (observed) entries");
  const auto t0 = Clock::now();
  RunResult<T> best;
  int best_restart = 0;
  int64_t total_iterations = 0;
  double iteration_seconds = 0;
  std::unique_ptr<CpProblem<T>> problem;
  for (int restart = 0; restart < o.restarts; ++restart) {
    // The time limit covers all restarts: a restart begins only while time is left.
    if (restart > 0 && o.max_seconds > 0 && problem->total(seconds_since(t0) >= o.max_seconds ? 1 : 0) > 0) break;
    problem = make_problem();
    Factors<T> start = init(restart);
    if (restart > 0 || o.init == CpInit::kRandom) problem->sketch(start);
    RunResult<T> run = run_once(shape, o, norm_sq, *problem, std::move(start), restart, t0);
    total_iterations += run.iterations;
    iteration_seconds += run.iteration_seconds;
    if (restart == 0 || run.fit > best.fit) {
      best = std::move(run);
      best_restart = restart;
    }
  }
  best.state.a = problem->collect(std::move(best.state.a));
  CpResult out = best.state.a.empty() ? CpResult{} : finalise(shape, best.state, o.rank);
  out.fit = best.fit;
  out.rel_error = best.rel_error;
  out.iterations = best.iterations;
  out.converged = best.converged;
  out.best_restart = best_restart;
  out.seconds = seconds_since(t0);
  out.seconds_per_iteration = total_iterations > 0 ? iteration_seconds / static_cast<double>(total_iterations) : 0;
  return out;
}

#define TK_CP_INSTANTIATE(T)                                                                                      \
  template std::vector<T> gaussian_matrix<T>(int64_t, int64_t, uint64_t);                                         \
  template std::vector<T> khatri_rao<T>(const Factors<T>&, const std::vector<int64_t>&, int, int, int64_t);       \
  template std::vector<T> gram_hadamard<T>(const CpState<T>&, int, int64_t);                                     \
  template void hals_update<T>(int64_t, int64_t, const T*, const T*, T*, int);                                    \
  template class CpProblem<T>;                                                                                    \
  template void normalise_spread<T>(CpState<T>&, int, int64_t, int64_t, const SumOver<T>&);                      \
  template void cholesky_qr_spread<T>(std::vector<T>&, int64_t, int64_t, const SumOver<T>&);                     \
  template class GramProblem<T>;                                                                                  \
  template Factors<T> initial_factors<T>(const std::vector<int64_t>&, const CpOptions&, int);                    \
  template std::vector<T> leading_eigenvectors<T>(int64_t, std::vector<T>&, int64_t, uint64_t);                   \
  template CpResult run_cp_als<T>(const std::vector<int64_t>&, const CpOptions&, double,                          \
                                  const std::function<std::unique_ptr<CpProblem<T>>()>&,                         \
                                  const std::function<Factors<T>(int)>&);
TK_CP_INSTANTIATE(float)
TK_CP_INSTANTIATE(double)
#undef TK_CP_INSTANTIATE

}  // namespace tk::decomp::cp_detail
