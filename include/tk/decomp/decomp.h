// Tensor decompositions: CP (dense, masked, nonnegative, sparse), Tucker (ST-HOSVD,
// HOOI), Tensor-Train (TT-SVD, rounding) and RESCAL. The shared types and one entry
// point per method; each method lives in its own file (cp.cpp, cp_sparse.cpp,
// tucker.cpp, tt.cpp, rescal.cpp).
//
// Conventions for every method:
// - Input is a dense row-major (C order) array viewed through DenseView<T>; T is the
//   compute precision (double, or float for --precision f32). The view is never copied
//   or unfolded in memory: modes are reached with strided GEMMs or batched loops.
// - Factor matrices are row-major I_n x R (row i is the i-th index's loadings), returned
//   as double whatever T was. Cores are row-major in the order documented per method.
// - Dense linear algebra goes through tk/linalg/blas.h (OpenBLAS, LAPACKE). The OpenBLAS
//   thread count follows omp_get_max_threads() outside OpenMP regions and is 1 inside.
// - Deterministic for a given seed and thread count. Errors are tk::Error: kUsage for
//   impossible options (rank <= 0, ranks longer than the order, tol outside (0,1)),
//   kInvalidInput for bad data (order < 2, NaN/Inf where not masked).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tk/io/tns.h"

namespace tk::decomp {

template <typename T> struct DenseView {
  const T* data = nullptr;
  std::vector<int64_t> shape;
};

// Reported after every iteration of an iterative method (progress, -v).
struct IterationInfo {
  int iteration = 0;       // 1-based
  double fit = 0;          // 1 - relative error, on observed entries when masked
  double fit_change = 0;   // |fit - previous fit|
  double seconds = 0;      // since the start of this run (restart)
  int restart = 0;         // 0-based restart index (CP)
};
using IterationCallback = std::function<void(const IterationInfo&)>;

// ---- CP ----
enum class CpInit { kGram, kRandom, kGiven };

struct CpOptions {
  int rank = 0;
  CpInit init = CpInit::kGram;
  // kGiven: one I_n x rank row-major matrix per mode (e.g. from --init-file).
  std::vector<std::vector<double>> init_factors;
  int restarts = 1;            // > 1: further runs from random inits; the best fit is kept
  double tol = 1e-8;           // stop when |fit change| < tol
  int max_iters = 500;
  double max_seconds = 0;      // 0: no limit; otherwise stop (converged = false) after it
  bool nonneg = false;         // HALS updates, all factors >= 0
  double l2 = 0;               // ridge term added to every normal-equation Gram matrix
  uint64_t seed = 0;
  // Optional 0/1 mask of the input's shape (1 = observed); missing entries are fitted
  // by weighted ALS (EM imputation is not used) and every reported error counts only
  // observed entries. Null: all observed.
  const uint8_t* mask = nullptr;
  IterationCallback on_iteration;
};

struct CpResult {
  std::vector<double> lambda;                 // rank weights, descending
  std::vector<std::vector<double>> factors;   // per mode I_n x rank, unit-norm columns
  double fit = 0;                             // 1 - rel_error
  double rel_error = 0;                       // ||X - X^|| / ||X|| (observed entries)
  int iterations = 0;                         // of the kept run
  double seconds = 0;                         // all restarts together
  double seconds_per_iteration = 0;
  bool converged = false;                     // tol reached (not max_iters/max_seconds)
  int best_restart = 0;
};

CpResult cp_als(const DenseView<double>& x, const CpOptions& options);
CpResult cp_als(const DenseView<float>& x, const CpOptions& options);
// Sparse CP-ALS on coordinates: the MTTKRP works on the nonzeros (CSF or sorted COO)
// and never densifies. Fit from inner products as in the dense case. mask is ignored.
CpResult cp_als_sparse(const io::SparseTensor& x, const CpOptions& options);

// Core consistency diagnostic (CORCONDIA, Bro & Kiers 2003) of a CP model of x, in
// percent (100 = perfectly trilinear; low or negative = too many components).
double corcondia(const DenseView<double>& x, const CpResult& model);

// ---- Tucker ----
enum class TuckerMethod { kSthosvd, kHooi };

struct TuckerOptions {
  std::vector<int64_t> ranks;  // one per mode; empty: chosen from tol
  double tol = 0;              // (0,1): ranks chosen so that rel_error <= tol (guaranteed)
  TuckerMethod method = TuckerMethod::kSthosvd;
  int max_iters = 50;          // HOOI sweeps
  double hooi_tol = 1e-10;     // HOOI stops when the fit changes less
  IterationCallback on_iteration;
  // Reported after each mode of ST-HOSVD (progress, -v): modes done (1-based) of the
  // tensor's order, and seconds since the start of this run.
  std::function<void(int done, int modes, double seconds)> on_mode;
};

struct TuckerResult {
  std::vector<int64_t> ranks;
  std::vector<double> core;                   // r_1 x ... x r_d, row-major
  std::vector<std::vector<double>> factors;   // per mode I_n x r_n, orthonormal columns
  double rel_error = 0;                       // exact: ||X - X^|| / ||X|| (see tucker.cpp)
  int iterations = 0;                         // HOOI sweeps (0 for ST-HOSVD)
  double seconds = 0;
};

TuckerResult tucker(const DenseView<double>& x, const TuckerOptions& options);
TuckerResult tucker(const DenseView<float>& x, const TuckerOptions& options);

// ---- Tensor-Train ----
struct TtOptions {
  double tol = 0;          // (0,1): delta = tol / sqrt(d-1) * ||X|| per unfolding; 0: none
  int64_t max_rank = 0;    // 0: no cap. At least one of tol, max_rank must be given.
};

struct TtResult {
  std::vector<int64_t> shape;                 // n_1 .. n_d (the tensorised shape)
  std::vector<int64_t> ranks;                 // r_0 = 1, r_1, ..., r_d = 1
  std::vector<std::vector<double>> cores;     // core k: r_k x n_k x r_{k+1}, row-major
  double rel_error = 0;                       // of the approximation (exact, see tt.cpp)
  double seconds = 0;
};

// x.shape is the shape to decompose (the caller reshapes a matrix first for --shape).
TtResult tt_svd(const DenseView<double>& x, const TtOptions& options);
TtResult tt_svd(const DenseView<float>& x, const TtOptions& options);
// Re-compress a TT (orthogonalise right to left, truncated SVDs left to right).
// rel_error of the result is relative to the input TT's norm.
TtResult tt_round(const TtResult& tt, const TtOptions& options);

// ---- RESCAL ----
// kEigen: A from the eigenvectors of sum_k (X_k + X_k^T) of largest magnitude
// (deterministic; absolute values for nonneg); kRandom: Gaussian A (uniform [0,1) for
// nonneg) from seed. R_k starts as the least-squares solution for that A.
enum class RescalInit { kEigen, kRandom };

struct RescalOptions {
  int rank = 0;
  RescalInit init = RescalInit::kEigen;
  double lambda_a = 0;      // ridge on A
  double lambda_r = 0;      // ridge on each R_k
  bool nonneg = false;      // multiplicative updates, A and R_k >= 0 (needs X >= 0)
  double tol = 1e-8;
  int max_iters = 500;
  double max_seconds = 0;
  uint64_t seed = 0;
  IterationCallback on_iteration;
};

struct RescalResult {
  int64_t n = 0, m = 0;
  std::vector<double> a;    // n x rank
  std::vector<double> r;    // m x rank x rank: R_k = r[k*rank*rank ...]
  double fit = 0;
  double rel_error = 0;
  int iterations = 0;
  double seconds = 0;
  bool converged = false;
};

// x is n x n x m: slice k is the relation matrix X_k = x[:, :, k] ~ A R_k A^T.
RescalResult rescal(const DenseView<double>& x, const RescalOptions& options);

}  // namespace tk::decomp
