#include "tk/decomp/cuda/modes.h"

#include <algorithm>
#include <cmath>

#include "tk/core/error.h"
#include "tk/decomp/modes.h"

namespace tk::decomp::cuda {

namespace {

using device::cuda::DeviceArray;
using linalg::Op;

// Values of slice Gram matrices a middle mode's batch may hold at once (256 MiB of
// doubles): the batch is summed into the result before the next one.
constexpr int64_t kBatchGramValues = int64_t(1) << 25;

template <typename T>
void mode_gram_any(const Gpu& gpu, const T* x, const std::vector<int64_t>& shape, size_t mode, T* gram) {
  const linalg::cuda::Handles& h = gpu.handles;
  const modes::ModeSplit s = modes::mode_split(shape, mode);
  if (s.left == 1) {  // one slice: X_(n) is S^T
    linalg::cuda::syrk_lower(h, Op::kTrans, s.dim, s.right, T(1), x, s.right, T(0), gram, s.dim);
  } else if (s.right == 1) {  // the last mode: X_(n) is the column-major dim x left matrix x
    linalg::cuda::syrk_lower(h, Op::kNoTrans, s.dim, s.left, T(1), x, s.dim, T(0), gram, s.dim);
  } else {
    // Slice Gram matrices S_l^T S_l in batches, each batch summed into gram as the
    // product of the batch (dim^2 x count, column-major) with a vector of ones.
    const int64_t square = s.dim * s.dim;
    const int64_t batch = std::clamp<int64_t>(kBatchGramValues / square, 1, s.left);
    const int64_t slice = s.dim * s.right;
    DeviceArray<T> grams(static_cast<size_t>(batch * square));
    const std::vector<T> host_ones(static_cast<size_t>(batch), T(1));
    DeviceArray<T> ones = to_device(host_ones.data(), host_ones.size(), gpu.stream);
    for (int64_t first = 0; first < s.left; first += batch) {
      const int64_t count = std::min(batch, s.left - first);
      const T* slices = x + first * slice;
      linalg::cuda::gemm_batched(h, Op::kTrans, Op::kNoTrans, s.dim, s.dim, s.right, T(1), slices, s.right, slice,
                                 slices, s.right, slice, T(0), grams.data(), s.dim, square, count);
      linalg::cuda::gemv(h, Op::kNoTrans, square, count, T(1), grams.data(), square, ones.data(),
                         first == 0 ? T(0) : T(1), gram);
    }
  }
  gpu.stream.synchronize();  // the batch buffers are freed on return
}

template <typename T>
void mode_project_any(const Gpu& gpu, const T* x, const std::vector<int64_t>& shape, size_t mode, const T* u,
                      int64_t rank, T* y) {
  const linalg::cuda::Handles& h = gpu.handles;
  const modes::ModeSplit s = modes::mode_split(shape, mode);
  // U row-major I_n x rank is, to cuBLAS, U^T: rank x I_n with leading dimension rank.
  if (s.right == 1) {
    // y (left x rank row-major) is, column-major, the rank x left product U^T X^T, where
    // X^T is x seen column-major (dim x left).
    linalg::cuda::gemm(h, Op::kNoTrans, Op::kNoTrans, rank, s.left, s.dim, T(1), u, rank, x, s.dim, T(0), y, rank);
  } else {
    // Each slice's projection, rank x right row-major, is column-major right x rank: S U.
    linalg::cuda::gemm_batched(h, Op::kNoTrans, Op::kTrans, s.right, rank, s.dim, T(1), x, s.right, s.dim * s.right,
                               u, rank, 0, T(0), y, s.right, rank * s.right, s.left);
  }
  gpu.stream.synchronize();  // callers free x, u or a factor's upload on return
}

template <typename T>
std::vector<T> leading_eigenvectors_any(const Gpu& gpu, int64_t n, T* sym, int64_t count,
                                        std::vector<double>* eigenvalues) {
  if (count < 0 || count > n) throw internal_error("leading_eigenvectors: count out of range");
  DeviceArray<T> w(static_cast<size_t>(n));
  linalg::cuda::syevd(gpu.handles, n, sym, w.data());  // ascending; eigenvector j is column j
  const std::vector<T> values = to_host(w.data(), static_cast<size_t>(n), gpu.stream);
  const std::vector<T> vectors = to_host(sym, static_cast<size_t>(n * n), gpu.stream);
  if (eigenvalues != nullptr) {
    eigenvalues->resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) (*eigenvalues)[static_cast<size_t>(j)] = values[static_cast<size_t>(n - 1 - j)];
  }
  // The CPU's sign rule (modes.cpp): the entry of largest magnitude is positive, the
  // first of equal ones deciding.
  std::vector<T> u(static_cast<size_t>(n * count));
  for (int64_t j = 0; j < count; ++j) {
    const T* column = vectors.data() + (n - 1 - j) * n;
    int64_t argmax = 0;
    for (int64_t i = 1; i < n; ++i)
      if (std::abs(column[i]) > std::abs(column[argmax])) argmax = i;
    const T sign = column[argmax] < 0 ? T(-1) : T(1);
    for (int64_t i = 0; i < n; ++i) u[i * count + j] = sign * column[i];
  }
  return u;
}

}  // namespace

void mode_gram(const Gpu& gpu, const double* x, const std::vector<int64_t>& shape, size_t mode, double* gram) {
  mode_gram_any(gpu, x, shape, mode, gram);
}
void mode_gram(const Gpu& gpu, const float* x, const std::vector<int64_t>& shape, size_t mode, float* gram) {
  mode_gram_any(gpu, x, shape, mode, gram);
}

void mode_project(const Gpu& gpu, const double* x, const std::vector<int64_t>& shape, size_t mode, const double* u,
                  int64_t rank, double* y) {
  mode_project_any(gpu, x, shape, mode, u, rank, y);
}
void mode_project(const Gpu& gpu, const float* x, const std::vector<int64_t>& shape, size_t mode, const float* u,
                  int64_t rank, float* y) {
  mode_project_any(gpu, x, shape, mode, u, rank, y);
}

std::vector<double> leading_eigenvectors(const Gpu& gpu, int64_t n, double* sym, int64_t count,
                                         std::vector<double>* eigenvalues) {
  return leading_eigenvectors_any(gpu, n, sym, count, eigenvalues);
}
std::vector<float> leading_eigenvectors(const Gpu& gpu, int64_t n, float* sym, int64_t count,
                                        std::vector<double>* eigenvalues) {
  return leading_eigenvectors_any(gpu, n, sym, count, eigenvalues);
}

}  // namespace tk::decomp::cuda
