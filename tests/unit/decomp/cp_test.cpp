// CP-ALS: planted-model recovery (dense, float, masked, nonnegative, sparse), option and
// data checks, determinism, restarts and stopping rules, CORCONDIA.
#include <iomanip>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>

#include "cp_test_util.h"
#include "test_util.h"
#include "tk/decomp/decomp.h"

namespace tk::decomp {
namespace {

using test::factor_match_score;
using test::planted_cp;

DenseView<double> view(const test::PlantedCp& p) { return {p.data.data(), p.shape}; }

void expect_normalised(const CpResult& r, const std::vector<int64_t>& shape, int64_t rank) {
  ASSERT_EQ(r.lambda.size(), static_cast<size_t>(rank));
  for (int64_t k = 1; k < rank; ++k) EXPECT_GE(r.lambda[k - 1], r.lambda[k]);
  for (size_t n = 0; n < shape.size(); ++n)
    for (int64_t c = 0; c < rank; ++c) {
      double s = 0;
      for (int64_t i = 0; i < shape[n]; ++i) s += r.factors[n][i * rank + c] * r.factors[n][i * rank + c];
      EXPECT_NEAR(s, 1.0, 1e-9) << "mode " << n << " column " << c;
    }
}

TEST(CpAls, RecoversAnExactRank3TensorFromGramInit) {
  const auto p = planted_cp({12, 10, 8}, 3, 1);
  CpOptions o;
  o.rank = 3;
  o.tol = 1e-12;
  const CpResult r = cp_als(view(p), o);
  EXPECT_GT(r.fit, 0.9999);
  EXPECT_GT(factor_match_score(p.factors, r.factors, 3, 3), 0.99);
  EXPECT_TRUE(r.converged);
  expect_normalised(r, p.shape, 3);
}

TEST(CpAls, RecoversAnExactFourWayTensorFromRandomInit) {
  const auto p = planted_cp({7, 6, 5, 4}, 3, 2);
  CpOptions o;
  o.rank = 3;
  o.init = CpInit::kRandom;
  o.seed = 5;
  o.tol = 1e-12;
  o.restarts = 2;
  const CpResult r = cp_als(view(p), o);
  EXPECT_GT(r.fit, 0.9999);
  EXPECT_GT(factor_match_score(p.factors, r.factors, 3, 3), 0.99);
}

TEST(CpAls, MatrixIsOrderTwo) {
  const auto p = planted_cp({9, 7}, 2, 3);
  CpOptions o;
  o.rank = 2;
  const CpResult r = cp_als(view(p), o);
  EXPECT_GT(r.fit, 0.9999);
}

TEST(CpAls, FloatPrecisionRecoversThePlantedFactors) {
  const auto p = planted_cp({10, 9, 8}, 3, 4);
  std::vector<float> xf(p.data.begin(), p.data.end());
  CpOptions o;
  o.rank = 3;
  o.tol = 1e-6;
  const CpResult r = cp_als(DenseView<float>{xf.data(), p.shape}, o);
  EXPECT_GT(r.fit, 0.999);
  EXPECT_GT(factor_match_score(p.factors, r.factors, 3, 3), 0.99);
}

TEST(CpAls, FitComesFromInnerProductsAndMatchesTheReconstruction) {
  auto p = planted_cp({8, 7, 6}, 3, 5);
  std::mt19937 gen(9);
  std::normal_distribution<double> noise(0, 0.3);
  for (double& v : p.data) v += noise(gen);
  CpOptions o;
  o.rank = 2;
  o.max_iters = 7;
  const CpResult r = cp_als(view(p), o);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 7; ++j)
      for (int64_t k = 0; k < 6; ++k) {
        double m = 0;
        for (int64_t c = 0; c < 2; ++c)
          m += r.lambda[c] * r.factors[0][i * 2 + c] * r.factors[1][j * 2 + c] * r.factors[2][k * 2 + c];
        const double x = p.data[(i * 7 + j) * 6 + k];
        err += (x - m) * (x - m);
        norm += x * x;
      }
  EXPECT_NEAR(r.rel_error, std::sqrt(err / norm), 1e-9);
  EXPECT_NEAR(r.fit, 1 - r.rel_error, 1e-15);
  EXPECT_EQ(r.iterations, 7);
  EXPECT_FALSE(r.converged);
}

TEST(CpAls, MaskedRecoversPlantedFactorsWith30PercentMissing) {
  auto p = planted_cp({14, 12, 10}, 3, 6);
  std::mt19937 gen(11);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint8_t> mask(p.data.size());
  int missing = 0;
  for (size_t e = 0; e < mask.size(); ++e) {
    mask[e] = u(gen) >= 0.3;
    if (!mask[e]) {
      p.data[e] = std::numeric_limits<double>::quiet_NaN();  // never read
      ++missing;
    }
  }
  EXPECT_GT(missing, static_cast<int>(mask.size() * 0.25));
  CpOptions o;
  o.rank = 3;
  o.tol = 1e-12;
  o.mask = mask.data();
  const CpResult r = cp_als(view(p), o);
  EXPECT_GT(r.fit, 0.9999);
  EXPECT_GT(factor_match_score(p.factors, r.factors, 3, 3), 0.99);
}

TEST(CpAls, MaskedErrorCountsOnlyObservedEntries) {
  auto p = planted_cp({6, 5, 4}, 2, 7);
  std::vector<uint8_t> mask(p.data.size(), 1);
  mask[3] = 0;
  p.data[3] += 1000;  // a wild missing entry must not enter the error
  CpOptions o;
  o.rank = 2;
  o.tol = 1e-12;
  o.mask = mask.data();
  EXPECT_GT(cp_als(view(p), o).fit, 0.9999);
}

TEST(CpAls, NonnegativeFactorsAreNonnegativeAndFit) {
  const auto p = planted_cp({10, 9, 8}, 3, 8, /*nonneg=*/true);
  CpOptions o;
  o.rank = 3;
  o.nonneg = true;
  o.tol = 1e-10;
  o.max_iters = 2000;
  const CpResult r = cp_als(view(p), o);
  for (const auto& f : r.factors)
    for (double v : f) EXPECT_GE(v, 0.0);
  EXPECT_GT(r.fit, 0.99);
}

TEST(CpAls, MaskedNonnegativeStaysNonnegative) {
  const auto p = planted_cp({8, 7, 6}, 2, 9, true);
  std::vector<uint8_t> mask(p.data.size(), 1);
  for (size_t e = 0; e < mask.size(); e += 4) mask[e] = 0;
  CpOptions o;
  o.rank = 2;
  o.nonneg = true;
  o.mask = mask.data();
  o.max_iters = 1000;
  const CpResult r = cp_als(view(p), o);
  for (const auto& f : r.factors)
    for (double v : f) EXPECT_GE(v, 0.0);
  EXPECT_GT(r.fit, 0.98);
}

TEST(CpAls, RidgeShrinksTheFitSlightly) {
  const auto p = planted_cp({8, 7, 6}, 2, 10);
  CpOptions o;
  o.rank = 2;
  const double plain = cp_als(view(p), o).fit;
  // The ridge acts on the unnormalised factor against unit-column Grams: 0.05 is mild.
  o.l2 = 0.05;
  const double ridge = cp_als(view(p), o).fit;
  EXPECT_LT(ridge, plain);
  EXPECT_GT(ridge, 0.9);
}

TEST(CpAls, RankAboveAModeLengthPadsTheGramInit) {
  const auto p = planted_cp({3, 6, 7}, 2, 12);
  CpOptions o;
  o.rank = 5;
  o.max_iters = 50;
  const CpResult r = cp_als(view(p), o);
  EXPECT_EQ(r.factors[0].size(), 15u);
  EXPECT_GT(r.fit, 0.999);
}

TEST(CpAls, DeterministicForASeed) {
  auto p = planted_cp({9, 8, 7}, 3, 13);
  std::mt19937 gen(1);
  std::normal_distribution<double> noise(0, 0.1);
  for (double& v : p.data) v += noise(gen);
  CpOptions o;
  o.rank = 3;
  o.init = CpInit::kRandom;
  o.seed = 42;
  o.max_iters = 20;
  const CpResult a = cp_als(view(p), o), b = cp_als(view(p), o);
  EXPECT_EQ(a.lambda, b.lambda);
  EXPECT_EQ(a.factors, b.factors);
  o.seed = 43;
  EXPECT_NE(cp_als(view(p), o).factors, a.factors);
}

TEST(CpAls, EverySeedOfTheRandomStartReachesTheNoiseFloor) {
  auto p = planted_cp({40, 35, 30}, 6, 22);
  std::mt19937 gen(2);
  std::normal_distribution<double> noise;
  std::vector<double> n(p.data.size());
  double nn = 0, tt = 0;
  for (size_t e = 0; e < n.size(); ++e) {
    n[e] = noise(gen);
    nn += n[e] * n[e];
    tt += p.data[e] * p.data[e];
  }
  for (size_t e = 0; e < n.size(); ++e) p.data[e] += 0.01 * std::sqrt(tt / nn) * n[e];
  CpOptions o;
  o.rank = 6;
  const double floor = cp_als(view(p), o).rel_error;  // from the Gram init
  EXPECT_LT(floor, 0.01);
  o.init = CpInit::kRandom;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    o.seed = seed;
    const CpResult r = cp_als(view(p), o);
    EXPECT_LT(r.rel_error, 1.001 * floor) << "seed " << seed;
    EXPECT_GT(factor_match_score(p.factors, r.factors, 6, 6), 0.99) << "seed " << seed;
  }
}

TEST(CpAls, DeterministicWithTwoThreads) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  auto p = planted_cp({30, 20, 25}, 3, 23);
  p.data[5] += 0.5;
  CpOptions o;
  o.rank = 3;
  o.max_iters = 10;
  const CpResult a = cp_als(view(p), o), b = cp_als(view(p), o);
  EXPECT_EQ(a.factors, b.factors);
  io::SparseTensor s;
  s.shape = p.shape;
  std::mt19937 gen(4);
  std::uniform_int_distribution<int64_t> i0(0, 29), i1(0, 19), i2(0, 24);
  for (int e = 0; e < 40000; ++e) {  // enough nonzeros for the threaded MTTKRP
    s.indices.insert(s.indices.end(), {i0(gen), i1(gen), i2(gen)});
    s.values.push_back(1.0 + e % 7);
  }
  EXPECT_EQ(cp_als_sparse(s, o).factors, cp_als_sparse(s, o).factors);
  omp_set_num_threads(saved);
}

TEST(CpAls, RestartsKeepTheBestRun) {
  auto p = planted_cp({9, 8, 7}, 4, 14);
  CpOptions o;
  o.rank = 4;
  o.init = CpInit::kRandom;
  o.max_iters = 5;
  o.restarts = 4;
  std::vector<double> fits;
  o.on_iteration = [&](const IterationInfo& info) {
    if (static_cast<int>(fits.size()) <= info.restart) fits.push_back(0);
    fits[info.restart] = info.fit;
  };
  const CpResult r = cp_als(view(p), o);
  ASSERT_EQ(fits.size(), 4u);
  EXPECT_EQ(r.fit, *std::max_element(fits.begin(), fits.end()));
  EXPECT_EQ(r.fit, fits[r.best_restart]);
}

TEST(CpAls, GivenInitIsUsed) {
  const auto p = planted_cp({6, 5, 4}, 2, 15);
  CpOptions o;
  o.rank = 2;
  o.init = CpInit::kGiven;
  o.init_factors = p.factors;  // the answer: one iteration suffices
  o.max_iters = 1;
  // The fit comes from ||X||^2 - 2<X, M> + ||M||^2, whose cancellation leaves it
  // accurate to about sqrt(epsilon) (1e-8 was seen with AVX-512 BLAS kernels); a random
  // start is far below this after one iteration.
  const double fit = cp_als(view(p), o).fit;
  EXPECT_GT(fit, 1 - 1e-6) << std::setprecision(17) << 1 - fit;
}

// The dense MTTKRP (a dimension tree: GEMMs, then contractions of the partials) against
// the masked solver with every entry observed, which forms each row's normal equations
// directly from the data: the same ALS iterates. Five modes, so that the right group has
// a middle mode (modes on both sides within the group) and both groups have two or more.
TEST(CpAls, DenseIteratesMatchRowByRowNormalEquationsOnFiveModes) {
  for (int threads : {1, 2}) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    auto p = planted_cp({4, 3, 5, 6, 2}, 3, 31);
    std::mt19937 gen(8);
    std::normal_distribution<double> noise(0.0, 0.3);
    for (double& v : p.data) v += noise(gen);  // no exact fit: the iterates keep moving
    CpOptions o;
    o.rank = 3;
    o.init = CpInit::kGiven;
    o.init_factors = planted_cp({4, 3, 5, 6, 2}, 3, 32).factors;
    o.max_iters = 4;
    o.tol = 1e-15;
    const CpResult dense = cp_als(view(p), o);
    std::vector<uint8_t> all(p.data.size(), 1);
    o.mask = all.data();
    const CpResult masked = cp_als(view(p), o);
    ASSERT_EQ(dense.iterations, masked.iterations);
    EXPECT_NEAR(dense.fit, masked.fit, 1e-10);
    for (size_t n = 0; n < p.shape.size(); ++n)
      for (size_t e = 0; e < dense.factors[n].size(); ++e)
        EXPECT_NEAR(dense.factors[n][e], masked.factors[n][e], 1e-9) << "threads " << threads << " mode " << n;
    for (int64_t r = 0; r < 3; ++r) EXPECT_NEAR(dense.lambda[r], masked.lambda[r], 1e-9 * masked.lambda[0]);
    omp_set_num_threads(saved);
  }
}

TEST(CpAls, BadOptionsAreUsageErrors) {
  const auto p = planted_cp({4, 3, 2}, 1, 16);
  auto kind = [&](CpOptions o) { return test::kind_of([&] { cp_als(view(p), o); }); };
  CpOptions o;
  o.rank = 0;
  EXPECT_EQ(kind(o), ErrorKind::kUsage);
  o.rank = -2;
  EXPECT_EQ(kind(o), ErrorKind::kUsage);
  o.rank = 2;
  o.tol = 0;
  EXPECT_EQ(kind(o), ErrorKind::kUsage);
  o.tol = 1;
  EXPECT_EQ(kind(o), ErrorKind::kUsage);
  o.tol = 1e-8;
  o.l2 = -1;
  EXPECT_EQ(kind(o), ErrorKind::kUsage);
  o.l2 = 0;
  o.init = CpInit::kGiven;
  o.init_factors = {{1, 2}};
  EXPECT_EQ(kind(o), ErrorKind::kUsage);
}

TEST(CpAls, BadDataIsInvalidInput) {
  auto p = planted_cp({4, 3, 2}, 1, 17);
  CpOptions o;
  o.rank = 1;
  std::vector<double> v(5, 1.0);
  EXPECT_EQ(test::kind_of([&] { cp_als(DenseView<double>{v.data(), {5}}, o); }), ErrorKind::kInvalidInput);
  p.data[7] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(test::kind_of([&] { cp_als(view(p), o); }), ErrorKind::kInvalidInput);
  p.data[7] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(test::kind_of([&] { cp_als(view(p), o); }), ErrorKind::kInvalidInput);
  std::vector<uint8_t> mask(p.data.size(), 1);
  mask[7] = 0;
  o.mask = mask.data();
  EXPECT_NO_THROW(cp_als(view(p), o));
  std::vector<double> zeros(24, 0.0);
  o.mask = nullptr;
  EXPECT_EQ(test::kind_of([&] { cp_als(DenseView<double>{zeros.data(), {4, 3, 2}}, o); }), ErrorKind::kInvalidInput);
}

io::SparseTensor to_sparse(const std::vector<double>& data, const std::vector<int64_t>& shape) {
  io::SparseTensor s;
  s.shape = shape;
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t e = 0; e < data.size(); ++e) {
    if (data[e] != 0) {
      s.indices.insert(s.indices.end(), idx.begin(), idx.end());
      s.values.push_back(data[e]);
    }
    for (int n = static_cast<int>(shape.size()) - 1; n >= 0; --n) {
      if (++idx[n] < shape[n]) break;
      idx[n] = 0;
    }
  }
  return s;
}

TEST(CpAlsSparse, AgreesWithDenseOnTheSameData) {
  // A planted tensor with about 60% of its entries zeroed: sparse, and not low rank.
  auto p = planted_cp({11, 9, 7, 5}, 3, 18);
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> u(0, 1);
  for (double& v : p.data)
    if (u(gen) < 0.6) v = 0;
  const io::SparseTensor s = to_sparse(p.data, p.shape);
  ASSERT_LT(s.nnz(), static_cast<int64_t>(p.data.size()) * 6 / 10 + 50);
  for (CpInit init : {CpInit::kGram, CpInit::kRandom}) {
    CpOptions o;
    o.rank = 3;
    o.init = init;
    o.seed = 7;
    o.max_iters = 30;
    const CpResult d = cp_als(view(p), o), sp = cp_als_sparse(s, o);
    EXPECT_EQ(d.iterations, sp.iterations);
    EXPECT_NEAR(d.fit, sp.fit, 1e-9);
    for (size_t k = 0; k < d.lambda.size(); ++k) EXPECT_NEAR(d.lambda[k], sp.lambda[k], 1e-7 * d.lambda[0]);
    for (size_t n = 0; n < d.factors.size(); ++n)
      for (size_t e = 0; e < d.factors[n].size(); ++e) EXPECT_NEAR(d.factors[n][e], sp.factors[n][e], 1e-6);
  }
}

TEST(CpAlsSparse, RecoversAnExactTensorAndChecksItsInput) {
  const auto p = planted_cp({10, 8, 6}, 2, 19);
  io::SparseTensor s = to_sparse(p.data, p.shape);
  CpOptions o;
  o.rank = 2;
  o.tol = 1e-12;
  const CpResult r = cp_als_sparse(s, o);
  EXPECT_GT(r.fit, 0.9999);
  EXPECT_GT(factor_match_score(p.factors, r.factors, 2, 2), 0.99);
  s.values[3] = std::nan("");
  EXPECT_EQ(test::kind_of([&] { cp_als_sparse(s, o); }), ErrorKind::kInvalidInput);
  s.values[3] = 1;
  s.indices[1] = 8;  // mode 1 has extent 8
  EXPECT_EQ(test::kind_of([&] { cp_als_sparse(s, o); }), ErrorKind::kInvalidInput);
  o.rank = 0;
  EXPECT_EQ(test::kind_of([&] { cp_als_sparse(s, o); }), ErrorKind::kUsage);
}

TEST(Corcondia, IsNear100ForTheRightRankAndLowWhenOverfactored) {
  auto p = planted_cp({12, 11, 10}, 3, 20);
  std::mt19937 gen(5);
  std::normal_distribution<double> noise(0, 0.01);
  for (double& v : p.data) v += noise(gen);
  CpOptions o;
  o.rank = 3;
  const CpResult right = cp_als(view(p), o);
  EXPECT_GT(corcondia(view(p), right), 99.0);
  o.rank = 5;
  o.max_iters = 200;
  const CpResult over = cp_als(view(p), o);
  EXPECT_LT(corcondia(view(p), over), 80.0);
}

TEST(Corcondia, FourWayAndBadModels) {
  const auto p = planted_cp({6, 5, 4, 3}, 2, 21);
  CpOptions o;
  o.rank = 2;
  o.tol = 1e-12;
  const CpResult r = cp_als(view(p), o);
  EXPECT_NEAR(corcondia(view(p), r), 100.0, 1e-3);
  CpResult bad = r;
  bad.factors.pop_back();
  EXPECT_EQ(test::kind_of([&] { corcondia(view(p), bad); }), ErrorKind::kUsage);
}

}  // namespace
}  // namespace tk::decomp
