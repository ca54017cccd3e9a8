// Tensor-Train: the smooth 16^5 tensor gets the ranks of its numerical TT ranks at
// 1e-6; the tolerance bound holds and the reported error is the true one for several
// tolerances, shapes (both sides of every unfolding, and unfoldings large enough for the
// pivoted-Cholesky eigenbasis or the sketch) and precisions, including tails near a
// step's budget and exactly low-rank tensors, where the difference of norms must give way
// to a measured mass; max_rank caps; rounding brings an over-ranked TT back to its ranks
// within its bound; bad options and bad data are refused.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "lowrank_util.h"
#include "test_util.h"
#include "tk/core/error.h"
#include "tk/decomp/decomp.h"

namespace tk::decomp {
namespace {

using test::count_of;
using test::gaussian;
using test::relative_difference;
using tk::test::kind_of;

TEST(Tt, SmoothTensorGetsRanks78871) {
  const std::vector<int64_t> shape = {16, 16, 16, 16, 16};
  const std::vector<double> x = test::hilbert_like(shape);
  TtOptions options;
  options.tol = 1e-6;
  const TtResult tt = tt_svd(DenseView<double>{x.data(), shape}, options);
  EXPECT_EQ(tt.ranks, (std::vector<int64_t>{1, 7, 8, 8, 7, 1}));
  const double true_error = relative_difference(x, test::tt_reconstruct(tt));
  EXPECT_LE(tt.rel_error, 1e-6);
  EXPECT_LE(true_error, 1e-6);
  EXPECT_NEAR(tt.rel_error, true_error, 0.01 * true_error);
}

TEST(Tt, LargeTensorAgreesOnOneAndTwoThreads) {
  // 2^22 elements: large enough for the threaded column blocks.
  const std::vector<int64_t> shape = {16, 16, 16, 16, 64};
  const std::vector<double> x = test::hilbert_like(shape);
  TtOptions options;
  options.tol = 1e-5;
  std::vector<TtResult> runs;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    runs.push_back(tt_svd(DenseView<double>{x.data(), shape}, options));
  }
  omp_set_num_threads(1);
  EXPECT_EQ(runs[0].ranks, runs[1].ranks);
  EXPECT_NEAR(runs[0].rel_error, runs[1].rel_error, 1e-3 * runs[0].rel_error);
  const double true_error = relative_difference(x, test::tt_reconstruct(runs[1]));
  EXPECT_LE(true_error, 1e-5);
  EXPECT_NEAR(runs[1].rel_error, true_error, 1e-3 * true_error);
}

void check_bound(const std::vector<double>& x, const std::vector<int64_t>& shape, double tol) {
  TtOptions options;
  options.tol = tol;
  const TtResult tt = tt_svd(DenseView<double>{x.data(), shape}, options);
  const double true_error = relative_difference(x, test::tt_reconstruct(tt));
  EXPECT_LE(tt.rel_error, tol) << "tol " << tol;
  EXPECT_LE(true_error, tol) << "tol " << tol;
  EXPECT_NEAR(tt.rel_error, true_error, 1e-9 + 1e-3 * true_error) << "tol " << tol;
  EXPECT_EQ(tt.shape, shape);
  EXPECT_EQ(tt.ranks.front(), 1);
  EXPECT_EQ(tt.ranks.back(), 1);
}

TEST(Tt, ToleranceBoundHolds) {
  // {30, 2, 3, 4}: the first unfolding is taller than wide (the C^T C path).
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{6, 5, 4, 3}, {30, 2, 3, 4}, {3, 4, 5, 6, 2}}) {
    const std::vector<double> random = gaussian(count_of(shape), 3);
    const std::vector<double> smooth = test::hilbert_like(shape);
    for (double tol : {0.5, 0.2, 0.05, 1e-2, 1e-4, 1e-8}) {
      check_bound(random, shape, tol);
      check_bound(smooth, shape, tol);
    }
  }
}

TEST(Tt, ToleranceBoundHoldsOnLargeSides) {
  // Unfoldings with both sides >= 48 take the pivoted-Cholesky eigenbasis (smooth data)
  // or fall back to the full eigensolver (random data and, at the small tolerances,
  // smooth data plus noise: the factor keeps most columns); {16, 16, 64} is tall at its
  // second step.
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{64, 64, 64}, {16, 16, 64}}) {
    const int64_t n = count_of(shape);
    const std::vector<double> smooth = test::hilbert_like(shape);
    const std::vector<double> noise = gaussian(n, 5);
    std::vector<double> noisy(smooth);
    for (int64_t i = 0; i < n; ++i) noisy[i] += 1e-7 * noise[i];
    for (double tol : {1e-2, 1e-4, 1e-6, 1e-9}) {
      check_bound(smooth, shape, tol);
      check_bound(noisy, shape, tol);
      check_bound(noise, shape, tol);
    }
  }
}

TEST(Tt, ExactlyLowRankTensorReportsItsZeroError) {
  // Tensors of exact TT ranks: every step discards only rounding. The difference of
  // norms cannot resolve a tail that small (it would report about 1e-8), so the mass
  // must be measured from the data, and the reported error is the true one. In the
  // second and third, step 1 (64 x 256) is first sketched with 16 columns, then measured;
  // in the third its rank, 14, leaves too few of the sketch's columns unused.
  for (const auto& [shape, ranks] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{8, 9, 10, 11}, {1, 3, 4, 2, 1}}, {{4, 16, 16, 16}, {1, 4, 6, 5, 1}}, {{4, 16, 16, 16}, {1, 4, 14, 5, 1}}}) {
    TtResult model;
    model.shape = shape;
    model.ranks = ranks;
    for (size_t k = 0; k < shape.size(); ++k)
      model.cores.push_back(gaussian(ranks[k] * shape[k] * ranks[k + 1], 20 + k));
    const std::vector<double> x = test::tt_reconstruct(model);
    for (double tol : {1e-2, 1e-6}) {
      TtOptions options;
      options.tol = tol;
      const TtResult tt = tt_svd(DenseView<double>{x.data(), shape}, options);
      EXPECT_EQ(tt.ranks, ranks) << "tol " << tol;
      const double true_error = relative_difference(x, test::tt_reconstruct(tt));
      EXPECT_LE(true_error, 1e-13) << "tol " << tol;
      EXPECT_LE(tt.rel_error, 1e-13) << "tol " << tol;
    }
  }
}

TEST(Tt, SketchedStepsKeepTheBound) {
  // Step 1 of these is wide with 64 or more rows: a sketch of 16 columns proposes the
  // basis. Smooth data takes it; noise needs more rank than the sketch holds and falls
  // back to the Gram matrix; the noisy smooth data does either, by tolerance.
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{4, 16, 256}, {8, 8, 16, 32}}) {
    const int64_t n = count_of(shape);
    const std::vector<double> smooth = test::hilbert_like(shape);
    const std::vector<double> noise = gaussian(n, 6);
    std::vector<double> noisy(smooth);
    for (int64_t i = 0; i < n; ++i) noisy[i] += 1e-7 * noise[i];
    for (double tol : {1e-1, 1e-3, 1e-5, 1e-7, 1e-9}) {
      check_bound(smooth, shape, tol);
      check_bound(noisy, shape, tol);
      check_bound(noise, shape, tol);
    }
  }
}

TEST(Tt, TailsNearTheBudgetKeepTheBound) {
  // Tolerances just above and below the error of ranks [1,7,8,8,7,1] on the 16^5 tensor
  // (4.2247e-7): some steps' tails then sit within the difference path's rounding
  // allowance of their budget, where the mass must be measured, not estimated.
  const std::vector<int64_t> shape = {16, 16, 16, 16, 16};
  const std::vector<double> x = test::hilbert_like(shape);
  for (double tol : {4.2e-7, 4.3e-7, 5.48e-7, 5.5e-7, 1.1e-6}) check_bound(x, shape, tol);
}

TEST(Tt, FloatKeepsTheBound) {
  const std::vector<int64_t> shape = {8, 8, 8, 8};
  const std::vector<double> xd = test::hilbert_like(shape);
  const std::vector<float> xf(xd.begin(), xd.end());
  const std::vector<double> xfd(xf.begin(), xf.end());
  for (double tol : {0.1, 1e-2, 1e-3}) {
    TtOptions options;
    options.tol = tol;
    const TtResult tt = tt_svd(DenseView<float>{xf.data(), shape}, options);
    const double true_error = relative_difference(xfd, test::tt_reconstruct(tt));
    EXPECT_LE(tt.rel_error, tol);
    EXPECT_LE(true_error, tol * 1.001);
    EXPECT_NEAR(tt.rel_error, true_error, 1e-5 + 0.01 * true_error);
  }
}

TEST(Tt, MaxRankCaps) {
  const std::vector<int64_t> shape = {6, 5, 4, 3};
  const std::vector<double> x = gaussian(count_of(shape), 4);
  TtOptions options;
  options.max_rank = 2;
  const TtResult tt = tt_svd(DenseView<double>{x.data(), shape}, options);
  EXPECT_EQ(tt.ranks, (std::vector<int64_t>{1, 2, 2, 2, 1}));
  EXPECT_NEAR(tt.rel_error, relative_difference(x, test::tt_reconstruct(tt)), 1e-10);
}

TEST(Tt, MaxRankCapsSketchedSteps) {
  // Step 1 (64 x 256) is sketched; a cap below the ranks the tolerance asks for leaves a
  // tail over the budget, which the difference path refuses and the Gram path measures.
  const std::vector<int64_t> shape = {4, 16, 16, 16};
  const std::vector<double> x = test::hilbert_like(shape);
  TtOptions options;
  options.tol = 1e-9;
  options.max_rank = 4;
  const TtResult tt = tt_svd(DenseView<double>{x.data(), shape}, options);
  EXPECT_EQ(tt.ranks, (std::vector<int64_t>{1, 4, 4, 4, 1}));
  const double true_error = relative_difference(x, test::tt_reconstruct(tt));
  EXPECT_GT(true_error, 1e-9);
  EXPECT_NEAR(tt.rel_error, true_error, 1e-3 * true_error);
}

// The TT of a + b from the TTs of a and b (block cores, ranks added).
TtResult tt_sum(const TtResult& a, const TtResult& b) {
  const size_t d = a.shape.size();
  TtResult s;
  s.shape = a.shape;
  s.ranks.assign(d + 1, 1);
  for (size_t k = 1; k < d; ++k) s.ranks[k] = a.ranks[k] + b.ranks[k];
  for (size_t k = 0; k < d; ++k) {
    const int64_t r0 = s.ranks[k], n = s.shape[k], r1 = s.ranks[k + 1];
    std::vector<double> core(static_cast<size_t>(r0 * n * r1), 0.0);
    auto place = [&](const TtResult& t, int64_t off0, int64_t off1) {
      const int64_t q0 = t.ranks[k], q1 = t.ranks[k + 1];
      for (int64_t i = 0; i < q0; ++i)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t l = 0; l < q1; ++l) core[((off0 + i) * n + j) * r1 + off1 + l] = t.cores[k][(i * n + j) * q1 + l];
    };
    place(a, 0, 0);
    place(b, k == 0 ? 0 : a.ranks[k], k + 1 == d ? 0 : a.ranks[k + 1]);
    s.cores.push_back(std::move(core));
  }
  return s;
}

TEST(Tt, RoundingReducesAnOverRankedTt) {
  const std::vector<int64_t> shape = {7, 6, 5, 4};
  const std::vector<double> x = test::hilbert_like(shape);
  TtOptions options;
  options.tol = 1e-4;
  const TtResult tt = tt_svd(DenseView<double>{x.data(), shape}, options);
  const TtResult doubled = tt_sum(tt, tt);  // 2x with twice the ranks
  const std::vector<double> dense = test::tt_reconstruct(doubled);
  for (double tol : {1e-10, 1e-3, 0.1}) {
    TtOptions round;
    round.tol = tol;
    const TtResult r = tt_round(doubled, round);
    const double true_error = relative_difference(dense, test::tt_reconstruct(r));
    EXPECT_LE(r.rel_error, tol);
    EXPECT_LE(true_error, tol);
    EXPECT_NEAR(r.rel_error, true_error, 1e-9 + 1e-3 * true_error);
    for (size_t k = 1; k < shape.size(); ++k) EXPECT_LE(r.ranks[k], tt.ranks[k]) << "tol " << tol;
  }
  TtOptions cap;
  cap.max_rank = 1;
  const TtResult r = tt_round(doubled, cap);
  EXPECT_EQ(r.ranks, (std::vector<int64_t>{1, 1, 1, 1, 1}));
  EXPECT_NEAR(r.rel_error, relative_difference(dense, test::tt_reconstruct(r)), 1e-10);
}

TEST(Tt, RoundingShrinksRanksAboveTheUnfoldingSize) {
  // Ranks 5 where the unfoldings allow at most 2 (2 x 2 x 2).
  TtResult tt;
  tt.shape = {2, 2, 2};
  tt.ranks = {1, 5, 5, 1};
  for (size_t k = 0; k < 3; ++k) tt.cores.push_back(gaussian(tt.ranks[k] * 2 * tt.ranks[k + 1], 10 + k));
  const std::vector<double> dense = test::tt_reconstruct(tt);
  TtOptions options;
  options.tol = 1e-12;
  const TtResult r = tt_round(tt, options);
  EXPECT_LE(r.ranks[1], 2);
  EXPECT_LE(r.ranks[2], 2);
  EXPECT_LT(relative_difference(dense, test::tt_reconstruct(r)), 1e-12);
}

TEST(Tt, BadOptionsAndDataAreRefused) {
  const std::vector<int64_t> shape = {3, 4, 5};
  std::vector<double> x = gaussian(60, 1);
  const DenseView<double> view{x.data(), shape};
  auto run = [&](TtOptions o) { return kind_of([&] { tt_svd(view, o); }); };
  EXPECT_EQ(run(TtOptions{}), ErrorKind::kUsage);  // neither tol nor max_rank
  EXPECT_EQ(run(TtOptions{1.0, 0}), ErrorKind::kUsage);
  EXPECT_EQ(run(TtOptions{-0.5, 0}), ErrorKind::kUsage);
  EXPECT_EQ(run(TtOptions{0.1, -1}), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([&] { tt_svd(DenseView<double>{x.data(), {60}}, TtOptions{0.1, 0}); }), ErrorKind::kInvalidInput);
  x[5] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(run(TtOptions{0.1, 0}), ErrorKind::kInvalidInput);
  std::vector<float> xf(60, 1.0f);
  xf[0] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(kind_of([&] { tt_svd(DenseView<float>{xf.data(), shape}, TtOptions{0.1, 0}); }), ErrorKind::kInvalidInput);

  TtResult broken;
  broken.shape = {2, 2};
  broken.ranks = {1, 2, 1};
  broken.cores = {std::vector<double>(4, 1.0), std::vector<double>(3, 1.0)};
  EXPECT_EQ(kind_of([&] { tt_round(broken, TtOptions{0.1, 0}); }), ErrorKind::kInvalidInput);
  broken.cores[1].push_back(1.0);
  EXPECT_EQ(kind_of([&] { tt_round(broken, TtOptions{}); }), ErrorKind::kUsage);
}

}  // namespace
}  // namespace tk::decomp
