// OpenBLAS / LAPACKE wrappers (see blas.h). Each overload pair is one template over the
// element type, dispatching to the s/d routine.
#include "tk/linalg/blas.h"

#include <cblas.h>
#include <lapacke.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tk/core/error.h"

namespace tk::linalg {

namespace {

thread_local int serial_scopes = 0;

// Around one BLAS or LAPACK call: inside a SerialBlas scope and outside a parallel region
// (where OpenBLAS would fork a team of omp_get_max_threads()), this task's OpenMP thread
// count is 1 for the call. Inside a region OpenBLAS already runs on the caller alone.
class CallThreads {
 public:
  CallThreads() {
    if (serial_scopes > 0 && !omp_in_parallel()) {
      saved_ = omp_get_max_threads();
      if (saved_ > 1) omp_set_num_threads(1);
    }
  }
  ~CallThreads() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  CallThreads(const CallThreads&) = delete;
  CallThreads& operator=(const CallThreads&) = delete;

 private:
  int saved_ = 0;
};

}  // namespace

SerialBlas::SerialBlas() { ++serial_scopes; }
SerialBlas::~SerialBlas() { --serial_scopes; }
namespace {

CBLAS_TRANSPOSE to_cblas(Op op) { return op == Op::kTrans ? CblasTrans : CblasNoTrans; }

void check_info(lapack_int info, const char* routine) {
  if (info < 0) throw internal_error(std::string(routine) + ": argument " + std::to_string(-info) + " is invalid");
  if (info > 0) throw runtime_error(std::string(routine) + " did not converge (info " + std::to_string(info) + ")");
}

// The s/d routines behind one name, so that the algorithms below are written once.
template <typename T> struct Lapack;

template <> struct Lapack<double> {
  static lapack_int syevd(int n, double* a, double* w) {
    return LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, a, n, w);
  }
  static lapack_int gesdd(int m, int n, double* a, double* s, double* u, double* vt) {
    return LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', m, n, a, n, s, u, std::min(m, n), vt, n);
  }
  static lapack_int geqrf(int m, int n, double* a, double* tau) {
    return LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, a, n, tau);
  }
  static lapack_int orgqr(int m, int n, double* a, const double* tau) {
    return LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, n, n, a, n, tau);
  }
  // LQ of the column-major n x m matrix that row-major m x n `a` is (qr_in_place_impl).
  static lapack_int gelqf(int m, int n, double* a, double* tau) {
    return LAPACKE_dgelqf(LAPACK_COL_MAJOR, n, m, a, n, tau);
  }
  static lapack_int orglq(int m, int n, double* a, const double* tau) {
    return LAPACKE_dorglq(LAPACK_COL_MAJOR, n, m, n, a, n, tau);
  }
  static lapack_int potrf(int n, double* a) { return LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', n, a, n); }
  static lapack_int pstrf(int n, double* a, lapack_int* piv, lapack_int* rank, double tol) {
    return LAPACKE_dpstrf(LAPACK_ROW_MAJOR, 'L', n, a, n, piv, rank, tol);
  }
  static void trsm_right_upper(int m, int n, const double* r, double* b, bool trans) {
    cblas_dtrsm(CblasRowMajor, CblasRight, CblasUpper, trans ? CblasTrans : CblasNoTrans,
                CblasNonUnit, m, n, 1.0, r, n, b, n);
  }
};

template <> struct Lapack<float> {
  static lapack_int syevd(int n, float* a, float* w) {
    return LAPACKE_ssyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, a, n, w);
  }
  static lapack_int gesdd(int m, int n, float* a, float* s, float* u, float* vt) {
    return LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', m, n, a, n, s, u, std::min(m, n), vt, n);
  }
  static lapack_int geqrf(int m, int n, float* a, float* tau) {
    return LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, m, n, a, n, tau);
  }
  static lapack_int orgqr(int m, int n, float* a, const float* tau) {
    return LAPACKE_sorgqr(LAPACK_ROW_MAJOR, m, n, n, a, n, tau);
  }
  // LQ of the column-major n x m matrix that row-major m x n `a` is (qr_in_place_impl).
  static lapack_int gelqf(int m, int n, float* a, float* tau) {
    return LAPACKE_sgelqf(LAPACK_COL_MAJOR, n, m, a, n, tau);
  }
  static lapack_int orglq(int m, int n, float* a, const float* tau) {
    return LAPACKE_sorglq(LAPACK_COL_MAJOR, n, m, n, a, n, tau);
  }
  static lapack_int potrf(int n, float* a) { return LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'U', n, a, n); }
  static lapack_int pstrf(int n, float* a, lapack_int* piv, lapack_int* rank, float tol) {
    return LAPACKE_spstrf(LAPACK_ROW_MAJOR, 'L', n, a, n, piv, rank, tol);
  }
  static void trsm_right_upper(int m, int n, const float* r, float* b, bool trans) {
    cblas_strsm(CblasRowMajor, CblasRight, CblasUpper, trans ? CblasTrans : CblasNoTrans,
                CblasNonUnit, m, n, 1.0f, r, n, b, n);
  }
};

template <typename T> void syev_impl(int64_t n, T* a, T* w) {
  check_info(Lapack<T>::syevd(static_cast<int>(n), a, w), "syevd");
}

template <typename T> int64_t pivoted_cholesky_impl(int64_t n, T* a, T tol, int64_t* piv) {
  std::vector<lapack_int> p(static_cast<size_t>(n));
  lapack_int rank = 0;
  const lapack_int info = Lapack<T>::pstrf(static_cast<int>(n), a, p.data(), &rank, tol);
  if (info != 1) check_info(info, "pstrf");  // 1: stopped early (rank < n), as asked
  for (int64_t k = 0; k < n; ++k) piv[k] = p[static_cast<size_t>(k)] - 1;
  return rank;
}

template <typename T> void svd_impl(int64_t m, int64_t n, T* a, T* u, T* s, T* vt) {
  check_info(Lapack<T>::gesdd(static_cast<int>(m), static_cast<int>(n), a, s, u, vt), "gesdd");
}

template <typename T> void qr_impl(int64_t m, int64_t n, T* a, T* r) {
  if (m < n) throw internal_error("qr: the matrix must have at least as many rows as columns");
  std::vector<T> tau(static_cast<size_t>(n));
  check_info(Lapack<T>::geqrf(static_cast<int>(m), static_cast<int>(n), a, tau.data()), "geqrf");
  if (r != nullptr) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) r[i * n + j] = j >= i ? a[i * n + j] : T(0);
  }
  check_info(Lapack<T>::orgqr(static_cast<int>(m), static_cast<int>(n), a, tau.data()), "orgqr");
}

// Row-major A (m x n) is, read column-major, A^T (n x m); its LQ factorization A^T = L Q'
// gives A = Q'^T L^T, so Q = Q'^T, already in place as row-major: the same Householder
// steps as geqrf on A, without the transposed copies of A that LAPACKE makes for a
// row-major geqrf and orgqr.
template <typename T> void qr_in_place_impl(int64_t m, int64_t n, T* a) {
  if (m < n) throw internal_error("qr: the matrix must have at least as many rows as columns");
  std::vector<T> tau(static_cast<size_t>(n));
  check_info(Lapack<T>::gelqf(static_cast<int>(m), static_cast<int>(n), a, tau.data()), "gelqf");
  check_info(Lapack<T>::orglq(static_cast<int>(m), static_cast<int>(n), a, tau.data()), "orglq");
}

// X G = B  <=>  X = B G^-1. With G = R^T R (R upper): X R^T R = B, two triangular solves.
template <typename T> bool solve_spd_right_impl(int64_t n, const T* g, int64_t m, T* b) {
  std::vector<T> r(g, g + n * n);
  if (Lapack<T>::potrf(static_cast<int>(n), r.data()) == 0) {
    Lapack<T>::trsm_right_upper(static_cast<int>(m), static_cast<int>(n), r.data(), b, false);
    Lapack<T>::trsm_right_upper(static_cast<int>(m), static_cast<int>(n), r.data(), b, true);
    return true;
  }
  // Semi-definite or ill-conditioned: pseudo-inverse G+ = V diag(1/w) V^T.
  std::vector<T> v(g, g + n * n), w(static_cast<size_t>(n));
  syev_impl(n, v.data(), w.data());
  T wmax = n > 0 ? std::max(std::abs(w[n - 1]), std::abs(w[0])) : T(0);
  T cut = static_cast<T>(n) * std::numeric_limits<T>::epsilon() * wmax;
  std::vector<T> scaled(v);  // V diag(1/w)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) scaled[i * n + j] = w[j] > cut ? v[i * n + j] / w[j] : T(0);
  std::vector<T> pinv(static_cast<size_t>(n * n));
  gemm(Op::kNoTrans, Op::kTrans, n, n, n, T(1), scaled.data(), n, v.data(), n, T(0), pinv.data(), n);
  std::vector<T> x(static_cast<size_t>(m * n));
  gemm(Op::kNoTrans, Op::kNoTrans, m, n, n, T(1), b, n, pinv.data(), n, T(0), x.data(), n);
  std::copy(x.begin(), x.end(), b);
  return false;
}

template <typename T> void fill_lower_from_upper(int64_t n, T* c, int64_t ldc) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) c[i * ldc + j] = c[j * ldc + i];
}

}  // namespace

void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  CallThreads one;
  cblas_dgemm(CblasRowMajor, to_cblas(op_a), to_cblas(op_b), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  CallThreads one;
  cblas_sgemm(CblasRowMajor, to_cblas(op_a), to_cblas(op_b), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemv(Op op_a, int64_t m, int64_t n, double alpha, const double* a, int64_t lda,
          const double* x, double beta, double* y) {
  CallThreads one;
  cblas_dgemv(CblasRowMajor, to_cblas(op_a), m, n, alpha, a, lda, x, 1, beta, y, 1);
}
void gemv(Op op_a, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
          const float* x, float beta, float* y) {
  CallThreads one;
  cblas_sgemv(CblasRowMajor, to_cblas(op_a), m, n, alpha, a, lda, x, 1, beta, y, 1);
}

void syrk(Op op_a, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          double beta, double* c, int64_t ldc) {
  CallThreads one;
  cblas_dsyrk(CblasRowMajor, CblasUpper, to_cblas(op_a), n, k, alpha, a, lda, beta, c, ldc);
  fill_lower_from_upper(n, c, ldc);
}
void syrk(Op op_a, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          float beta, float* c, int64_t ldc) {
  CallThreads one;
  cblas_ssyrk(CblasRowMajor, CblasUpper, to_cblas(op_a), n, k, alpha, a, lda, beta, c, ldc);
  fill_lower_from_upper(n, c, ldc);
}

void syev(int64_t n, double* a, double* w) {
  CallThreads one;
  syev_impl(n, a, w);
}
void syev(int64_t n, float* a, float* w) {
  CallThreads one;
  syev_impl(n, a, w);
}
int64_t pivoted_cholesky(int64_t n, double* a, double tol, int64_t* piv) {
  CallThreads one;
  return pivoted_cholesky_impl(n, a, tol, piv);
}
int64_t pivoted_cholesky(int64_t n, float* a, float tol, int64_t* piv) {
  CallThreads one;
  return pivoted_cholesky_impl(n, a, tol, piv);
}
void svd(int64_t m, int64_t n, double* a, double* u, double* s, double* vt) {
  CallThreads one;
  svd_impl(m, n, a, u, s, vt);
}
void svd(int64_t m, int64_t n, float* a, float* u, float* s, float* vt) {
  CallThreads one;
  svd_impl(m, n, a, u, s, vt);
}
void qr(int64_t m, int64_t n, double* a, double* r) {
  CallThreads one;
  qr_impl(m, n, a, r);
}
void qr(int64_t m, int64_t n, float* a, float* r) {
  CallThreads one;
  qr_impl(m, n, a, r);
}

void qr_in_place(int64_t m, int64_t n, double* a) {
  CallThreads one;
  qr_in_place_impl(m, n, a);
}
void qr_in_place(int64_t m, int64_t n, float* a) {
  CallThreads one;
  qr_in_place_impl(m, n, a);
}

bool solve_spd_right(int64_t n, const double* g, int64_t m, double* b) {
  CallThreads one;
  return solve_spd_right_impl(n, g, m, b);
}
bool solve_spd_right(int64_t n, const float* g, int64_t m, float* b) {
  CallThreads one;
  return solve_spd_right_impl(n, g, m, b);
}

bool cholesky_right_solve(int64_t n, const double* g, int64_t m, double* b) {
  CallThreads one;
  std::vector<double> r(g, g + n * n);
  if (Lapack<double>::potrf(static_cast<int>(n), r.data()) != 0) return false;
  Lapack<double>::trsm_right_upper(static_cast<int>(m), static_cast<int>(n), r.data(), b, false);
  return true;
}

const char* blas_threading() {
  switch (openblas_get_parallel()) {
    case 0: return "serial";
    case 1: return "pthreads";
    default: return "openmp";
  }
}

}  // namespace tk::linalg
