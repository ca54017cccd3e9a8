// Storage budgets: the search on a stand-in family of models, and on real Tucker and TT.
#include <cmath>
#include <random>

#include <omp.h>

#include <gtest/gtest.h>

#include "test_util.h"
#include "tk/decomp/budget.h"

namespace tk::decomp {
namespace {

// A CP family whose error falls with the rank (the stand-in for cp_als).
BudgetProblem fake_cp(std::vector<int>& asked) {
  BudgetProblem p;
  p.method = Method::kCp;
  p.cp_elements_per_rank = 1 + 10 + 10;
  p.max_rank = 10;
  p.at_rank = [&asked](int rank) {
    asked.push_back(rank);
    CpResult r;
    r.lambda.assign(rank, 1.0);
    r.factors = {std::vector<double>(10 * rank, 0.1), std::vector<double>(10 * rank, 0.1)};
    Decomposition d = from_cp("x", {10, 10}, DType::kF32, r);
    d.rel_error = 1.0 / (rank + 1);
    return d;
  };
  // Rounding costs little next to the rank: the error is the model's.
  p.error_of = [](const Decomposition& d) { return d.rel_error; };
  return p;
}

TEST(Budget, CpReinvestsNarrowerDtypesInRank) {
  std::vector<int> asked;
  BudgetProblem p = fake_cp(asked);
  // 21 elements per rank: 4 bytes -> rank 2 (168 B of 200), 2 bytes -> rank 4 (168 B).
  BudgetChoice c = budget_search(p, 200);
  ASSERT_EQ(c.candidates.size(), 3u);
  EXPECT_EQ(c.candidates[0].ranks, (std::vector<int64_t>{2}));
  EXPECT_EQ(c.candidates[1].ranks, (std::vector<int64_t>{4}));
  EXPECT_EQ(c.model.ranks, (std::vector<int64_t>{4}));
  EXPECT_EQ(c.model.factor_dtype, DType::kBF16);  // first of the equally good 16-bit types
  EXPECT_LE(c.model.stored_bytes(), 200u);
  EXPECT_EQ(c.decompositions, 2);  // bf16 and f16 share the rank-4 model
  EXPECT_EQ(asked, (std::vector<int>{2, 4}));
}

// The error of rounded parts, masked entries left out; for sparse coordinates from inner
// products, as from the dense tensor.
TEST(Budget, ReconstructionErrorOfStoredPartsMaskedAndSparse) {
  const Shape shape = {4, 3, 2};
  CpResult r;
  r.lambda = {2.0, 0.5};
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g;
  for (int64_t n : shape) {
    r.factors.emplace_back(n * 2);
    for (double& v : r.factors.back()) v = g(rng);
  }
  Decomposition d = from_cp("x", shape, DType::kF64, r);
  std::vector<double> x = reconstruct(d);
  for (double& v : x) v += 0.01 * g(rng);
  const DenseView<double> view{x.data(), shape};
  round_parts(d, DType::kBF16);
  const double dense = reconstruction_error(view, d);
  EXPECT_GT(dense, 0.0);

  std::vector<uint8_t> mask(x.size(), 1);
  mask[5] = 0;
  std::vector<double> y = reconstruct(d);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (mask[i]) diff += (x[i] - y[i]) * (x[i] - y[i]), norm += x[i] * x[i];
  EXPECT_NEAR(reconstruction_error(view, d, mask.data()), std::sqrt(diff / norm), 1e-15);

  io::SparseTensor sparse;
  sparse.shape = shape;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k) {
        sparse.indices.insert(sparse.indices.end(), {i, j, k});
        sparse.values.push_back(x[(i * 3 + j) * 2 + k]);
      }
  EXPECT_NEAR(reconstruction_error(sparse, d), dense, 1e-9 * dense);
}

TEST(Budget, TooSmallIsAUsageError) {
  std::vector<int> asked;
  BudgetProblem p = fake_cp(asked);
  EXPECT_EQ(test::kind_of([&] { budget_search(p, 41); }), ErrorKind::kUsage);
}

std::vector<double> smooth_tensor(const Shape& s) {
  std::vector<double> x(shape_numel(s));
  size_t e = 0;
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) x[e++] = 1.0 / (1.0 + i + j + k);
  return x;
}

TEST(Budget, TuckerAndTtFitTheBudgetAndBeatTheSmallestModel) {
  // About 30 decompositions of a tiny tensor: threads would only wait on each other.
  omp_set_num_threads(1);
  const Shape shape = {12, 11, 10};
  std::vector<double> x = smooth_tensor(shape);
  DenseView<double> view{x.data(), shape};
  for (Method method : {Method::kTucker, Method::kTt}) {
    BudgetProblem p;
    p.method = method;
    p.at_tol = [&](double tol) {
      if (method == Method::kTucker) {
        TuckerOptions o;
        o.tol = tol;
        return from_tucker("x", shape, DType::kF32, tucker(view, o));
      }
      TtOptions o;
      o.tol = tol;
      return from_tt("x", shape, DType::kF32, tt_svd(view, o));
    };
    p.error_of = [&](const Decomposition& d) { return reconstruction_error(view, d); };
    const uint64_t budget = 600;
    BudgetChoice c = budget_search(p, budget);
    EXPECT_LE(c.model.stored_bytes(), budget) << method_name(method);
    EXPECT_LT(c.model.rel_error, 1e-2) << method_name(method);
    for (const auto& cand : c.candidates) {
      EXPECT_LE(cand.bytes, budget);
      EXPECT_GE(cand.rel_error, c.model.rel_error);
    }
    // The reported error is that of the rounded parts as stored.
    EXPECT_NEAR(reconstruction_error(view, c.model), c.model.rel_error, 1e-15);
  }
}

}  // namespace
}  // namespace tk::decomp
