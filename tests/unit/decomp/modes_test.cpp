// Mode operations against index-loop references: the Gram matrix of every mode's
// unfolding and the n-mode product in both orientations, for float and double, with one
// and two threads (single calls, slice by slice, and narrow slices gathered in panels);
// the masked sum of squares and the pairwise one's rounding bound; the truncation rank
// rule.
#include "tk/decomp/modes.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "lowrank_util.h"

namespace tk::decomp::modes {
namespace {

using test::count_of;
using test::gaussian;

// The mode-n unfolding as an explicit I_n x (left*right) matrix, by index arithmetic:
// element (l, i, r) of the tensor seen around `mode` goes to row i, column l*right + r.
template <typename T>
std::vector<double> unfold(const std::vector<T>& x, const std::vector<int64_t>& shape, size_t mode) {
  int64_t right = 1;
  for (size_t k = mode + 1; k < shape.size(); ++k) right *= shape[k];
  const int64_t dim = shape[mode], total = count_of(shape), cols = total / dim;
  std::vector<double> u(static_cast<size_t>(total));
  for (int64_t flat = 0; flat < total; ++flat) {
    const int64_t l = flat / (dim * right), i = (flat / right) % dim, r = flat % right;
    u[i * cols + l * right + r] = static_cast<double>(x[flat]);
  }
  return u;
}

template <typename T> void check_gram_and_product(const std::vector<int64_t>& shape, int threads, double tol) {
  omp_set_num_threads(threads);
  const std::vector<double> xd = gaussian(count_of(shape), 7);
  const std::vector<T> x(xd.begin(), xd.end());
  for (size_t mode = 0; mode < shape.size(); ++mode) {
    const int64_t n = shape[mode], cols = count_of(shape) / n;
    const std::vector<double> u = unfold(x, shape, mode);
    std::vector<T> gram(static_cast<size_t>(n * n));
    mode_gram(x.data(), shape, mode, gram.data());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0;
        for (int64_t c = 0; c < cols; ++c) ref += u[i * cols + c] * u[j * cols + c];
        EXPECT_NEAR(gram[i * n + j], ref, tol * (1 + std::abs(ref))) << "mode " << mode;
      }
    // y = x ×_mode M with M (rows x n): unfold(y) = M unfold(x).
    const int64_t rows = 3;
    const std::vector<double> md = gaussian(rows * n, 11);
    const std::vector<T> m(md.begin(), md.end());
    std::vector<T> mt(m.size());  // n x rows, the same matrix stored transposed
    for (int64_t a = 0; a < rows; ++a)
      for (int64_t i = 0; i < n; ++i) mt[i * rows + a] = m[a * n + i];
    std::vector<int64_t> yshape = shape;
    yshape[mode] = rows;
    std::vector<T> y1(static_cast<size_t>(count_of(yshape))), y2(y1.size());
    mode_product(x.data(), shape, mode, m.data(), linalg::Op::kNoTrans, rows, y1.data());
    mode_product(x.data(), shape, mode, mt.data(), linalg::Op::kTrans, rows, y2.data());
    for (size_t e = 0; e < y1.size(); ++e) EXPECT_NEAR(y1[e], y2[e], tol * (1 + std::abs(y1[e])));
    const std::vector<double> uy = unfold(y1, yshape, mode);
    for (int64_t a = 0; a < rows; ++a)
      for (int64_t c = 0; c < cols; ++c) {
        double ref = 0;
        for (int64_t i = 0; i < n; ++i) ref += double(m[a * n + i]) * u[i * cols + c];
        EXPECT_NEAR(uy[a * cols + c], ref, tol * (1 + std::abs(ref))) << "mode " << mode;
      }
  }
  omp_set_num_threads(1);
}

TEST(Modes, GramAndProductMatchIndexLoops) {
  for (int threads : {1, 2}) {
    check_gram_and_product<double>({4, 3, 5, 2}, threads, 1e-12);
    check_gram_and_product<float>({4, 3, 5, 2}, threads, 1e-5);
    check_gram_and_product<double>({2, 6}, threads, 1e-12);
    check_gram_and_product<double>({3, 4, 300}, threads, 1e-12);  // wide slices: one BLAS call each
    check_gram_and_product<double>({300, 2, 2}, threads, 1e-12);   // narrow slices: three panels
  }
}

TEST(Modes, SumSquaresIsExactForSmallIntegers) {
  std::vector<float> x(100000, 3.0f);
  EXPECT_EQ(sum_squares(x.data(), static_cast<int64_t>(x.size())), 900000.0);
  x[77] = std::nanf("");
  EXPECT_TRUE(std::isnan(sum_squares(x.data(), static_cast<int64_t>(x.size()))));
}

TEST(Modes, PairwiseSumSquaresStaysWithinItsBound) {
  // Against a long double reference (64-bit significand: its own error is far below the
  // bound), for lengths around the leaf and lane sizes and a long ragged one.
  const double u = std::numeric_limits<double>::epsilon() / 2;
  for (int64_t n : {1, 15, 16, 17, 255, 256, 257, 4096, 100003}) {
    const std::vector<double> x = gaussian(n, 11);
    long double reference = 0;
    for (double v : x) reference += static_cast<long double>(v) * v;
    const int depth = sum_squares_pairwise_depth(n);
    const double bound = depth * u / (1 - depth * u) * static_cast<double>(reference);
    EXPECT_LE(std::abs(static_cast<double>(sum_squares_pairwise(x.data(), n) - reference)), bound) << n;
    const std::vector<float> xf(x.begin(), x.end());
    long double reference_f = 0;
    for (float v : xf) reference_f += static_cast<long double>(v) * v;
    EXPECT_LE(std::abs(static_cast<double>(sum_squares_pairwise(xf.data(), n) - reference_f)), bound) << n;
  }
  // The leaf: a squaring, 16 additions per lane, 4 joining the lanes, 1 adding the rest;
  // then one per halving.
  EXPECT_EQ(sum_squares_pairwise_depth(1), 22);
  EXPECT_EQ(sum_squares_pairwise_depth(256), 22);
  EXPECT_EQ(sum_squares_pairwise_depth(257), 23);
  EXPECT_EQ(sum_squares_pairwise_depth(1 << 20), 34);
  std::vector<float> ones(1000, 3.0f);
  EXPECT_EQ(sum_squares_pairwise(ones.data(), 1000), 9000.0);
  ones[999] = std::nanf("");
  EXPECT_TRUE(std::isnan(sum_squares_pairwise(ones.data(), 1000)));
}

TEST(Modes, MaskedSumSquaresCountsOnlyObservedEntries) {
  const int64_t n = 100003;  // many fixed blocks and a ragged end
  std::vector<float> x(static_cast<size_t>(n), 3.0f);
  std::vector<uint8_t> mask(static_cast<size_t>(n), 1);
  EXPECT_EQ(sum_squares(x.data(), mask.data(), n), sum_squares(x.data(), n));
  EXPECT_EQ(sum_squares(x.data(), nullptr, n), sum_squares(x.data(), n));
  double expected = 0;
  for (int64_t i = 0; i < n; i += 7) {
    mask[i] = 0;
    x[i] = i % 2 ? std::nanf("") : std::numeric_limits<float>::infinity();  // hidden by the mask
  }
  for (int64_t i = 0; i < n; ++i) expected += mask[i] ? 9.0 : 0.0;
  EXPECT_EQ(sum_squares(x.data(), mask.data(), n), expected);
  mask[14] = 1;  // an observed infinity
  EXPECT_FALSE(std::isfinite(sum_squares(x.data(), mask.data(), n)));
}

TEST(Modes, TruncationRankKeepsTheTailWithinTheAllowance) {
  const std::vector<double> ev = {10, 4, 1, 0.5, 0.25, -1e-17};
  double tail = -1;
  EXPECT_EQ(truncation_rank(ev, 0.8, 6, &tail), 3);
  EXPECT_DOUBLE_EQ(tail, 0.75);
  EXPECT_EQ(truncation_rank(ev, 0.0, 6, &tail), 5);  // only the (clamped) negative noise goes
  EXPECT_EQ(truncation_rank(ev, 100, 6, &tail), 1);  // never below rank 1
  EXPECT_DOUBLE_EQ(tail, 5.75);
  EXPECT_EQ(truncation_rank(ev, 0.0, 2, &tail), 2);  // the cap wins over the allowance
  EXPECT_DOUBLE_EQ(tail, 1.75);
}

TEST(Modes, LeadingEigenvectorsAreDescendingWithFixedSigns) {
  // diag(1, 3, 2) rotated by a sign flip: eigenvectors are +-e_i.
  std::vector<double> a = {1, 0, 0, 0, 3, 0, 0, 0, 2};
  std::vector<double> ev;
  std::vector<double> u = leading_eigenvectors(3, a.data(), 2, &ev);
  EXPECT_NEAR(ev[0], 3, 1e-14);
  EXPECT_NEAR(ev[1], 2, 1e-14);
  EXPECT_NEAR(ev[2], 1, 1e-14);
  EXPECT_NEAR(u[1 * 2 + 0], 1, 1e-14);  // e_2, positive
  EXPECT_NEAR(u[2 * 2 + 1], 1, 1e-14);  // e_3, positive
}

}  // namespace
}  // namespace tk::decomp::modes
