// Tucker: the tolerance bound holds and the reported error is the true one (checked by
// reconstruction) on random and smooth tensors, in double and float; planted low-rank
// tensors are recovered exactly; HOOI is never worse than ST-HOSVD; bad options and bad
// data are refused with the documented error kinds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "lowrank_util.h"
#include "test_util.h"
#include "tk/core/error.h"
#include "tk/decomp/decomp.h"

namespace tk::decomp {
namespace {

using test::count_of;
using test::gaussian;
using test::planted_tucker;
using test::relative_difference;
using tk::test::kind_of;

void expect_orthonormal(const std::vector<double>& u, int64_t n, int64_t r) {
  for (int64_t a = 0; a < r; ++a)
    for (int64_t b = 0; b < r; ++b) {
      double dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += u[i * r + a] * u[i * r + b];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-10);
    }
}

void check_tolerance_bound(const std::vector<double>& x, const std::vector<int64_t>& shape, double tol) {
  TuckerOptions options;
  options.tol = tol;
  const TuckerResult t = tucker(DenseView<double>{x.data(), shape}, options);
  const double true_error = relative_difference(x, test::tucker_reconstruct(t, shape));
  EXPECT_LE(t.rel_error, tol) << "tol " << tol;
  EXPECT_LE(true_error, tol) << "tol " << tol;
  EXPECT_NEAR(t.rel_error, true_error, 1e-7 + 1e-6 * true_error) << "tol " << tol;
  for (size_t n = 0; n < shape.size(); ++n) expect_orthonormal(t.factors[n], shape[n], t.ranks[n]);
}

TEST(Tucker, ToleranceBoundHoldsOnRandomAndSmoothTensors) {
  const std::vector<int64_t> shape = {14, 11, 9};
  const std::vector<double> random = gaussian(count_of(shape), 1);
  const std::vector<double> smooth = test::hilbert_like({20, 18, 16, 5});
  const std::vector<double> noisy = planted_tucker(shape, {4, 3, 5}, 0.05, 3);
  for (double tol : {0.5, 0.2, 0.05, 1e-2, 1e-3, 1e-6, 1e-9}) {
    check_tolerance_bound(random, shape, tol);
    check_tolerance_bound(smooth, {20, 18, 16, 5}, tol);
    check_tolerance_bound(noisy, shape, tol);
  }
}

TEST(Tucker, SmoothTensorGetsSmallRanks) {
  const std::vector<double> smooth = test::hilbert_like({20, 18, 16, 5});
  TuckerOptions options;
  options.tol = 1e-6;
  const TuckerResult t = tucker(DenseView<double>{smooth.data(), {20, 18, 16, 5}}, options);
  for (int64_t r : t.ranks) EXPECT_LE(r, 8);
}

TEST(Tucker, ExactLowRankIsRecovered) {
  const std::vector<int64_t> shape = {10, 12, 8}, ranks = {3, 4, 2};
  const std::vector<double> x = planted_tucker(shape, ranks, 0, 5);
  TuckerOptions fixed;
  fixed.ranks = ranks;
  const TuckerResult a = tucker(DenseView<double>{x.data(), shape}, fixed);
  EXPECT_LT(a.rel_error, 1e-7);
  EXPECT_LT(relative_difference(x, test::tucker_reconstruct(a, shape)), 1e-12);
  TuckerOptions by_tol;
  by_tol.tol = 1e-6;
  const TuckerResult b = tucker(DenseView<double>{x.data(), shape}, by_tol);
  EXPECT_EQ(b.ranks, ranks);
  EXPECT_EQ(b.iterations, 0);
}

TEST(Tucker, HooiIsNeverWorseThanSthosvd) {
  const std::vector<int64_t> shape = {15, 12, 10};
  for (uint64_t seed : {1, 2, 3}) {
    const std::vector<double> x = planted_tucker(shape, {3, 3, 3}, 0.3, seed);
    TuckerOptions st;
    st.ranks = {3, 2, 4};
    TuckerOptions ho = st;
    ho.method = TuckerMethod::kHooi;
    int callbacks = 0;
    ho.on_iteration = [&](const IterationInfo& info) {
      ++callbacks;
      EXPECT_EQ(info.iteration, callbacks);
    };
    const TuckerResult a = tucker(DenseView<double>{x.data(), shape}, st);
    const TuckerResult b = tucker(DenseView<double>{x.data(), shape}, ho);
    EXPECT_LE(b.rel_error, a.rel_error + 1e-15);
    EXPECT_GE(b.iterations, 1);
    EXPECT_GE(callbacks, 1);
    EXPECT_NEAR(b.rel_error, relative_difference(x, test::tucker_reconstruct(b, shape)), 1e-10);
    for (size_t n = 0; n < shape.size(); ++n) expect_orthonormal(b.factors[n], shape[n], b.ranks[n]);
  }
}

TEST(Tucker, HooiWithToleranceKeepsTheBound) {
  const std::vector<int64_t> shape = {12, 10, 9};
  const std::vector<double> x = planted_tucker(shape, {3, 3, 3}, 0.1, 9);
  TuckerOptions options;
  options.tol = 0.12;
  options.method = TuckerMethod::kHooi;
  const TuckerResult t = tucker(DenseView<double>{x.data(), shape}, options);
  EXPECT_LE(t.rel_error, 0.12);
}

TEST(Tucker, FloatInputKeepsTheBound) {
  const std::vector<int64_t> shape = {16, 12, 10};
  const std::vector<double> xd = planted_tucker(shape, {4, 4, 4}, 0.01, 4);
  const std::vector<float> xf(xd.begin(), xd.end());
  for (double tol : {0.3, 0.05, 0.02, 1e-2}) {
    TuckerOptions options;
    options.tol = tol;
    const TuckerResult t = tucker(DenseView<float>{xf.data(), shape}, options);
    const std::vector<double> xfd(xf.begin(), xf.end());
    const double true_error = relative_difference(xfd, test::tucker_reconstruct(t, shape));
    EXPECT_LE(t.rel_error, tol);
    EXPECT_NEAR(t.rel_error, true_error, 1e-4);
  }
  TuckerOptions fixed;
  fixed.ranks = {4, 4, 4};
  fixed.method = TuckerMethod::kHooi;
  const TuckerResult t = tucker(DenseView<float>{xf.data(), shape}, fixed);
  EXPECT_NEAR(t.rel_error, 0.01, 2e-3);
}

TEST(Tucker, BadOptionsAreUsageErrors) {
  const std::vector<int64_t> shape = {4, 5, 6};
  const std::vector<double> x = gaussian(count_of(shape), 1);
  const DenseView<double> view{x.data(), shape};
  auto run = [&](TuckerOptions o) { return kind_of([&] { tucker(view, o); }); };
  TuckerOptions o;
  EXPECT_EQ(run(o), ErrorKind::kUsage);  // neither ranks nor tol
  o.ranks = {2, 2};
  EXPECT_EQ(run(o), ErrorKind::kUsage);  // too few ranks
  o.ranks = {2, 2, 2, 2};
  EXPECT_EQ(run(o), ErrorKind::kUsage);  // longer than the order
  o.ranks = {2, 0, 2};
  EXPECT_EQ(run(o), ErrorKind::kUsage);
  o.ranks = {2, 6, 2};
  EXPECT_EQ(run(o), ErrorKind::kUsage);  // above I_n
  o.ranks = {2, 2, 2};
  o.tol = 0.1;
  EXPECT_EQ(run(o), ErrorKind::kUsage);  // both
  o.ranks.clear();
  for (double tol : {1.0, -0.1, 2.0, std::nan("")}) {
    o.tol = tol;
    EXPECT_EQ(run(o), ErrorKind::kUsage) << tol;
  }
  o.ranks = {2, 2, 2};
  o.tol = 0;
  o.method = TuckerMethod::kHooi;
  o.max_iters = 0;
  EXPECT_EQ(run(o), ErrorKind::kUsage);
}

TEST(Tucker, BadDataIsInvalidInput) {
  std::vector<double> x = gaussian(60, 1);
  TuckerOptions o;
  o.tol = 0.1;
  EXPECT_EQ(kind_of([&] { tucker(DenseView<double>{x.data(), {60}}, o); }), ErrorKind::kInvalidInput);
  x[17] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(kind_of([&] { tucker(DenseView<double>{x.data(), {3, 4, 5}}, o); }), ErrorKind::kInvalidInput);
  x[17] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(kind_of([&] { tucker(DenseView<double>{x.data(), {3, 4, 5}}, o); }), ErrorKind::kInvalidInput);
  std::vector<float> xf(60, 1.0f);
  xf[59] = std::nanf("");
  EXPECT_EQ(kind_of([&] { tucker(DenseView<float>{xf.data(), {3, 4, 5}}, o); }), ErrorKind::kInvalidInput);
}

TEST(Tucker, ZeroTensorHasZeroError) {
  const std::vector<double> x(24, 0.0);
  TuckerOptions o;
  o.tol = 0.1;
  const TuckerResult t = tucker(DenseView<double>{x.data(), {2, 3, 4}}, o);
  EXPECT_EQ(t.rel_error, 0.0);
  EXPECT_EQ(t.ranks, (std::vector<int64_t>{1, 1, 1}));
}

}  // namespace
}  // namespace tk::decomp
