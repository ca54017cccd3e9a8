// The discarded mass of a TT-SVD step as a difference of norms (see tt_mass.h).
#include "tk/decomp/tt_mass.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tk/decomp/modes.h"
#include "tk/linalg/blas.h"

namespace tk::decomp::tt_detail {
namespace {

using linalg::Op;

constexpr double kUnitRoundoff = std::numeric_limits<double>::epsilon() / 2;
constexpr double kResolvedTail = 32 * kUnitRoundoff;

// Sum of n partial sums along a pairwise tree: each passes through at most
// pairwise_depth(n) additions.
double pairwise_total(const double* v, int64_t n) {
  if (n <= 1) return n == 1 ? v[0] : 0.0;
  const int64_t half = (n + 1) / 2;
  return pairwise_total(v, half) + pairwise_total(v + half, n - half);
}
int pairwise_depth(int64_t n) {
  int depth = 0;
  for (; n > 1; n = (n + 1) / 2) ++depth;
  return depth;
}

}  // namespace

double rounding_gamma(int64_t k) { return double(k) * kUnitRoundoff / (1 - double(k) * kUnitRoundoff); }

BasisBounds basis_bounds(const double* q, int64_t rows, int64_t rank) {
  std::vector<double> p(static_cast<size_t>(rank * rank)), a(static_cast<size_t>(rank * rank));
  std::vector<double> abs_q(static_cast<size_t>(rows * rank));
  for (int64_t i = 0; i < rows * rank; ++i) abs_q[i] = std::abs(q[i]);
  linalg::syrk(Op::kTrans, rank, rows, 1.0, q, rank, 0.0, p.data(), rank);
  linalg::syrk(Op::kTrans, rank, rows, 1.0, abs_q.data(), rank, 0.0, a.data(), rank);
  double off2 = 0, a2 = 0, largest_row = 0;
  for (int64_t i = 0; i < rank; ++i) {
    double row = 0;
    for (int64_t j = 0; j < rank; ++j) {
      const double off = p[i * rank + j] - (i == j ? 1.0 : 0.0);
      off2 += off * off;
      a2 += a[i * rank + j] * a[i * rank + j];
      row += a[i * rank + j];
    }
    largest_row = std::max(largest_row, row);
  }
  BasisBounds b;
  b.eta = std::sqrt(off2) + rounding_gamma(rows) * std::sqrt(a2);
  b.abs_norm = std::sqrt(largest_row);
  b.gram = std::move(p);
  return b;
}

std::vector<double> congruence(const double* g, const double* w, int64_t m, int64_t n) {
  std::vector<double> gw(static_cast<size_t>(m * n)), out(static_cast<size_t>(n * n));
  linalg::gemm(Op::kNoTrans, Op::kNoTrans, m, n, m, 1.0, g, m, w, n, 0.0, gw.data(), n);
  linalg::gemm(Op::kTrans, Op::kNoTrans, n, n, m, 1.0, w, n, gw.data(), n, 0.0, out.data(), n);
  return out;
}

double orthonormality_correction(const BasisBounds& basis, const std::vector<double>& nn, int64_t rank) {
  double sum = 0;
  for (int64_t j = 0; j < rank; ++j)
    for (int64_t k = 0; k < rank; ++k) sum += (basis.gram[j * rank + k] - (j == k ? 1.0 : 0.0)) * nn[j * rank + k];
  return sum;
}

double difference_allowance(double product_error, double eta, double c_norm2, int c_depth, double b_norm2,
                            int b_depth) {
  const double gc = rounding_gamma(c_depth), gb = rounding_gamma(b_depth);
  const double c_high = c_norm2 / (1 - gc), b_high = b_norm2 / (1 - gb);  // >= the exact norms
  const double sums = gc * c_high + gb * b_high + kUnitRoundoff * c_norm2;
  const double product = 2 * product_error * std::sqrt(c_high * b_high);
  return 1.01 * (sums + product + eta * b_high);
}

bool difference_accepted(double tail, double allowance, double c_norm2, double delta2) {
  return std::isfinite(c_norm2) && std::isfinite(allowance) && tail >= kResolvedTail * c_norm2 &&
         tail + allowance <= delta2;
}

bool difference_tail(double product_error, const BasisBounds& basis, const std::vector<double>& nn, int64_t rank,
                     const SquaredSum& c, const SquaredSum& n, double delta2, double& tail) {
  const double correction = orthonormality_correction(basis, nn, rank);
  const double allowance =
      difference_allowance(product_error, basis.eta, c.value, c.depth, n.value, n.depth) + std::abs(correction);
  tail = c.value - n.value + correction;
  return difference_accepted(tail, allowance, c.value, delta2);
}

ProjectionSums project_and_sum(const double* c, int64_t rows, int64_t cols, const double* q, int64_t rank,
                               const SquaredSum& c_known, double* next) {
  const bool sum_c = c_known.depth < 0;
  const int64_t width = std::min(cols, std::max<int64_t>(256, (int64_t(1) << 15) / rows));
  const int64_t blocks = (cols + width - 1) / width;
  std::vector<double> c_sums(static_cast<size_t>(blocks * rows)), b_sums(static_cast<size_t>(blocks * rank));
  const int threads = modes::loop_threads(blocks / 2);
  {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t j0 = b * width, w = std::min(width, cols - j0);
      linalg::gemm(Op::kTrans, Op::kNoTrans, rank, w, rows, 1.0, q, rank, c + j0, cols, 0.0, next + j0, cols);
      if (sum_c)
        for (int64_t i = 0; i < rows; ++i) c_sums[b * rows + i] = modes::sum_squares_pairwise(c + i * cols + j0, w);
      for (int64_t i = 0; i < rank; ++i) b_sums[b * rank + i] = modes::sum_squares_pairwise(next + i * cols + j0, w);
    }
  }
  const int leaf = modes::sum_squares_pairwise_depth(width);
  ProjectionSums sums;
  sums.c = sum_c ? SquaredSum{pairwise_total(c_sums.data(), blocks * rows), leaf + pairwise_depth(blocks * rows)}
                 : c_known;
  sums.b = SquaredSum{pairwise_total(b_sums.data(), blocks * rank), leaf + pairwise_depth(blocks * rank)};
  return sums;
}

bool project_by_difference(const double* c, int64_t rows, int64_t cols, const double* q, int64_t rank,
                           const BasisBounds& basis, const double* c_gram, double delta2, double* next, double& tail,
                           SquaredSum& norm) {
  const ProjectionSums sums = project_and_sum(c, rows, cols, q, rank, norm, next);
  norm = sums.c;
  if (!std::isfinite(sums.c.value)) return false;
  if (rank == rows) {
    const double first_order = basis.eta + rounding_gamma(rows) * basis.abs_norm;
    tail = 0;
    if (1.01 * first_order * first_order * (1 + basis.eta) * sums.c.value > delta2) return false;
    norm = sums.b;
    return true;
  }
  if (!difference_tail(rounding_gamma(rows) * basis.abs_norm, basis, congruence(c_gram, q, rows, rank), rank, sums.c,
                       sums.b, delta2, tail))
    return false;
  norm = sums.b;
  return true;
}

}  // namespace tk::decomp::tt_detail
