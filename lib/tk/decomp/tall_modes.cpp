#include "tk/decomp/tall_modes.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "tk/core/error.h"
#include "tk/decomp/modes.h"
#include "tk/linalg/blas.h"

namespace tk::decomp::modes {
namespace {

using linalg::Op;

template <typename T> void unfolding_cogram_impl(const T* x, const std::vector<int64_t>& shape, size_t mode, T* gram) {
  const ModeSplit s = mode_split(shape, mode);
  const int64_t m = s.left * s.right;
  // The first and last modes are one matrix: mode_gram splits it among threads.
  if (s.left == 1) return mode_gram(x, {s.dim, s.right}, 1, gram);
  if (s.right == 1) return mode_gram(x, {s.left, s.dim}, 0, gram);
  // Block (l, k) of the result is A_l^T A_k for slices A_l (I_n x right): the upper
  // blocks in parallel, one BLAS thread each, then mirrored.
  std::vector<std::pair<int64_t, int64_t>> blocks;
  for (int64_t l = 0; l < s.left; ++l)
    for (int64_t k = l; k < s.left; ++k) blocks.emplace_back(l, k);
  const int64_t slice = s.dim * s.right;
  const int threads = loop_threads(static_cast<int64_t>(blocks.size()));
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (size_t b = 0; b < blocks.size(); ++b) {
    const auto [l, k] = blocks[b];
    linalg::gemm(Op::kTrans, Op::kNoTrans, s.right, s.right, s.dim, T(1), x + l * slice, s.right, x + k * slice,
                 s.right, T(0), gram + l * s.right * m + k * s.right, m);
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < i; ++j) gram[i * m + j] = gram[j * m + i];
}

// y (I_n x count, leading dimension ldy) = X_(n) V for V (m x count, leading dimension
// ldv): the sum over slices of A_l V_l, by blocks of rows in parallel.
template <typename T>
void unfolding_times(const T* x, const ModeSplit& s, const T* v, int64_t ldv, int64_t count, T* y, int64_t ldy) {
  constexpr int64_t kRows = 1024;
  const int64_t blocks = (s.dim + kRows - 1) / kRows;
  const int threads = loop_threads(blocks);
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t first = b * kRows, rows = std::min(kRows, s.dim - first);
    for (int64_t l = 0; l < s.left; ++l)
      linalg::gemm(Op::kNoTrans, Op::kNoTrans, rows, count, s.right, T(1), x + (l * s.dim + first) * s.right, s.right,
                   v + l * s.right * ldv, ldv, l == 0 ? T(0) : T(1), y + first * ldy, ldy);
  }
}

// Below this ratio of the smallest to the largest squared column norm, Cholesky QR's
// columns lose orthogonality (its error grows with the condition number squared):
// condition numbers up to 1e5, where two passes give orthonormal columns to rounding.
constexpr double kCholeskyQrMinRatio = 1e-10;

// Q of y (rows x cols, row-major, in place) by Cholesky QR twice: Q = Y R^-1 with
// R^T R = Y^T Y, then once more on Q. In place and all level-3 BLAS, faster than
// Householder QR without LAPACKE's row-major copies. False, with y unchanged, when y's
// columns are too far from full rank for it (columns past the unfolding's rank are zero).
bool cholesky_qr2(int64_t rows, int64_t cols, double* y) {
  std::vector<double> gram(static_cast<size_t>(cols * cols));
  for (int pass = 0; pass < 2; ++pass) {
    linalg::syrk(Op::kTrans, cols, rows, 1.0, y, cols, 0.0, gram.data(), cols);
    if (pass == 0) {
      double lo = gram[0], hi = gram[0];
      for (int64_t j = 0; j < cols; ++j) lo = std::min(lo, gram[j * cols + j]), hi = std::max(hi, gram[j * cols + j]);
      if (!(lo > kCholeskyQrMinRatio * hi)) return false;
    }
    if (!linalg::cholesky_right_solve(cols, gram.data(), rows, y)) {
      if (pass == 0) return false;
      break;  // y is already orthonormal to about kCholeskyQrMinRatio^-1/2 * eps
    }
  }
  return true;
}

template <typename T>
std::vector<T> tall_mode_basis_impl(const T* x, const std::vector<int64_t>& shape, size_t mode,
                                    const std::vector<T>& vectors, int64_t rank) {
  const ModeSplit s = mode_split(shape, mode);
  const int64_t m = s.left * s.right;
  if (rank < 1 || rank > s.dim || static_cast<int64_t>(vectors.size()) != m * m)
    throw internal_error("tall_mode_basis: rank or eigenvectors out of range");
  // X_(n) V_r has orthogonal columns of norms sigma_j; QR makes them orthonormal. Zero
  // columns (past m) stay zero here and Householder QR still returns orthonormal ones.
  std::vector<T> q(static_cast<size_t>(s.dim * rank), T(0));
  unfolding_times(x, s, vectors.data(), m, std::min(rank, m), q.data(), rank);
  // In f64 the factor is twice an f32 tensor, and qr()'s copy of it would be the peak;
  // in f32 the peak stays under 4x the tensor with the faster qr().
  if constexpr (std::is_same_v<T, double>) {
    if (!cholesky_qr2(s.dim, rank, q.data())) linalg::qr_in_place(s.dim, rank, q.data());
  } else {
    linalg::qr(s.dim, rank, q.data(), nullptr);
  }
  for (int64_t j = 0; j < rank; ++j) {
    int64_t argmax = 0;
    for (int64_t i = 1; i < s.dim; ++i)
      if (std::abs(q[i * rank + j]) > std::abs(q[argmax * rank + j])) argmax = i;
    if (q[argmax * rank + j] < 0)
      for (int64_t i = 0; i < s.dim; ++i) q[i * rank + j] = -q[i * rank + j];
  }
  return q;
}

}  // namespace

bool is_tall_mode(const std::vector<int64_t>& shape, size_t mode) {
  const ModeSplit s = mode_split(shape, mode);
  return s.dim > s.left * s.right;
}

void unfolding_cogram(const double* x, const std::vector<int64_t>& shape, size_t mode, double* gram) {
  unfolding_cogram_impl(x, shape, mode, gram);
}
void unfolding_cogram(const float* x, const std::vector<int64_t>& shape, size_t mode, float* gram) {
  unfolding_cogram_impl(x, shape, mode, gram);
}

std::vector<double> tall_mode_basis(const double* x, const std::vector<int64_t>& shape, size_t mode,
                                    const std::vector<double>& vectors, int64_t rank) {
  return tall_mode_basis_impl(x, shape, mode, vectors, rank);
}
std::vector<float> tall_mode_basis(const float* x, const std::vector<int64_t>& shape, size_t mode,
                                   const std::vector<float>& vectors, int64_t rank) {
  return tall_mode_basis_impl(x, shape, mode, vectors, rank);
}

}  // namespace tk::decomp::modes
