// CP-ALS internals shared by the dense (cp.cpp), masked (cp_masked.cpp) and sparse
// (cp_sparse.cpp) front ends: the factor state, the alternating loop with restarts and
// stopping rules, the Gram-based update (least squares or HALS), the fit from inner
// products, and the final normalisation (lambda descending, fixed signs).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "tk/decomp/decomp.h"

namespace tk::decomp::cp_detail {

// One row-major I_n x R matrix per mode, in compute precision T.
template <typename T> using Factors = std::vector<std::vector<T>>;

// Standard normal numbers from a seed: Box-Muller over mt19937_64, so that the stream is
// the same with every standard library (std::normal_distribution is not specified).
class NormalRng {
 public:
  explicit NormalRng(uint64_t seed) : engine_(seed) {}
  double next();

 private:
  double uniform_open();  // in (0, 1)
  std::mt19937_64 engine_;
  bool have_spare_ = false;
  double spare_ = 0;
};

// Seeded N(0,1) matrix of rows x cols.
template <typename T> std::vector<T> gaussian_matrix(int64_t rows, int64_t cols, uint64_t seed);

// Khatri-Rao product of the factors of modes [first, last) (column-wise Kronecker):
// row (i_first, ..., i_{last-1}) in row-major order (the last mode varies fastest), R
// columns. An empty range gives one row of ones.
template <typename T>
std::vector<T> khatri_rao(const Factors<T>& a, const std::vector<int64_t>& shape, int first, int last,
                          int64_t rank);

// The state of one ALS run: unit-norm factor columns, the weights lambda, and each
// factor's R x R Gram matrix A_n^T A_n.
template <typename T> struct CpState {
  Factors<T> a;
  std::vector<double> lambda;
  std::vector<std::vector<T>> grams;
};

// Hadamard product of the Gram matrices of every mode but `skip` (-1: all), R x R.
template <typename T> std::vector<T> gram_hadamard(const CpState<T>& s, int skip, int64_t rank);

// A CP problem: what the ALS loop needs from the data. update() replaces state.a[mode]
// by the new, unnormalised factor (lambda absorbed) given the other modes' unit
// columns; modes are updated in order 0..d-1 in every sweep. residual_sq() is
// ||X - X^||^2 (observed entries) right after mode d-1 was updated and normalised.
template <typename T> class CpProblem {
 public:
  virtual ~CpProblem() = default;
  virtual void update(int mode, CpState<T>& state) = 0;
  virtual double residual_sq(const CpState<T>& state) = 0;
  // Turn Gaussian starting factors into random combinations of each mode's leading
  // directions (see GramProblem); problems without an MTTKRP keep them as they are.
  virtual void sketch(Factors<T>& /*gaussian*/) {}

  // For a problem whose factor rows are spread over processes (cp_sparse_dist.cpp), where
  // state.a holds this process's rows only; the defaults are one process's.
  // Scale the columns of state.a[mode] to unit norm, the norms into lambda, and refresh
  // the mode's Gram matrix. A zero column keeps weight 0.
  virtual void normalise(int mode, CpState<T>& state);
  // The sum of `v` over every process (inner products of rows spread over them, and the
  // time limit, which all must decide together).
  virtual double total(double v) { return v; }
  // The whole factors from every process's rows, where the result is assembled; empty
  // elsewhere.
  virtual Factors<T> collect(Factors<T> a) { return a; }
};

// The unweighted problem: the update is M_n (the MTTKRP) against the Hadamard product of
// the other Grams (+ l2), solved by least squares or by HALS column updates (nonneg).
// Subclasses supply mttkrp(); the residual comes from inner products:
// ||X||^2 - 2 <X, X^> + ||X^||^2, with <X, X^> from the last mode's MTTKRP.
template <typename T> class GramProblem : public CpProblem<T> {
 public:
  GramProblem(std::vector<int64_t> shape, int64_t rank, double norm_sq, const CpOptions& options);
  void update(int mode, CpState<T>& state) override;
  double residual_sq(const CpState<T>& state) override;
  // A_n = orth(X_(n) KR(A_k, k != n)) for n = 0..d-1 in turn, starting from the Gaussian
  // factors: a randomised range sketch of every mode (as in randomised SVD) refined by
  // one power-iteration sweep, costing one sweep of MTTKRPs. On 200^3 rank 10 + 1% noise,
  // plain Gaussian starts reach the noise floor for 3 of 10 seeds (the others stall in a
  // local minimum with merged components), sketched starts for 10 of 10.
  void sketch(Factors<T>& gaussian) override;

 protected:
  // M (I_mode x R, row-major) = X_(mode) times the Khatri-Rao product of the other
  // factors, for modes called in order 0..d-1 within a sweep.
  virtual void mttkrp(int mode, const Factors<T>& a, T* m) = 0;
  // Whether this process holds only some rows of `mode` (its factor and MTTKRP), so that
  // sums over rows are partial and go through total(). One process: never.
  virtual bool rows_spread(int /*mode*/) const { return false; }

  std::vector<int64_t> shape_;
  int64_t rank_;

 private:
  double norm_sq_;
  double l2_;
  bool nonneg_;
  std::vector<T> m_;  // the MTTKRP of the last updated mode
};

// The MTTKRP of a sparse tensor (cp_sparse.cpp): out (shape[mode] x rank) =
// X_(mode) KR(a_k, k != mode), over the nonzeros only. Each thread accumulates a
// contiguous block of them into its own buffer and the buffers are added in thread
// order: deterministic for a given thread count.
class SparseMttkrp {
 public:
  SparseMttkrp(const io::SparseTensor& x, int64_t rank) : x_(x), rank_(rank) {}
  void operator()(int mode, const Factors<double>& a, double* out);

 private:
  void accumulate(int mode, const Factors<double>& a, int64_t begin, int64_t end, double* out) const;
  void accumulate3(int mode, const Factors<double>& a, int64_t begin, int64_t end, double* out) const;
  void accumulate3_avx2(int mode, const Factors<double>& a, int64_t begin, int64_t end, double* out) const;
  void accumulate3_body(int mode, const Factors<double>& a, int64_t begin, int64_t end, double* out) const;

  const io::SparseTensor& x_;
  int64_t rank_;
  std::vector<double> accumulators_;
};

// X_(mode) X_(mode)^T (shape[mode] squared, row-major) of a sparse tensor from its fibres:
// entries of one fibre multiply pairwise.
std::vector<double> sparse_mode_gram(const io::SparseTensor& x, int mode);

// The Gram initialisation's size limit: modes longer than this start from Gaussian
// factors instead of an I_n x I_n Gram matrix.
inline constexpr int64_t kMaxGramDim = 8192;

// Whether a dense tensor of `size` elements starts mode `dim` from its Gram matrix: not
// when the matrices (one I_n x I_n per OpenMP thread) would cost more time or memory
// than the ALS they save (over kMaxGramDim, or over 1/8 of the tensor's size).
bool dense_gram_start_pays(int64_t dim, int64_t size);

// Rows [lo, hi) of a row-major matrix of `cols` columns.
template <typename T> std::vector<T> rows_of(const std::vector<T>& full, int64_t lo, int64_t hi, int64_t cols) {
  return {full.begin() + lo * cols, full.begin() + hi * cols};
}

// Adds a vector up over the processes that share a problem (dist::sum_in_double).
template <typename T> using SumOver = std::function<void(std::vector<T>&)>;

// For a mode whose rows are spread over processes, this one holding `rows` of them in
// s.a[mode]: normalise as CpProblem::normalise does, from the summed Gram matrix of the
// unscaled rows, whose diagonal holds the squared column norms.
template <typename T> void normalise_spread(CpState<T>& s, int mode, int64_t rows, int64_t rank, const SumOver<T>& sum);

// Orthonormalise the columns of rows spread over processes (m: this one's `rows` x
// rank), as the sketch's QR does in one process: a Cholesky QR of the summed Gram matrix,
// twice for orthogonality to rounding. Householder's Q differs from it in column signs
// only, which ALS carries through and the final sign rule removes.
template <typename T> void cholesky_qr_spread(std::vector<T>& m, int64_t rows, int64_t rank, const SumOver<T>& sum);

// Check a sparse tensor's consistency (kInvalidInput) and return ||X||^2.
double checked_sparse_norm_sq(const io::SparseTensor& x);

// HALS column updates (sweeps over the columns) of the I x R factor `a` for the
// normal equations A H = M, keeping A >= 0. H must carry any ridge term already.
template <typename T> void hals_update(int64_t rows, int64_t rank, const T* m, const T* h, T* a, int sweeps);

// Check what does not depend on the data (kUsage) and the shape (kInvalidInput).
void validate_options(const std::vector<int64_t>& shape, const CpOptions& options);

// Initial factors (before normalisation) of restart `restart`: the caller's kGiven
// factors, Gaussian ones for kRandom and every restart > 0; empty for kGram, which the
// dense and sparse front ends compute from the data themselves.
template <typename T>
Factors<T> initial_factors(const std::vector<int64_t>& shape, const CpOptions& options, int restart);

// The Gram initialisation of one mode: the leading eigenvectors (columns, as
// modes::leading_eigenvectors gives them) of its symmetric n x n Gram matrix g
// (destroyed) as an n x rank row-major block; columns beyond n are seeded Gaussian.
template <typename T> std::vector<T> leading_eigenvectors(int64_t n, std::vector<T>& g, int64_t rank, uint64_t seed);

// Gram initialisation of a dense tensor: per mode the leading eigenvectors of its Gram
// matrix (Gaussian columns beyond I_n, and for modes too long for an I_n x I_n matrix).
template <typename T> Factors<T> gram_init(const T* x, const std::vector<int64_t>& shape, const CpOptions& options);

// Masked (weighted) CP-ALS, cp_masked.cpp: options.mask set, data already checked.
template <typename T> CpResult cp_als_masked(const DenseView<T>& x, const CpOptions& options, double norm_sq);

// Run CP-ALS: for each restart, make_problem() gives a fresh problem and init(restart)
// its starting factors; the best fit is kept. norm_sq is ||X||^2 over observed
// entries. Returns the normalised, sorted, sign-fixed result in double.
template <typename T>
CpResult run_cp_als(const std::vector<int64_t>& shape, const CpOptions& options, double norm_sq,
                    const std::function<std::unique_ptr<CpProblem<T>>()>& make_problem,
                    const std::function<Factors<T>(int restart)>& init);

}  // namespace tk::decomp::cp_detail
