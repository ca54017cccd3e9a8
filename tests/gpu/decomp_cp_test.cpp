// Dense CP-ALS on the GPU against the CPU on the same input: the MTTKRP of every kind of
// mode (first, middle, last, an extent of 1, order 3 and 4) through a fixed number of
// sweeps from the same start, and converged fits, in f64 and f32, with and without
// nonnegativity.
//
// Bounds, stated once: both sides run the same ALS loop on the host (cp_core.cpp); only
// the MTTKRP's sums run in another order. After a few sweeps from the same start the
// weights and factors agree to 1e-8 (f64, relative to the largest entry); converged
// relative errors agree to 1e-6 (f64) or 1e-3 (f32), the fits' own resolution there.
#include "tk/decomp/cuda/cp.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "decomp/cp_test_util.h"
#include "gpu_test.h"
#include "tk/core/error.h"

namespace tk::decomp {
namespace {

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

void expect_same_model(const CpResult& gpu, const CpResult& cpu, double tolerance) {
  ASSERT_EQ(gpu.lambda.size(), cpu.lambda.size());
  for (size_t r = 0; r < cpu.lambda.size(); ++r)
    EXPECT_NEAR(gpu.lambda[r], cpu.lambda[r], tolerance * max_abs(cpu.lambda)) << "component " << r;
  ASSERT_EQ(gpu.factors.size(), cpu.factors.size());
  for (size_t n = 0; n < cpu.factors.size(); ++n)
    for (size_t i = 0; i < cpu.factors[n].size(); ++i)
      EXPECT_NEAR(gpu.factors[n][i], cpu.factors[n][i], tolerance) << "mode " << n << " entry " << i;
  EXPECT_EQ(gpu.iterations, cpu.iterations);
}

TEST(CpGpu, SweepsFromTheSameStartMatchTheCpu) {
  TK_REQUIRE_GPU();
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{12, 10, 8}, {6, 5, 4, 3}, {7, 1, 5}}) {
    // Rank 5 fitted at rank 3: six sweeps stay far from converging, on both sides alike.
    const test::PlantedCp p = test::planted_cp(shape, 5, 11);
    for (CpInit init : {CpInit::kGram, CpInit::kRandom}) {
      CpOptions o = test::fixed_iteration_options(init, false, 3);
      o.restarts = 1;
      const DenseView<double> x{p.data.data(), shape};
      expect_same_model(cuda::cp_als(x, o, 0), cp_als(x, o), 1e-8);
    }
  }
}

TEST(CpGpu, NonnegativeAndRidgeSweepsMatchTheCpu) {
  TK_REQUIRE_GPU();
  const std::vector<int64_t> shape = {14, 12, 10};
  const test::PlantedCp p = test::planted_cp(shape, 5, 12, true);
  CpOptions o = test::fixed_iteration_options(CpInit::kGram, true, 4);
  o.l2 = 1e-3;
  const DenseView<double> x{p.data.data(), shape};
  expect_same_model(cuda::cp_als(x, o, 0), cp_als(x, o), 1e-8);
}

TEST(CpGpu, ConvergedErrorMatchesTheCpu) {
  TK_REQUIRE_GPU();
  const std::vector<int64_t> shape = {40, 30, 20};
  test::PlantedCp p = test::planted_cp(shape, 4, 13);
  // 1% noise, so that the error has a floor both sides reach.
  std::mt19937 gen(14);
  std::normal_distribution<double> normal;
  double norm = 0;
  for (double v : p.data) norm += v * v;
  const double scale = 0.01 * std::sqrt(norm / double(p.data.size()));
  for (double& v : p.data) v += scale * normal(gen);
  CpOptions o;
  o.rank = 4;
  o.tol = 1e-10;
  const DenseView<double> x{p.data.data(), shape};
  const CpResult cpu = cp_als(x, o), gpu = cuda::cp_als(x, o, 0);
  EXPECT_NEAR(gpu.rel_error, cpu.rel_error, 1e-6);
  EXPECT_GT(test::factor_match_score(p.factors, gpu.factors, 4, 4), 0.99);
  const std::vector<float> xf(p.data.begin(), p.data.end());
  const DenseView<float> view{xf.data(), shape};
  EXPECT_NEAR(cuda::cp_als(view, o, 0).rel_error, cp_als(view, o).rel_error, 1e-3);
}

TEST(CpGpu, MaskedCpIsRefused) {
  TK_REQUIRE_GPU();
  const std::vector<int64_t> shape = {4, 3, 2};
  const std::vector<double> data(24, 1.0);
  const std::vector<uint8_t> mask(24, 1);
  CpOptions o;
  o.rank = 1;
  o.mask = mask.data();
  EXPECT_THROW(cuda::cp_als(DenseView<double>{data.data(), shape}, o, 0), Error);
}

}  // namespace
}  // namespace tk::decomp
