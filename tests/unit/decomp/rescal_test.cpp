// RESCAL: a planted model X_k = A R_k A^T is recovered (fit, the span of A, and the
// reported fit equal to the true one); nonnegative RESCAL recovers planted nonnegative
// factors up to permutation and scaling and never leaves the nonnegative orthant;
// options, seeds and bad data behave as documented.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "lowrank_util.h"
#include "test_util.h"
#include "tk/core/error.h"
#include "tk/decomp/decomp.h"

namespace tk::decomp {
namespace {

using test::gaussian;
using tk::test::kind_of;

struct Planted {
  int64_t n, m, r;
  std::vector<double> a, rk, x;  // x: n x n x m, slice k = x[:, :, k]
};

std::vector<double> rescal_dense(int64_t n, int64_t m, int64_t r, const std::vector<double>& a,
                                 const std::vector<double>& rk) {
  std::vector<double> x(static_cast<size_t>(n * n * m), 0.0);
  for (int64_t k = 0; k < m; ++k)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double v = 0;
        for (int64_t p = 0; p < r; ++p)
          for (int64_t q = 0; q < r; ++q) v += a[i * r + p] * rk[k * r * r + p * r + q] * a[j * r + q];
        x[(i * n + j) * m + k] = v;
      }
  return x;
}

Planted planted(int64_t n, int64_t m, int64_t r, bool nonneg, uint64_t seed) {
  Planted p{n, m, r, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (nonneg) {
    // Each entity belongs mostly to one latent group: identifiable up to permutation.
    p.a.assign(static_cast<size_t>(n * r), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < r; ++c) p.a[i * r + c] = (i % r == c ? 1.0 : 0.1) * uniform(rng);
    p.rk.resize(static_cast<size_t>(m * r * r));
    for (double& v : p.rk) v = uniform(rng);
  } else {
    p.a = gaussian(n * r, seed);
    p.rk = gaussian(m * r * r, seed + 1);
  }
  p.x = rescal_dense(n, m, r, p.a, p.rk);
  return p;
}

double true_fit(const Planted& p, const RescalResult& res) {
  const std::vector<double> model = rescal_dense(p.n, p.m, p.r, res.a, res.r);
  return 1 - test::relative_difference(p.x, model);
}

// Cosines of the principal angles between the column spaces of two n x r matrices: the
// singular values of Q1^T Q2; returns the smallest.
double subspace_match(const std::vector<double>& a, const std::vector<double>& b, int64_t n, int64_t r) {
  std::vector<double> qa(a), qb(b), c(static_cast<size_t>(r * r));
  linalg::qr(n, r, qa.data(), nullptr);
  linalg::qr(n, r, qb.data(), nullptr);
  linalg::gemm(linalg::Op::kTrans, linalg::Op::kNoTrans, r, r, n, 1.0, qa.data(), r, qb.data(), r, 0.0, c.data(), r);
  std::vector<double> u(static_cast<size_t>(r * r)), s(static_cast<size_t>(r)), vt(static_cast<size_t>(r * r));
  linalg::svd(r, r, c.data(), u.data(), s.data(), vt.data());
  return *std::min_element(s.begin(), s.end());
}

// Factor match score of the columns of A up to permutation and scaling: the mean
// absolute cosine of matched columns, best over all permutations (r is small).
double factor_match(const std::vector<double>& a, const std::vector<double>& b, int64_t n, int64_t r) {
  auto cosine = [&](int64_t p, int64_t q) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; ++i) {
      ab += a[i * r + p] * b[i * r + q];
      aa += a[i * r + p] * a[i * r + p];
      bb += b[i * r + q] * b[i * r + q];
    }
    return std::abs(ab) / std::sqrt(aa * bb);
  };
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  double best = 0;
  do {
    double sum = 0;
    for (int64_t p = 0; p < r; ++p) sum += cosine(p, perm[p]);
    best = std::max(best, sum / double(r));
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

TEST(Rescal, AlsRecoversAPlantedModel) {
  const Planted p = planted(30, 4, 3, false, 1);
  RescalOptions options;
  options.rank = 3;
  options.tol = 1e-12;
  int callbacks = 0;
  options.on_iteration = [&](const IterationInfo&) { ++callbacks; };
  const RescalResult res = rescal(DenseView<double>{p.x.data(), {30, 30, 4}}, options);
  EXPECT_GT(res.fit, 0.999);
  EXPECT_NEAR(res.fit, true_fit(p, res), 1e-6);
  EXPECT_GT(subspace_match(p.a, res.a, 30, 3), 0.99);
  EXPECT_EQ(callbacks, res.iterations);
  EXPECT_EQ(res.n, 30);
  EXPECT_EQ(res.m, 4);
  EXPECT_EQ(res.a.size(), 90u);
  EXPECT_EQ(res.r.size(), 36u);
}

TEST(Rescal, RandomInitIsSeededAndRegularisationShrinks) {
  const Planted p = planted(20, 3, 2, false, 2);
  RescalOptions options;
  options.rank = 2;
  options.init = RescalInit::kRandom;
  options.seed = 42;
  const DenseView<double> view{p.x.data(), {20, 20, 3}};
  const RescalResult a = rescal(view, options), b = rescal(view, options);
  EXPECT_EQ(a.a, b.a);
  EXPECT_EQ(a.r, b.r);
  EXPECT_GT(a.fit, 0.999);
  options.lambda_a = options.lambda_r = 10;
  const RescalResult c = rescal(view, options);
  EXPECT_LT(c.fit, a.fit);
  EXPECT_GT(c.fit, 0.5);
}

TEST(Rescal, NonnegRecoversPlantedFactorsAndStaysNonnegative) {
  const Planted p = planted(40, 4, 3, true, 3);
  RescalOptions options;
  options.rank = 3;
  options.nonneg = true;
  options.tol = 1e-10;
  options.max_iters = 3000;
  const RescalResult res = rescal(DenseView<double>{p.x.data(), {40, 40, 4}}, options);
  for (double v : res.a) EXPECT_GE(v, 0.0);
  for (double v : res.r) EXPECT_GE(v, 0.0);
  EXPECT_GT(res.fit, 0.99);
  EXPECT_NEAR(res.fit, true_fit(p, res), 1e-6);
  EXPECT_GT(factor_match(p.a, res.a, 40, 3), 0.99);
}

TEST(Rescal, BadOptionsAndDataAreRefused) {
  const Planted p = planted(6, 2, 2, false, 4);
  const DenseView<double> view{p.x.data(), {6, 6, 2}};
  auto run = [&](RescalOptions o) { return kind_of([&] { rescal(view, o); }); };
  RescalOptions o;
  EXPECT_EQ(run(o), ErrorKind::kUsage);  // rank 0
  o.rank = 7;
  EXPECT_EQ(run(o), ErrorKind::kUsage);  // above n
  o.rank = 2;
  o.lambda_r = -1;
  EXPECT_EQ(run(o), ErrorKind::kUsage);
  o.lambda_r = 0;
  o.max_iters = 0;
  EXPECT_EQ(run(o), ErrorKind::kUsage);
  o.max_iters = 10;
  o.nonneg = true;
  EXPECT_EQ(run(o), ErrorKind::kInvalidInput);  // negative entries
  o.nonneg = false;
  EXPECT_EQ(kind_of([&] { rescal(DenseView<double>{p.x.data(), {6, 12}}, o); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { rescal(DenseView<double>{p.x.data(), {4, 9, 2}}, o); }), ErrorKind::kInvalidInput);
  std::vector<double> x = p.x;
  x[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(kind_of([&] { rescal(DenseView<double>{x.data(), {6, 6, 2}}, o); }), ErrorKind::kInvalidInput);
}

}  // namespace
}  // namespace tk::decomp
