// Tucker across processes (dense_dist.h) on ranks that are threads: each holds its slab
// of the cut mode; the result on 1..4 processes against the one-process tucker(), with
// ranks, with a tolerance (whose bound holds), with HOOI, in float, and with more
// processes than the cut mode has rows.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <vector>

#include "dist/thread_comm.h"
#include "lowrank_util.h"
#include "tk/decomp/decomp.h"
#include "tk/decomp/dense_dist.h"

namespace tk::decomp {
namespace {

using test::count_of;
using test::planted_tucker;

// Rows [lo, hi) of `mode` of the row-major tensor x of `shape`.
template <typename T>
std::vector<T> slab(const std::vector<T>& x, const std::vector<int64_t>& shape, size_t mode, int64_t lo, int64_t hi) {
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < mode; ++k) outer *= shape[k];
  for (size_t k = mode + 1; k < shape.size(); ++k) inner *= shape[k];
  std::vector<T> out;
  for (int64_t o = 0; o < outer; ++o)
    out.insert(out.end(), x.begin() + (o * shape[mode] + lo) * inner, x.begin() + (o * shape[mode] + hi) * inner);
  return out;
}

// Every process's result (they must all be the same), for `processes` threads.
template <typename T>
std::vector<TuckerResult> run_spread(const std::vector<T>& x, const std::vector<int64_t>& shape,
                                     const TuckerOptions& o, int processes) {
  std::vector<TuckerResult> results(static_cast<size_t>(processes));
  const size_t mode = tucker_cut_mode(shape, o);
  tk::test::run_ranks(processes, [&](int me, std::unique_ptr<dist::Comm> comm) {
    const auto [lo, hi] = slab_rows(shape[mode], me, processes);
    const std::vector<T> mine = slab(x, shape, mode, lo, hi);
    std::vector<int64_t> local = shape;
    local[mode] = hi - lo;
    results[me] = tucker(DenseView<T>{mine.data(), local}, shape, *comm, o);
  });
  return results;
}

void expect_close(const TuckerResult& a, const TuckerResult& b, const std::vector<int64_t>& shape, double tol) {
  ASSERT_EQ(a.ranks, b.ranks);
  EXPECT_NEAR(a.rel_error, b.rel_error, tol);
  EXPECT_EQ(a.iterations, b.iterations);
  // Factors up to the sign of each column, the core with it: compare the reconstructions.
  EXPECT_LT(test::relative_difference(test::tucker_reconstruct(a, shape), test::tucker_reconstruct(b, shape)), tol)
      << "reconstructions differ";
}

TEST(TuckerDist, MatchesOneProcessWithRanksToleranceAndHooi) {
  const std::vector<int64_t> shape = {14, 12, 10};
  const std::vector<double> x = planted_tucker(shape, {4, 3, 5}, 0.01, 3);
  std::vector<TuckerOptions> cases(4);
  cases[0].ranks = {4, 3, 5};
  cases[1].tol = 0.05;
  cases[2].ranks = {4, 3, 5};
  cases[2].method = TuckerMethod::kHooi;
  cases[2].max_iters = 3;
  cases[3].tol = 0.012;
  cases[3].method = TuckerMethod::kHooi;
  for (const TuckerOptions& o : cases) {
    const TuckerResult serial = tucker(DenseView<double>{x.data(), shape}, o);
    for (int processes = 1; processes <= 4; ++processes) {
      SCOPED_TRACE("processes " + std::to_string(processes) + " tol " + std::to_string(o.tol));
      const std::vector<TuckerResult> all = run_spread(x, shape, o, processes);
      for (const TuckerResult& r : all) {
        EXPECT_EQ(r.core, all[0].core);  // every process the same bytes
        if (o.tol > 0) EXPECT_LE(r.rel_error, o.tol);
      }
      // HOOI keeps a sweep only when it raises the fit; a sweep whose gain is at rounding
      // level can be kept by one run and not the other (a difference of about 1e-9).
      expect_close(all[0], serial, shape, o.method == TuckerMethod::kHooi ? 1e-8 : 1e-10);
    }
  }
}

TEST(TuckerDist, FloatAndMoreProcessesThanRows) {
  // The cut mode (the smallest, with a tolerance) has 3 rows and there are 4 processes.
  const std::vector<int64_t> shape = {9, 8, 3};
  const std::vector<double> wide = planted_tucker(shape, {2, 2, 2}, 0.001, 5);
  const std::vector<float> x(wide.begin(), wide.end());
  TuckerOptions o;
  o.tol = 0.01;
  ASSERT_EQ(tucker_cut_mode(shape, o), 2u);
  const TuckerResult serial = tucker(DenseView<float>{x.data(), shape}, o);
  const std::vector<TuckerResult> all = run_spread(x, shape, o, 4);
  EXPECT_LE(all[0].rel_error, o.tol);
  // In float the error from the norms is known to about 1e-4 here (||X||^2 - ||core||^2).
  expect_close(all[0], serial, shape, 5e-4);
}

TEST(TuckerDist, ErrorOfARoundedModelIsMeasuredOnTheSlabs) {
  const std::vector<int64_t> shape = {10, 9, 8};
  const std::vector<double> x = planted_tucker(shape, {3, 3, 3}, 0.02, 8);
  TuckerOptions o;
  o.ranks = {3, 3, 3};
  TuckerResult model = tucker(DenseView<double>{x.data(), shape}, o);
  for (auto& f : model.factors)
    for (double& v : f) v = static_cast<float>(v);  // as stored in f32
  const std::vector<double> xhat = test::tucker_reconstruct(model, shape);
  const double want = test::relative_difference(x, xhat);
  const size_t mode = tucker_cut_mode(shape, o);
  std::mutex mutex;
  std::vector<double> got;
  tk::test::run_ranks(3, [&](int me, std::unique_ptr<dist::Comm> comm) {
    const auto [lo, hi] = slab_rows(shape[mode], me, 3);
    const std::vector<double> mine = slab(x, shape, mode, lo, hi);
    std::vector<int64_t> local = shape;
    local[mode] = hi - lo;
    const double e = tucker_error(DenseView<double>{mine.data(), local}, shape, *comm, o, model);
    std::lock_guard lock(mutex);
    got.push_back(e);
  });
  for (double e : got) EXPECT_NEAR(e, want, 1e-12);
}

}  // namespace
}  // namespace tk::decomp
