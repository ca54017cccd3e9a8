// TT-SVD on the GPU against the CPU on the same input: wide and tall steps (orders 3 to
// 6, long and short modes), tolerances down to 1e-10, a rank cap, and f32.
//
// Bounds, stated once: under --tol the reported error and the true one (a dense
// reconstruction) are at most tol, as on the CPU, since every step's discarded mass is
// measured from the data (cuda/tt.cpp). Where the ranks match the CPU's, the reported
// errors agree to 1e-5 relative + 1e-9 (f64): both discard the same eigen-directions,
// each side's mass known to its own rounding allowance. For tol >= 1e-4 the ranks are
// the CPU's within one (an eigenvalue on the boundary); below that, past what a Gram
// matrix resolves (sqrt(eps)), the GPU may keep more rank than the CPU's refined paths
// (tt.cpp), never less accuracy. f32: the bound holds to the rounding of float data
// (1e-5 relative on tol).
#include "tk/decomp/cuda/tt.h"

#include <cmath>
#include <vector>

#include "decomp/lowrank_util.h"
#include "gpu_test.h"

namespace tk::decomp {
namespace {

using test::hilbert_like;
using test::planted_tucker;
using test::relative_difference;

void check_against_cpu(const std::vector<double>& x, const std::vector<int64_t>& shape, double tol) {
  TtOptions options;
  options.tol = tol;
  const DenseView<double> view{x.data(), shape};
  const TtResult cpu = tt_svd(view, options);
  const TtResult gpu = cuda::tt_svd(view, options, 0);
  const double true_error = relative_difference(x, test::tt_reconstruct(gpu));
  EXPECT_LE(gpu.rel_error, tol) << "tol " << tol;
  EXPECT_LE(true_error, tol * (1 + 1e-9)) << "tol " << tol;
  EXPECT_NEAR(gpu.rel_error, true_error, 1e-7 + 1e-6 * true_error) << "tol " << tol;
  if (gpu.ranks == cpu.ranks) {
    EXPECT_NEAR(gpu.rel_error, cpu.rel_error, 1e-9 + 1e-5 * cpu.rel_error) << "tol " << tol;
  }
  if (tol >= 1e-4) {
    for (size_t k = 0; k < cpu.ranks.size(); ++k) {
      EXPECT_NEAR(double(gpu.ranks[k]), double(cpu.ranks[k]), 1.0) << "tol " << tol << " rank " << k;
    }
  }
}

TEST(TtGpu, ToleranceBoundHoldsAndMatchesTheCpu) {
  TK_REQUIRE_GPU();
  for (double tol : {0.3, 0.1, 1e-2, 1e-4, 1e-7, 1e-10}) {
    check_against_cpu(hilbert_like({12, 10, 8, 6}), {12, 10, 8, 6}, tol);
    check_against_cpu(planted_tucker({20, 18, 16}, {4, 3, 5}, 0.05, 3), {20, 18, 16}, tol);
  }
}

TEST(TtGpu, TallAndWideSteps) {
  TK_REQUIRE_GPU();
  // A long last mode makes the last steps tall (rows > cols); short ones make them wide.
  check_against_cpu(planted_tucker({4, 5, 6, 40}, {2, 3, 3, 4}, 0.02, 4), {4, 5, 6, 40}, 1e-3);
  check_against_cpu(hilbert_like({3, 4, 5, 4, 3, 2}), {3, 4, 5, 4, 3, 2}, 1e-6);
  check_against_cpu(planted_tucker({30, 2, 25}, {5, 2, 5}, 0.1, 5), {30, 2, 25}, 0.05);
}

TEST(TtGpu, RankCapIsKept) {
  TK_REQUIRE_GPU();
  const std::vector<int64_t> shape = {10, 12, 14};
  const std::vector<double> x = planted_tucker(shape, {6, 6, 6}, 0.1, 6);
  TtOptions options;
  options.max_rank = 3;
  const TtResult cpu = tt_svd(DenseView<double>{x.data(), shape}, options);
  const TtResult gpu = cuda::tt_svd(DenseView<double>{x.data(), shape}, options, 0);
  EXPECT_EQ(gpu.ranks, cpu.ranks);
  EXPECT_NEAR(gpu.rel_error, cpu.rel_error, 1e-8);
  EXPECT_NEAR(gpu.rel_error, relative_difference(x, test::tt_reconstruct(gpu)), 1e-9);
}

TEST(TtGpu, FloatKeepsTheBound) {
  TK_REQUIRE_GPU();
  const std::vector<int64_t> shape = {16, 14, 12, 10};
  const std::vector<double> xd = hilbert_like(shape);
  const std::vector<float> xf(xd.begin(), xd.end());
  for (double tol : {0.1, 1e-2, 1e-3}) {
    TtOptions options;
    options.tol = tol;
    const TtResult gpu = cuda::tt_svd(DenseView<float>{xf.data(), shape}, options, 0);
    EXPECT_LE(gpu.rel_error, tol) << "tol " << tol;
    EXPECT_LE(relative_difference(xd, test::tt_reconstruct(gpu)), tol * (1 + 1e-5)) << "tol " << tol;
  }
}

}  // namespace
}  // namespace tk::decomp
