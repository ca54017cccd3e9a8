// Dense linear algebra on the CPU: thin, typed wrappers over OpenBLAS (CBLAS) and
// LAPACKE, for float and double. Matrices are row-major with an explicit leading
// dimension, as in CBLAS. Nothing here is hand-written arithmetic: every routine is one
// BLAS or LAPACK call (plus the workspace it needs). Errors (a LAPACK info != 0) throw
// tk::Error of kind kRuntime naming the routine.
#pragma once

#include <cstdint>
#include <vector>

namespace tk::linalg {

enum class Op { kNoTrans, kTrans };

// C = alpha * op(A) * op(B) + beta * C; op(A) is m x k, op(B) is k x n, C is m x n.
void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);
void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// y = alpha * op(A) * x + beta * y; A is m x n (before op).
void gemv(Op op_a, int64_t m, int64_t n, double alpha, const double* a, int64_t lda,
          const double* x, double beta, double* y);
void gemv(Op op_a, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
          const float* x, float beta, float* y);

// Upper and lower triangle of C = alpha * op(A) * op(A)^T + beta * C, C is n x n; op(A)
// is n x k. kNoTrans: A is n x k (C = A A^T); kTrans: A is k x n (C = A^T A). Both
// triangles are filled on return.
void syrk(Op op_a, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          double beta, double* c, int64_t ldc);
void syrk(Op op_a, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          float beta, float* c, int64_t ldc);

// Eigen-decomposition of the symmetric n x n matrix `a` (row-major, overwritten by the
// eigenvectors as columns: a[i*n + j] is component i of eigenvector j). Eigenvalues in
// `w`, ascending. Divide and conquer (syevd).
void syev(int64_t n, double* a, double* w);
void syev(int64_t n, float* a, float* w);

// Pivoted Cholesky of the symmetric positive semi-definite n x n matrix `a` (row-major,
// destroyed), stopped at the first pivot <= tol: P^T A P ~ L L^T with L n x rank. Returns
// the rank; L is in the first `rank` columns of `a`'s lower triangle (leading dimension
// n; other entries are left over, not zeroed) and piv[k] (0-based, n entries) is the row
// of A that became row k. Every diagonal entry of the remaining Schur complement is
// <= tol (pstrf).
int64_t pivoted_cholesky(int64_t n, double* a, double tol, int64_t* piv);
int64_t pivoted_cholesky(int64_t n, float* a, float tol, int64_t* piv);

// Thin SVD of the m x n matrix `a` (destroyed): a = U diag(s) Vt with U m x p, s p,
// Vt p x n, p = min(m, n). Divide and conquer (gesdd).
void svd(int64_t m, int64_t n, double* a, double* u, double* s, double* vt);
void svd(int64_t m, int64_t n, float* a, float* u, float* s, float* vt);

// Thin QR of the m x n matrix `a`, m >= n: on return `a` holds Q (m x n, orthonormal
// columns) and `r` (n x n, upper triangular) holds R. `r` may be null.
void qr(int64_t m, int64_t n, double* a, double* r);
void qr(int64_t m, int64_t n, float* a, float* r);
// Q of the thin QR of `a` as qr() gives it, without the transient copy of `a` that
// qr() makes (row-major LAPACKE): for a tall factor as large as a tensor. Slower on
// tall matrices (its panels read rows with a stride: 1.7x qr()'s time in f32 on a
// 30522 x 384 matrix).
void qr_in_place(int64_t m, int64_t n, double* a);
void qr_in_place(int64_t m, int64_t n, float* a);

// Solve X * G = B for X where G is n x n symmetric positive semi-definite and B is
// m x n (row-major, overwritten by X): the ALS normal equations. Cholesky (potrf/potrs)
// when G is positive definite; otherwise a pseudo-inverse through syev with eigenvalues
// below n * eps * max(eig) dropped. Returns false when the fallback was used.
bool solve_spd_right(int64_t n, const double* g, int64_t m, double* b);
bool solve_spd_right(int64_t n, const float* g, int64_t m, float* b);

// B := B R^-1, where G = R^T R is the Cholesky factorisation of the n x n symmetric
// matrix G and B is m x n (row-major): with G = B^T B, the Q of B's Cholesky QR, which
// needs only B's Gram matrix (and so suits rows spread over processes). Returns false,
// B unchanged, when G is not positive definite.
bool cholesky_right_solve(int64_t n, const double* g, int64_t m, double* b);

// How the linked BLAS runs its calls in parallel: "openmp" (the build the project links:
// on OpenMP's threads, one inside a parallel region), "pthreads" (a pool of its own) or
// "serial".
const char* blas_threading();

// For its scope on this thread: every BLAS and LAPACK call above runs on the calling
// thread alone, also outside a parallel region. For code whose parallel work is its own
// OpenMP loops and whose other calls are too small to share (CP-ALS's R x R solves):
// there a call on OpenMP's threads forks a team per call (2x slower per CP iteration on
// 2 threads). Nests; the OpenMP thread count of the code's own loops is untouched.
class SerialBlas {
 public:
  SerialBlas();
  ~SerialBlas();
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

}  // namespace tk::linalg
