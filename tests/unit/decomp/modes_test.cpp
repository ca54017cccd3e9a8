// Mode operations against index-loop references: the Gram matrix of every mode's
// unfolding and the n-mode product in both orientations, for float and double, with one
// and two threads (the slice loop and the single-call paths); the truncation rank rule.
#include "tk/decomp/modes.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "lowrank_util.h"

namespace tk::decomp::modes {
namespace {

using test::count_of;
using test::gaussian;

// Strides of a row-major shape.
std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t k = shape.size() - 1; k-- > 0;) s[k] = s[k + 1] * shape[k + 1];
  return s;
}

// Offsets of all elements with the index of `mode` fixed at i, in row-major order.
std::vector<int64_t> fibre_offsets(const std::vector<int64_t>& shape, size_t mode, int64_t i) {
  const std::vector<int64_t> st = strides_of(shape);
  std::vector<int64_t> out;
  for (int64_t flat = 0; flat < count_of(shape); ++flat)
    if ((flat / st[mode]) % shape[mode] == i) out.push_back(flat);
  return out;
}

template <typename T> void check_gram_and_product(const std::vector<int64_t>& shape, int threads, double tol) {
  omp_set_num_threads(threads);
  const std::vector<double> xd = gaussian(count_of(shape), 7);
  const std::vector<T> x(xd.begin(), xd.end());
  for (size_t mode = 0; mode < shape.size(); ++mode) {
    const int64_t n = shape[mode];
    std::vector<T> gram(static_cast<size_t>(n * n));
    mode_gram(x.data(), shape, mode, gram.data());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const std::vector<int64_t> fi = fibre_offsets(shape, mode, i), fj = fibre_offsets(shape, mode, j);
        double ref = 0;
        for (size_t e = 0; e < fi.size(); ++e) ref += double(x[fi[e]]) * double(x[fj[e]]);
        EXPECT_NEAR(gram[i * n + j], ref, tol * (1 + std::abs(ref))) << "mode " << mode;
      }
    // y = x ×_mode M with M (rows x n): y[..., a, ...] = sum_i M[a, i] x[..., i, ...].
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
    for (int64_t a = 0; a < rows; ++a) {
      const std::vector<int64_t> out = fibre_offsets(yshape, mode, a);
      for (size_t e = 0; e < out.size(); ++e) {
        double ref = 0;
        for (int64_t i = 0; i < n; ++i) ref += double(m[a * n + i]) * double(x[fibre_offsets(shape, mode, i)[e]]);
        EXPECT_NEAR(y1[out[e]], ref, tol * (1 + std::abs(ref))) << "mode " << mode;
        EXPECT_EQ(y1[out[e]], y2[out[e]]);
      }
    }
  }
  omp_set_num_threads(1);
}

TEST(Modes, GramAndProductMatchIndexLoops) {
  for (int threads : {1, 2}) {
    check_gram_and_product<double>({4, 3, 5, 2}, threads, 1e-12);
    check_gram_and_product<float>({4, 3, 5, 2}, threads, 1e-5);
    check_gram_and_product<double>({2, 6}, threads, 1e-12);
  }
}

TEST(Modes, SumSquaresIsExactForSmallIntegers) {
  std::vector<float> x(100000, 3.0f);
  EXPECT_EQ(sum_squares(x.data(), static_cast<int64_t>(x.size())), 900000.0);
  x[77] = std::nanf("");
  EXPECT_TRUE(std::isnan(sum_squares(x.data(), static_cast<int64_t>(x.size()))));
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
