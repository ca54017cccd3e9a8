#include "tk/bench/synthetic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "test_util.h"
#include "tk/core/error.h"
#include "tk/linalg/blas.h"

namespace tk::bench {
namespace {

struct Moments {
  double mean = 0, variance = 0, kurtosis = 0;
};

Moments moments(const Tensor& t) {
  const float* x = t.data_as<float>();
  double n = static_cast<double>(t.numel()), s = 0, s2 = 0, s4 = 0;
  for (uint64_t i = 0; i < t.numel(); ++i) s += x[i];
  Moments m;
  m.mean = s / n;
  for (uint64_t i = 0; i < t.numel(); ++i) {
    double d = x[i] - m.mean;
    s2 += d * d;
    s4 += d * d * d * d;
  }
  m.variance = s2 / n;
  m.kurtosis = s4 / n / (m.variance * m.variance);
  return m;
}

TEST(Synthetic, SameSeedSameBytesOtherSeedOtherBytes) {
  Tensor a = synthetic_tensor(Distribution::kGaussian, {64, 32}, 7);
  Tensor b = synthetic_tensor(Distribution::kGaussian, {64, 32}, 7);
  Tensor c = synthetic_tensor(Distribution::kGaussian, {64, 32}, 8);
  EXPECT_EQ(a.dtype(), DType::kF32);
  EXPECT_EQ(a.shape(), (Shape{64, 32}));
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.nbytes()), 0);
}

TEST(Synthetic, GaussianHasUnitVarianceAndNormalTails) {
  Moments m = moments(synthetic_tensor(Distribution::kGaussian, {200000}, 1));
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  EXPECT_NEAR(m.variance, 1.0, 0.02);
  EXPECT_NEAR(m.kurtosis, 3.0, 0.1);
}

TEST(Synthetic, StudentTIsHeavyTailed) {
  // t(3) has variance 3 and infinite kurtosis: the sample kurtosis is far above 3.
  Moments m = moments(synthetic_tensor(Distribution::kStudentT, {200000}, 1));
  EXPECT_NEAR(m.mean, 0.0, 0.05);
  EXPECT_GT(m.kurtosis, 8.0);
}

TEST(Synthetic, LowRankMatrixHasEightSingularValuesAboveTheNoise) {
  Tensor t = synthetic_tensor(Distribution::kLowRank, {60, 40}, 3);
  std::vector<double> a(t.data_as<float>(), t.data_as<float>() + t.numel());
  std::vector<double> u(60 * 40), s(40), vt(40 * 40);
  linalg::svd(60, 40, a.data(), u.data(), s.data(), vt.data());
  // Energy beyond the eighth singular value is the 1% noise: about 1e-4 of the total.
  double total = 0, tail = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    total += s[i] * s[i];
    if (i >= kLowRankTerms) tail += s[i] * s[i];
  }
  EXPECT_LT(tail / total, 4e-4);
  EXPECT_GT(tail / total, 2e-5);
  EXPECT_GT(s[kLowRankTerms - 1], 10 * s[kLowRankTerms]);
}

TEST(Synthetic, NamesRoundTripAndBadInputIsUsage) {
  for (const auto& name : distribution_names()) EXPECT_EQ(distribution_name(distribution_parse(name)), name);
  EXPECT_EQ(test::kind_of([] { distribution_parse("uniform"); }), ErrorKind::kUsage);
  EXPECT_EQ(test::kind_of([] { synthetic_tensor(Distribution::kGaussian, {4, 0}, 1); }), ErrorKind::kUsage);
  EXPECT_EQ(test::kind_of([] { synthetic_tensor(Distribution::kGaussian, {}, 1); }), ErrorKind::kUsage);
}

}  // namespace
}  // namespace tk::bench
