// Tucker on the GPU against the CPU on the same input: every mode operation path (first,
// middle in one and in several batches, last mode), fixed ranks, --tol and HOOI, in f64
// and f32, and the placement decompose() follows (every method's).
//
// Bounds, stated once: the reported relative error differs from the CPU's by at most
// 1e-10 + 1e-8 e (f64) or 1e-4 (f32, absolute), e the CPU's error. Both sides run the
// same algorithm on the same ||X||^2 (summed on the host); only the order of the sums
// inside the products and the eigensolver differ, which moves e^2 by a few units of
// rounding of ||X||^2 (f64: ~1e-15; f32 products: ~1e-6, hence 1e-4 on e >= 1e-2).
// Under --tol the bound itself holds for the reported and for the true error (a
// reconstruction), as on the CPU: the rule and its retries are the CPU's
// (tucker_internal.h).
#include "tk/decomp/cuda/tucker.h"

#include <cmath>
#include <vector>

#include "decomp/lowrank_util.h"
#include "gpu_test.h"
#include "tk/core/error.h"
#include "tk/decomp/decompose.h"

namespace tk::decomp {
namespace {

using test::planted_tucker;
using test::relative_difference;

constexpr double kF64Absolute = 1e-10, kF64Relative = 1e-8, kF32Absolute = 1e-4;

void expect_close_f64(double gpu, double cpu) { EXPECT_NEAR(gpu, cpu, kF64Absolute + kF64Relative * cpu); }

void expect_orthonormal(const std::vector<double>& u, int64_t n, int64_t r, double tolerance) {
  for (int64_t a = 0; a < r; ++a)
    for (int64_t b = 0; b < r; ++b) {
      double dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += u[i * r + a] * u[i * r + b];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, tolerance);
    }
}

// GPU and CPU with the same fixed ranks on x: the same ranks, errors within the f64
// bound, and the GPU's reported error the true one.
void compare_fixed(const std::vector<double>& x, const std::vector<int64_t>& shape, const std::vector<int64_t>& ranks,
                   TuckerMethod method) {
  TuckerOptions options;
  options.ranks = ranks;
  options.method = method;
  const DenseView<double> view{x.data(), shape};
  const TuckerResult cpu = tucker(view, options);
  const TuckerResult gpu = cuda::tucker(view, options, 0);
  EXPECT_EQ(gpu.ranks, cpu.ranks);
  expect_close_f64(gpu.rel_error, cpu.rel_error);
  EXPECT_NEAR(gpu.rel_error, relative_difference(x, test::tucker_reconstruct(gpu, shape)), 1e-9);
  for (size_t n = 0; n < shape.size(); ++n) expect_orthonormal(gpu.factors[n], shape[n], gpu.ranks[n], 1e-10);
}

TEST(TuckerGpu, SthosvdMatchesTheCpuOnEveryModePath) {
  TK_REQUIRE_GPU();
  // Order 3 and 4: first, middle and last modes; a matrix: first and last only.
  compare_fixed(planted_tucker({30, 25, 20}, {4, 5, 3}, 0.05, 1), {30, 25, 20}, {4, 5, 3}, TuckerMethod::kSthosvd);
  compare_fixed(planted_tucker({12, 9, 10, 7}, {3, 4, 2, 3}, 0.1, 2), {12, 9, 10, 7}, {3, 4, 2, 3},
                TuckerMethod::kSthosvd);
  compare_fixed(planted_tucker({40, 30}, {6, 6}, 0.02, 3), {40, 30}, {6, 6}, TuckerMethod::kSthosvd);
}

TEST(TuckerGpu, MiddleModeGramInSeveralBatches) {
  TK_REQUIRE_GPU();
  // Mode 1 goes first (the largest reduction, 400 / 5) and its 300 slice Gram matrices
  // of 400 x 400 exceed one batch (cuda/modes.cpp): the batches' sums must add up.
  const std::vector<int64_t> shape = {300, 400, 8};
  compare_fixed(planted_tucker(shape, {30, 5, 8}, 0.05, 4), shape, {30, 5, 8}, TuckerMethod::kSthosvd);
}

TEST(TuckerGpu, HooiMatchesTheCpu) {
  TK_REQUIRE_GPU();
  const std::vector<int64_t> shape = {24, 20, 16};
  for (uint64_t seed : {5, 6}) compare_fixed(planted_tucker(shape, {3, 3, 3}, 0.3, seed), shape, {3, 3, 3}, TuckerMethod::kHooi);
}

TEST(TuckerGpu, ToleranceBoundHolds) {
  TK_REQUIRE_GPU();
  const std::vector<int64_t> shape = {20, 18, 16, 5};
  const std::vector<double> x = planted_tucker(shape, {4, 3, 5, 2}, 0.05, 7);
  for (double tol : {0.3, 0.1, 0.06, 0.01, 1e-4, 1e-7}) {
    TuckerOptions options;
    options.tol = tol;
    const DenseView<double> view{x.data(), shape};
    const TuckerResult cpu = tucker(view, options);
    const TuckerResult gpu = cuda::tucker(view, options, 0);
    const double true_error = relative_difference(x, test::tucker_reconstruct(gpu, shape));
    EXPECT_LE(gpu.rel_error, tol) << "tol " << tol;
    EXPECT_LE(true_error, tol) << "tol " << tol;
    EXPECT_NEAR(gpu.rel_error, true_error, 1e-7 + 1e-6 * true_error) << "tol " << tol;
    // The planted ranks sit behind clear gaps: both sides choose the same ones.
    if (tol >= 0.06) {
      EXPECT_EQ(gpu.ranks, cpu.ranks) << "tol " << tol;
      if (gpu.ranks == cpu.ranks) expect_close_f64(gpu.rel_error, cpu.rel_error);
    }
  }
}

TEST(TuckerGpu, FloatMatchesTheCpuAndKeepsTheBound) {
  TK_REQUIRE_GPU();
  const std::vector<int64_t> shape = {32, 28, 24};
  const std::vector<double> xd = planted_tucker(shape, {4, 4, 4}, 0.02, 8);
  const std::vector<float> xf(xd.begin(), xd.end());
  const DenseView<float> view{xf.data(), shape};
  TuckerOptions fixed;
  fixed.ranks = {4, 4, 4};
  EXPECT_NEAR(cuda::tucker(view, fixed, 0).rel_error, tucker(view, fixed).rel_error, kF32Absolute);
  fixed.method = TuckerMethod::kHooi;
  EXPECT_NEAR(cuda::tucker(view, fixed, 0).rel_error, tucker(view, fixed).rel_error, kF32Absolute);
  for (double tol : {0.1, 0.03, 1e-2}) {
    TuckerOptions options;
    options.tol = tol;
    const TuckerResult gpu = cuda::tucker(view, options, 0);
    EXPECT_LE(gpu.rel_error, tol) << "tol " << tol;
    EXPECT_LE(relative_difference(xd, test::tucker_reconstruct(gpu, shape)), tol * (1 + 1e-5)) << "tol " << tol;
  }
}

TEST(TuckerGpu, DecomposeRunsWherePlaced) {
  TK_REQUIRE_GPU();
  DecomposeOptions options;
  options.method = Method::kTucker;
  options.tucker.ranks = {3, 3, 3};
  device::Request automatic;
  EXPECT_TRUE(placement(automatic, options, kGpuMinElements).cuda);
  EXPECT_FALSE(placement(automatic, options, kGpuMinElements - 1).cuda);
  device::Request cuda0;
  cuda0.kind = device::Request::Kind::kCuda;
  options.device = placement(cuda0, options, 1);
  ASSERT_TRUE(options.device.cuda);
  const std::vector<int64_t> shape = {16, 14, 12};
  const std::vector<double> x = planted_tucker(shape, {3, 3, 3}, 0.1, 9);
  const Decomposition on_gpu = decompose(DenseView<double>{x.data(), shape}, {"x", shape, DType::kF64}, options);
  const TuckerResult cpu = tucker(DenseView<double>{x.data(), shape}, options.tucker);
  expect_close_f64(on_gpu.rel_error, cpu.rel_error);
  // What has no GPU path: refused by name under cuda, the CPU under auto.
  options.method = Method::kRescal;
  EXPECT_THROW(placement(cuda0, options, 1), Error);
  EXPECT_FALSE(placement(automatic, options, kGpuMinElements).cuda);
  options.method = Method::kTt;
  EXPECT_TRUE(placement(automatic, options, kGpuMinElements).cuda);
  options.method = Method::kCp;
  EXPECT_TRUE(placement(automatic, options, kGpuMinElements).cuda);
  const uint8_t observed = 1;
  options.cp.mask = &observed;
  EXPECT_THROW(placement(cuda0, options, 1), Error);
  EXPECT_FALSE(placement(automatic, options, kGpuMinElements).cuda);
}

}  // namespace
}  // namespace tk::decomp
