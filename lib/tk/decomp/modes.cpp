// Dense mode operations (see modes.h).
#include "tk/decomp/modes.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tk/core/error.h"

namespace tk::decomp::modes {
namespace {

using linalg::Op;

// Slices narrower than this many columns are gathered side by side into panels of about
// this width, so that each BLAS call has enough columns to run at full speed.
constexpr int64_t kPanelColumns = 256;

int64_t slices_per_panel(int64_t right) { return right >= kPanelColumns ? 1 : kPanelColumns / right; }

// Copy slices [first, first + count) of x (each dim x right) side by side into `panel`
// (dim x count*right).
template <typename T>
void gather_slices(const T* x, const ModeSplit& s, int64_t first, int64_t count, T* panel) {
  const int64_t width = count * s.right;
  for (int64_t l = 0; l < count; ++l)
    for (int64_t i = 0; i < s.dim; ++i)
      std::copy_n(x + ((first + l) * s.dim + i) * s.right, s.right, panel + i * width + l * s.right);
}

// The piece [t/threads, (t+1)/threads) of `count` items.
inline int64_t split_begin(int64_t count, int t, int threads) { return count * t / threads; }

// Sum of the per-thread partial Gram matrices (n x n each, thread 0's is `gram`), added
// in thread order.
template <typename T> void add_partials(const std::vector<T>& partial, int threads, int64_t n, T* gram) {
  for (int t = 1; t < threads; ++t) {
    const T* p = partial.data() + (t - 1) * n * n;
    for (int64_t i = 0; i < n * n; ++i) gram[i] += p[i];
  }
}

// X X^T (or X^T X when `transposed`) of a dense rows x cols matrix, its columns (rows)
// split among the threads, each adding its range's Gram matrix to its own partial sum.
template <typename T> void matrix_gram(const T* x, int64_t rows, int64_t cols, bool transposed, T* gram) {
  const int64_t n = transposed ? cols : rows, k = transposed ? rows : cols;
  const int threads = loop_threads(k / kPanelColumns);
  if (threads == 1) {
    linalg::syrk(transposed ? Op::kTrans : Op::kNoTrans, n, k, T(1), x, cols, T(0), gram, n);
    return;
  }
  std::vector<T> partial(static_cast<size_t>(threads - 1) * n * n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    T* acc = t == 0 ? gram : partial.data() + (t - 1) * n * n;
    const int64_t begin = split_begin(k, t, threads), end = split_begin(k, t + 1, threads);
    if (transposed)
      linalg::syrk(Op::kTrans, n, end - begin, T(1), x + begin * cols, cols, T(0), acc, n);
    else
      linalg::syrk(Op::kNoTrans, n, end - begin, T(1), x + begin, cols, T(0), acc, n);
  }
  add_partials(partial, threads, n, gram);
}

template <typename T>
void mode_gram_impl(const T* x, const std::vector<int64_t>& shape, size_t mode, T* gram) {
  const ModeSplit s = mode_split(shape, mode);
  const int64_t n = s.dim;
  if (s.right == 1) return matrix_gram(x, s.left, n, true, gram);  // X is left x I_n
  if (s.left == 1) return matrix_gram(x, n, s.right, false, gram);  // X is I_n x right
  // Sum of the slices' (or panels') Gram matrices: each thread accumulates a contiguous
  // range of panels in its own matrix; the partial sums are added in thread order.
  const int64_t per_panel = slices_per_panel(s.right);
  const int64_t panels = (s.left + per_panel - 1) / per_panel;
  const int threads = loop_threads(panels);
  std::vector<T> partial(static_cast<size_t>(threads - 1) * n * n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    T* acc = t == 0 ? gram : partial.data() + (t - 1) * n * n;
    std::fill(acc, acc + n * n, T(0));
    std::vector<T> panel(per_panel > 1 ? static_cast<size_t>(n * per_panel * s.right) : 0);
    for (int64_t p = split_begin(panels, t, threads); p < split_begin(panels, t + 1, threads); ++p) {
      const int64_t first = p * per_panel, count = std::min(per_panel, s.left - first);
      if (per_panel == 1) {
        linalg::syrk(Op::kNoTrans, n, s.right, T(1), x + first * n * s.right, s.right, T(1), acc, n);
      } else {
        gather_slices(x, s, first, count, panel.data());
        linalg::syrk(Op::kNoTrans, n, count * s.right, T(1), panel.data(), count * s.right, T(1), acc, n);
      }
    }
  }
  add_partials(partial, threads, n, gram);
}

// Y = op(M) X for X dim x cols (leading dimension ldx), Y rows x cols (ldy), the
// columns split among the threads.
template <typename T>
void product_by_columns(const T* m, Op op, int64_t ldm, int64_t rows, int64_t dim, const T* x, int64_t cols,
                        int64_t ldx, T* y, int64_t ldy) {
  const int threads = loop_threads(cols / kPanelColumns);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = split_begin(cols, t, threads), end = split_begin(cols, t + 1, threads);
    linalg::gemm(op, Op::kNoTrans, rows, end - begin, dim, T(1), m, ldm, x + begin, ldx, T(0), y + begin, ldy);
  }
}

template <typename T>
void mode_product_impl(const T* x, const std::vector<int64_t>& shape, size_t mode, const T* m, Op op,
                       int64_t rows, T* y) {
  const ModeSplit s = mode_split(shape, mode);
  const int64_t ldm = op == Op::kNoTrans ? s.dim : rows;
  if (s.right == 1) {  // X is left x I_n: Y = X op(M)^T, the rows of X split among the threads.
    const Op flipped = op == Op::kNoTrans ? Op::kTrans : Op::kNoTrans;
    const int threads = loop_threads(s.left / kPanelColumns);
  #pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = split_begin(s.left, t, threads), end = split_begin(s.left, t + 1, threads);
      linalg::gemm(Op::kNoTrans, flipped, end - begin, rows, s.dim, T(1), x + begin * s.dim, s.dim, m, ldm, T(0),
                   y + begin * rows, rows);
    }
    return;
  }
  if (s.left == 1) return product_by_columns(m, op, ldm, rows, s.dim, x, s.right, s.right, y, s.right);
  // Every slice: Y_l (rows x right) = op(M) X_l; narrow slices go through panels
  // (gathered, multiplied, scattered back).
  const int64_t per_panel = slices_per_panel(s.right);
  const int64_t panels = (s.left + per_panel - 1) / per_panel;
  const int threads = loop_threads(panels);
#pragma omp parallel num_threads(threads)
  {
    std::vector<T> in(per_panel > 1 ? static_cast<size_t>(s.dim * per_panel * s.right) : 0);
    std::vector<T> out(per_panel > 1 ? static_cast<size_t>(rows * per_panel * s.right) : 0);
#pragma omp for schedule(static)
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t first = p * per_panel, count = std::min(per_panel, s.left - first);
      if (per_panel == 1) {
        linalg::gemm(op, Op::kNoTrans, rows, s.right, s.dim, T(1), m, ldm, x + first * s.dim * s.right, s.right,
                     T(0), y + first * rows * s.right, s.right);
        continue;
      }
      const int64_t width = count * s.right;
      gather_slices(x, s, first, count, in.data());
      linalg::gemm(op, Op::kNoTrans, rows, width, s.dim, T(1), m, ldm, in.data(), width, T(0), out.data(), width);
      for (int64_t l = 0; l < count; ++l)
        for (int64_t a = 0; a < rows; ++a)
          std::copy_n(&out[a * width + l * s.right], s.right, y + ((first + l) * rows + a) * s.right);
    }
  }
}

// Sum of squares of a short run in eight independent lanes (vectorisable, and a fixed
// order of operations).
template <typename T> double sum_squares_run(const T* x, int64_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += static_cast<double>(x[i + l]) * static_cast<double>(x[i + l]);
  double s = 0;
  for (; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  for (double v : lane) s += v;
  return s;
}

// The same over the entries with a nonzero mask byte: a masked-out entry adds an exact
// 0 (never 0 * NaN), so the lanes and the order of operations are those of the unmasked run.
template <typename T> double masked_sum_squares_run(const T* x, const uint8_t* mask, int64_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) {
      const double v = mask[i + l] ? static_cast<double>(x[i + l]) : 0.0;
      lane[l] += v * v;
    }
  double s = 0;
  for (; i < n; ++i) {
    const double v = mask[i] ? static_cast<double>(x[i]) : 0.0;
    s += v * v;
  }
  for (double v : lane) s += v;
  return s;
}

template <typename T> double sum_squares_impl(const T* x, const uint8_t* mask, int64_t n) {
  auto run = [&](int64_t first, int64_t count) {
    return mask ? masked_sum_squares_run(x + first, mask + first, count) : sum_squares_run(x + first, count);
  };
  // Fixed blocks keep the rounding independent of the thread count.
  constexpr int64_t kBlock = 4096;
  if (n <= kBlock) return run(0, n);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> block_sums(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(static) if (n > (int64_t(1) << 18))
  for (int64_t b = 0; b < blocks; ++b) block_sums[static_cast<size_t>(b)] = run(b * kBlock, std::min(kBlock, n - b * kBlock));
  double total = 0;
  for (double s : block_sums) total += s;
  return total;
}

// Values per leaf of the pairwise tree: 16 lanes of at most 16 terms each, joined
// pairwise, plus the sum of the last n % 16 values (at most 15 terms) added at the end.
// The joins are spelled out, and the leaf kept out of line (inlined into the recursion
// GCC spills the lanes to the stack), so that the lanes stay in registers.
constexpr int64_t kPairwiseLanes = 16;
constexpr int64_t kPairwiseRun = kPairwiseLanes * 16;

template <typename T> [[gnu::noinline]] double pairwise_run(const T* x, int64_t n) {
  double lane[kPairwiseLanes];
  for (int64_t l = 0; l < kPairwiseLanes; ++l) lane[l] = 0;
  int64_t i = 0;
  for (; i + kPairwiseLanes <= n; i += kPairwiseLanes)
    for (int64_t l = 0; l < kPairwiseLanes; ++l)
      lane[l] += static_cast<double>(x[i + l]) * static_cast<double>(x[i + l]);
  double rest = 0;
  for (; i < n; ++i) rest += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  double half[kPairwiseLanes / 2];
  for (int64_t l = 0; l < kPairwiseLanes / 2; ++l) half[l] = lane[l] + lane[l + kPairwiseLanes / 2];
  const double q0 = half[0] + half[4], q1 = half[1] + half[5], q2 = half[2] + half[6], q3 = half[3] + half[7];
  return ((q0 + q2) + (q1 + q3)) + rest;
}

template <typename T> double sum_squares_pairwise_impl(const T* x, int64_t n) {
  if (n <= kPairwiseRun) return pairwise_run(x, n);
  const int64_t runs = (n + kPairwiseRun - 1) / kPairwiseRun;
  const int64_t half = (runs + 1) / 2 * kPairwiseRun;
  return sum_squares_pairwise_impl(x, half) + sum_squares_pairwise_impl(x + half, n - half);
}

template <typename T>
std::vector<T> leading_eigenvectors_impl(int64_t n, T* sym, int64_t count, std::vector<double>* eigenvalues) {
  if (count < 0 || count > n) throw internal_error("leading_eigenvectors: count out of range");
  std::vector<T> w(static_cast<size_t>(n));
  linalg::syev(n, sym, w.data());  // ascending; eigenvector j is column j
  if (eigenvalues != nullptr) {
    eigenvalues->resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) (*eigenvalues)[static_cast<size_t>(j)] = w[static_cast<size_t>(n - 1 - j)];
  }
  std::vector<T> u(static_cast<size_t>(n * count));
  for (int64_t j = 0; j < count; ++j) {
    const int64_t src = n - 1 - j;
    int64_t argmax = 0;
    for (int64_t i = 1; i < n; ++i)
      if (std::abs(sym[i * n + src]) > std::abs(sym[argmax * n + src])) argmax = i;
    const T sign = sym[argmax * n + src] < 0 ? T(-1) : T(1);
    for (int64_t i = 0; i < n; ++i) u[i * count + j] = sign * sym[i * n + src];
  }
  return u;
}

template <typename T> double trace_impl(int64_t n, const T* a) {
  double t = 0;
  for (int64_t i = 0; i < n; ++i) t += static_cast<double>(a[i * n + i]);
  return t;
}

}  // namespace

int parallel_threads() { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

int loop_threads(int64_t count) {
  const int threads = parallel_threads();
  return count >= threads ? threads : 1;
}

ModeSplit mode_split(const std::vector<int64_t>& shape, size_t mode) {
  if (mode >= shape.size()) throw internal_error("mode_split: mode out of range");
  ModeSplit s;
  for (size_t i = 0; i < mode; ++i) s.left *= shape[i];
  s.dim = shape[mode];
  for (size_t i = mode + 1; i < shape.size(); ++i) s.right *= shape[i];
  return s;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

void mode_gram(const double* x, const std::vector<int64_t>& shape, size_t mode, double* gram) {
  mode_gram_impl(x, shape, mode, gram);
}
void mode_gram(const float* x, const std::vector<int64_t>& shape, size_t mode, float* gram) {
  mode_gram_impl(x, shape, mode, gram);
}
void mode_product(const double* x, const std::vector<int64_t>& shape, size_t mode, const double* m, Op op,
                  int64_t rows, double* y) {
  mode_product_impl(x, shape, mode, m, op, rows, y);
}
void mode_product(const float* x, const std::vector<int64_t>& shape, size_t mode, const float* m, Op op,
                  int64_t rows, float* y) {
  mode_product_impl(x, shape, mode, m, op, rows, y);
}
double sum_squares(const double* x, int64_t n) { return sum_squares_impl(x, nullptr, n); }
double sum_squares(const float* x, int64_t n) { return sum_squares_impl(x, nullptr, n); }
double sum_squares(const double* x, const uint8_t* mask, int64_t n) { return sum_squares_impl(x, mask, n); }
double sum_squares(const float* x, const uint8_t* mask, int64_t n) { return sum_squares_impl(x, mask, n); }
double sum_squares_pairwise(const double* x, int64_t n) { return sum_squares_pairwise_impl(x, n); }
double sum_squares_pairwise(const float* x, int64_t n) { return sum_squares_pairwise_impl(x, n); }

int sum_squares_pairwise_depth(int64_t n) {
  // A leaf: the squaring, at most 16 additions in a lane, four joining the lanes and one
  // adding the rest (whose own at most 15 terms pass through fewer).
  int depth = 22;
  for (int64_t runs = (n + kPairwiseRun - 1) / kPairwiseRun; runs > 1; runs = (runs + 1) / 2) ++depth;
  return depth;
}

std::vector<double> leading_eigenvectors(int64_t n, double* sym, int64_t count, std::vector<double>* eigenvalues) {
  return leading_eigenvectors_impl(n, sym, count, eigenvalues);
}
std::vector<float> leading_eigenvectors(int64_t n, float* sym, int64_t count, std::vector<double>* eigenvalues) {
  return leading_eigenvectors_impl(n, sym, count, eigenvalues);
}

void validate_dense_shape(const std::vector<int64_t>& shape, const char* what) {
  if (shape.size() < 2)
    throw invalid_input(std::string(what) + " needs a tensor of order 2 or more (got order " +
                        std::to_string(shape.size()) + ")");
  for (int64_t e : shape)
    if (e < 1) throw invalid_input(std::string(what) + " needs a tensor with no empty mode");
}

void check_finite_norm(double squared_norm, const char* what) {
  if (!std::isfinite(squared_norm)) throw invalid_input(std::string(what) + ": the tensor holds NaN or Inf values");
}

double validated_squared_norm(const double* x, const std::vector<int64_t>& shape, const char* what) {
  validate_dense_shape(shape, what);
  const double norm2 = sum_squares(x, element_count(shape));
  check_finite_norm(norm2, what);
  return norm2;
}
double validated_squared_norm(const float* x, const std::vector<int64_t>& shape, const char* what) {
  validate_dense_shape(shape, what);
  const double norm2 = sum_squares(x, element_count(shape));
  check_finite_norm(norm2, what);
  return norm2;
}

double trace(int64_t n, const double* a) { return trace_impl(n, a); }
double trace(int64_t n, const float* a) { return trace_impl(n, a); }

int64_t truncation_rank(const std::vector<double>& eigenvalues, double allowance, int64_t cap, double* discarded) {
  const int64_t n = static_cast<int64_t>(eigenvalues.size());
  cap = std::clamp<int64_t>(cap, 1, std::max<int64_t>(n, 1));
  // Grow the tail from the smallest eigenvalue while it stays within the allowance.
  double tail = 0;
  int64_t r = n;
  while (r > 1) {
    const double next = tail + std::max(0.0, eigenvalues[static_cast<size_t>(r - 1)]);
    if (next > allowance) break;
    tail = next;
    --r;
  }
  if (r > cap) {
    for (int64_t i = cap; i < r; ++i) tail += std::max(0.0, eigenvalues[static_cast<size_t>(i)]);
    r = cap;
  }
  if (discarded != nullptr) *discarded = tail;
  return r;
}

}  // namespace tk::decomp::modes
