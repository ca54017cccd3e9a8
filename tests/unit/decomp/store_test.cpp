// A model is stored only where it is smaller than its tensor (decomp::store_as): a
// low-rank tensor keeps its factors, rounded to f32 with the error measured again on
// the rounded factors; a full-rank one of a few values is kept as the tensor.
#include <gtest/gtest.h>

#include <vector>

#include "lowrank_util.h"
#include "tk/decomp/budget.h"
#include "tk/decomp/decompose.h"

namespace tk::decomp {
namespace {

Decomposition tucker_of(const std::vector<double>& x, const Shape& shape, double tol) {
  DecomposeOptions o;
  o.method = Method::kTucker;
  o.tucker.tol = tol;
  return decompose(DenseView<double>{x.data(), shape}, {"x", shape, DType::kF32}, o);
}

TEST(DecompStore, LowRankKeepsRoundedFactors) {
  const Shape shape = {20, 18, 16};
  const std::vector<double> x = test::planted_tucker(shape, {3, 3, 3}, 0.0, 7);
  Decomposition d = tucker_of(x, shape, 1e-6);
  const uint64_t tensor_bytes = test::count_of(shape) * 4;
  int calls = 0;
  const Stored s = store_as(d, default_factor_dtype(DType::kF32), tensor_bytes, [&](const Decomposition& m) {
    ++calls;
    return reconstruction_error(DenseView<double>{x.data(), shape}, m);
  });
  EXPECT_EQ(s, Stored::kFactors);
  EXPECT_EQ(d.factor_dtype, DType::kF32);
  EXPECT_LT(d.stored_bytes(), tensor_bytes);
  EXPECT_EQ(calls, 1);
  EXPECT_GT(d.rel_error, 0);     // f32 rounding is measured, not assumed away
  EXPECT_LT(d.rel_error, 1e-6);
}

TEST(DecompStore, NotSmallerKeepsTheTensor) {
  const Shape shape = {4, 4, 4};
  const std::vector<double> x = test::gaussian(64, 3);
  Decomposition d = tucker_of(x, shape, 1e-12);  // full ranks: 64 + 3 x 16 values
  int calls = 0;
  const Stored s = store_as(d, DType::kF64, 64 * 8, [&](const Decomposition&) { return ++calls, 0.0; });
  EXPECT_EQ(s, Stored::kTensor);
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(smaller_than_tensor(64 * 8, 64 * 8));  // a budget of the tensor's bytes gains nothing
  EXPECT_TRUE(smaller_than_tensor(64 * 8 - 1, 64 * 8));
  EXPECT_EQ(default_factor_dtype(DType::kF64), DType::kF64);
  EXPECT_EQ(default_factor_dtype(DType::kBF16), DType::kF32);
}

}  // namespace
}  // namespace tk::decomp
