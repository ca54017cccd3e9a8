// Dense linear algebra on a CUDA device: the cuBLAS and cuSOLVER handles of the current
// device bound to one stream, and thin typed wrappers over the calls the decompositions
// use, for float and double. Only CUDA builds compile this (TK_HAVE_CUDA).
//
// Unlike tk/linalg/blas.h, matrices here are column-major, as cuBLAS has them: a
// row-major m x n matrix with leading dimension ld is, to these calls, its n x m
// transpose with the same ld. All pointers are device memory; every call is queued on
// the handles' stream, and a failed status throws tk::Error (kRuntime, naming the call;
// kUnavailable when cuBLAS could not allocate). Sizes are 64-bit (cuBLAS's _64 API).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <cstdint>

#include "tk/linalg/blas.h"

namespace tk::linalg::cuda {

// A cuBLAS and a cuSOLVER handle of the current device, their work queued on `stream`
// (which must outlive them). cuBLAS's default math: float products never drop to TF32,
// so they round as the CPU's float BLAS does, to a different order of sums.
class Handles {
 public:
  explicit Handles(cudaStream_t stream);
  ~Handles();
  Handles(const Handles&) = delete;
  Handles& operator=(const Handles&) = delete;
  cublasHandle_t blas() const { return blas_; }
  cusolverDnHandle_t solver() const { return solver_; }
  cudaStream_t stream() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cusolverDnHandle_t solver_ = nullptr;
};

// C = alpha * op(A) * op(B) + beta * C; op(A) is m x k, op(B) is k x n, C is m x n.
void gemm(const Handles& h, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);
void gemm(const Handles& h, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// `batch` products as gemm's, matrix i of A, B and C starting at i times its stride
// (a stride of 0 uses the same matrix for every product).
void gemm_batched(const Handles& h, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double* a, int64_t lda, int64_t stride_a, const double* b, int64_t ldb, int64_t stride_b,
                  double beta, double* c, int64_t ldc, int64_t stride_c, int64_t batch);
void gemm_batched(const Handles& h, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b,
                  float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch);

// y = alpha * op(A) * x + beta * y; A is m x n (before op); unit strides.
void gemv(const Handles& h, Op op_a, int64_t m, int64_t n, double alpha, const double* a, int64_t lda,
          const double* x, double beta, double* y);
void gemv(const Handles& h, Op op_a, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
          const float* x, float beta, float* y);

// The lower triangle of C = alpha * op(A) * op(A)^T + beta * C, C n x n; op(A) is n x k
// (kNoTrans: C = A A^T, A n x k; kTrans: C = A^T A, A k x n). The upper triangle is
// left as it was.
void syrk_lower(const Handles& h, Op op_a, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                double beta, double* c, int64_t ldc);
void syrk_lower(const Handles& h, Op op_a, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                float beta, float* c, int64_t ldc);

// The Euclidean norm of n values (unit stride); waits for the stream.
double nrm2(const Handles& h, int64_t n, const double* x);
double nrm2(const Handles& h, int64_t n, const float* x);

// Thin QR of the m x n matrix `a` (m >= n, leading dimension m): on return `a` holds Q,
// m x n with orthonormal columns (geqrf, then orgqr). Waits for the stream to read
// cuSOLVER's status.
void qr(const Handles& h, int64_t m, int64_t n, double* a);
void qr(const Handles& h, int64_t m, int64_t n, float* a);

// Eigen-decomposition of the symmetric n x n matrix `a` (leading dimension n, only its
// lower triangle read), overwritten by the eigenvectors as columns; eigenvalues into
// the device array `w`, ascending. Divide and conquer (syevd); waits for the stream to
// read cuSOLVER's status (kRuntime when it did not converge).
void syevd(const Handles& h, int64_t n, double* a, double* w);
void syevd(const Handles& h, int64_t n, float* a, float* w);

}  // namespace tk::linalg::cuda
