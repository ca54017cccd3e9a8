#include "tk/linalg/cuda/blas.h"

#include <algorithm>
#include <climits>
#include <string>

#include "tk/core/error.h"
#include "tk/device/cuda/runtime.h"

namespace tk::linalg::cuda {

namespace {

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw unavailable(std::string("out of GPU memory (") + what + ")");
  throw runtime_error(std::string("cuBLAS: ") + what + ": " + cublasGetStatusString(status));
}

void check(cusolverStatus_t status, const char* what) {
  if (status == CUSOLVER_STATUS_SUCCESS) return;
  if (status == CUSOLVER_STATUS_ALLOC_FAILED) throw unavailable(std::string("out of GPU memory (") + what + ")");
  throw runtime_error(std::string("cuSOLVER: ") + what + ": status " + std::to_string(static_cast<int>(status)));
}

cublasOperation_t op_of(Op op) { return op == Op::kTrans ? CUBLAS_OP_T : CUBLAS_OP_N; }

// cuSOLVER's dense eigensolver takes int sizes.
int int_size(int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX) throw unavailable(std::string(what) + ": a matrix too large for cuSOLVER");
  return static_cast<int>(n);
}

// Read cuSOLVER's devInfo (waiting for the stream): 0, or the routine failed.
void check_info(const Handles& h, const int* info, const char* what) {
  int host_info = 0;
  device::cuda::check(cudaMemcpyAsync(&host_info, info, sizeof(int), cudaMemcpyDeviceToHost, h.stream()), what);
  device::cuda::check(cudaStreamSynchronize(h.stream()), what);
  if (host_info < 0) throw runtime_error(std::string(what) + ": argument " + std::to_string(-host_info) + " was invalid");
  if (host_info > 0)
    throw runtime_error(std::string(what) + ": " + std::to_string(host_info) + " off-diagonal elements did not converge");
}

template <typename T, typename GeqrfSize, typename Geqrf, typename OrgqrSize, typename Orgqr>
void qr_any(const Handles& h, int64_t m64, int64_t n64, T* a, GeqrfSize geqrf_size, Geqrf geqrf, OrgqrSize orgqr_size,
            Orgqr orgqr) {
  const int m = int_size(m64, "geqrf"), n = int_size(n64, "geqrf");
  if (m < n) throw internal_error("qr: fewer rows than columns");
  device::cuda::DeviceArray<T> tau(static_cast<size_t>(n));
  device::cuda::DeviceArray<int> info(1);
  int lwork_qr = 0, lwork_q = 0;
  check(geqrf_size(h.solver(), m, n, a, m, &lwork_qr), "geqrf_bufferSize");
  check(orgqr_size(h.solver(), m, n, n, a, m, tau.data(), &lwork_q), "orgqr_bufferSize");
  device::cuda::DeviceArray<T> work(static_cast<size_t>(std::max(lwork_qr, lwork_q)));
  check(geqrf(h.solver(), m, n, a, m, tau.data(), work.data(), lwork_qr, info.data()), "geqrf");
  check_info(h, info.data(), "geqrf");
  check(orgqr(h.solver(), m, n, n, a, m, tau.data(), work.data(), lwork_q, info.data()), "orgqr");
  check_info(h, info.data(), "orgqr");
}

template <typename T, typename BufferSize, typename Solve>
void syevd_any(const Handles& h, int64_t n64, T* a, T* w, BufferSize buffer_size, Solve solve, const char* what) {
  const int n = int_size(n64, what);
  int lwork = 0;
  check(buffer_size(h.solver(), CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, a, n, w, &lwork), what);
  device::cuda::DeviceArray<T> work(static_cast<size_t>(lwork));
  device::cuda::DeviceArray<int> info(1);
  check(solve(h.solver(), CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, a, n, w, work.data(), lwork,
              info.data()),
        what);
  check_info(h, info.data(), what);
}

}  // namespace

Handles::Handles(cudaStream_t stream) : stream_(stream) {
  check(cublasCreate(&blas_), "cublasCreate");
  // From here on the destructor does not run if a step throws: free what was made.
  try {
    check(cublasSetStream(blas_, stream), "cublasSetStream");
    check(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(cusolverDnCreate(&solver_), "cusolverDnCreate");
    check(cusolverDnSetStream(solver_, stream), "cusolverDnSetStream");
  } catch (...) {
    if (solver_) cusolverDnDestroy(solver_);
    cublasDestroy(blas_);
    throw;
  }
}

Handles::~Handles() {
  cusolverDnDestroy(solver_);
  cublasDestroy(blas_);
}

void gemm(const Handles& h, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  check(cublasDgemm_64(h.blas(), op_of(op_a), op_of(op_b), m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc),
        "cublasDgemm");
}
void gemm(const Handles& h, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  check(cublasSgemm_64(h.blas(), op_of(op_a), op_of(op_b), m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc),
        "cublasSgemm");
}

void gemm_batched(const Handles& h, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double* a, int64_t lda, int64_t stride_a, const double* b, int64_t ldb, int64_t stride_b,
                  double beta, double* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  check(cublasDgemmStridedBatched_64(h.blas(), op_of(op_a), op_of(op_b), m, n, k, &alpha, a, lda, stride_a, b, ldb,
                                     stride_b, &beta, c, ldc, stride_c, batch),
        "cublasDgemmStridedBatched");
}
void gemm_batched(const Handles& h, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b,
                  float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  check(cublasSgemmStridedBatched_64(h.blas(), op_of(op_a), op_of(op_b), m, n, k, &alpha, a, lda, stride_a, b, ldb,
                                     stride_b, &beta, c, ldc, stride_c, batch),
        "cublasSgemmStridedBatched");
}

void gemv(const Handles& h, Op op_a, int64_t m, int64_t n, double alpha, const double* a, int64_t lda,
          const double* x, double beta, double* y) {
  check(cublasDgemv_64(h.blas(), op_of(op_a), m, n, &alpha, a, lda, x, 1, &beta, y, 1), "cublasDgemv");
}
void gemv(const Handles& h, Op op_a, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
          const float* x, float beta, float* y) {
  check(cublasSgemv_64(h.blas(), op_of(op_a), m, n, &alpha, a, lda, x, 1, &beta, y, 1), "cublasSgemv");
}

void syrk_lower(const Handles& h, Op op_a, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                double beta, double* c, int64_t ldc) {
  check(cublasDsyrk_64(h.blas(), CUBLAS_FILL_MODE_LOWER, op_of(op_a), n, k, &alpha, a, lda, &beta, c, ldc),
        "cublasDsyrk");
}
void syrk_lower(const Handles& h, Op op_a, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                float beta, float* c, int64_t ldc) {
  check(cublasSsyrk_64(h.blas(), CUBLAS_FILL_MODE_LOWER, op_of(op_a), n, k, &alpha, a, lda, &beta, c, ldc),
        "cublasSsyrk");
}

double nrm2(const Handles& h, int64_t n, const double* x) {
  double norm = 0;
  check(cublasDnrm2_64(h.blas(), n, x, 1, &norm), "cublasDnrm2");
  return norm;
}
double nrm2(const Handles& h, int64_t n, const float* x) {
  float norm = 0;
  check(cublasSnrm2_64(h.blas(), n, x, 1, &norm), "cublasSnrm2");
  return norm;
}

void qr(const Handles& h, int64_t m, int64_t n, double* a) {
  qr_any(h, m, n, a, cusolverDnDgeqrf_bufferSize, cusolverDnDgeqrf, cusolverDnDorgqr_bufferSize, cusolverDnDorgqr);
}
void qr(const Handles& h, int64_t m, int64_t n, float* a) {
  qr_any(h, m, n, a, cusolverDnSgeqrf_bufferSize, cusolverDnSgeqrf, cusolverDnSorgqr_bufferSize, cusolverDnSorgqr);
}

void syevd(const Handles& h, int64_t n, double* a, double* w) {
  syevd_any(h, n, a, w, cusolverDnDsyevd_bufferSize, cusolverDnDsyevd, "cusolverDnDsyevd");
}
void syevd(const Handles& h, int64_t n, float* a, float* w) {
  syevd_any(h, n, a, w, cusolverDnSsyevd_bufferSize, cusolverDnSsyevd, "cusolverDnSsyevd");
}

}  // namespace tk::linalg::cuda
