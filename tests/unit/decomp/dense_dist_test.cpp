// Dense decompositions across processes (dense_dist.h) on ranks that are threads, each
// holding its slab of the cut mode. Tucker on 1..4 processes against the one-process
// tucker(): with ranks, with a tolerance (whose bound holds), with HOOI, in float, and
// with more processes than the cut mode has rows. CP-ALS against cp_als(): Gram and
// random starts, nonnegative, float, and more processes than mode 0 has rows.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <random>
#include <vector>

#include "dist/thread_comm.h"
#include "cp_test_util.h"
#include "lowrank_util.h"
#include "tk/decomp/decomp.h"
#include "tk/decomp/budget.h"
#include "tk/decomp/dense_dist.h"
#include "tk/decomp/format.h"

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
        if (o.tol > 0) {
          EXPECT_LE(r.rel_error, o.tol);
        }
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

TEST(TuckerDist, ErrorOfARoundedModelIsTheSumOverSlabs) {
  // What a process measures on its slab (slab_of, reconstruction_sums), added up, is the
  // error of the whole model, here with its factors rounded as f32 stores them.
  const std::vector<int64_t> shape = {10, 9, 8};
  const std::vector<double> x = planted_tucker(shape, {3, 3, 3}, 0.02, 8);
  TuckerOptions o;
  o.ranks = {3, 3, 3};
  Decomposition d = from_tucker("x", shape, DType::kF64, tucker(DenseView<double>{x.data(), shape}, o));
  round_parts(d, DType::kF32);
  const double want = reconstruction_error(DenseView<double>{x.data(), shape}, d);
  for (size_t mode : {0u, 2u}) {
    ErrorSums total;
    for (int p = 0; p < 3; ++p) {
      const auto [lo, hi] = slab_rows(shape[mode], p, 3);
      const std::vector<double> mine = slab(x, shape, mode, lo, hi);
      std::vector<int64_t> local = shape;
      local[mode] = hi - lo;
      const ErrorSums s = reconstruction_sums(DenseView<double>{mine.data(), local}, slab_of(d, mode, lo, hi));
      total.diff += s.diff;
      total.norm += s.norm;
    }
    EXPECT_NEAR(total.relative(), want, 1e-12);
  }
}

// CP on `processes` threads, each given its mode-0 slab: process 0's result, every fit.
template <typename T>
CpResult cp_spread(const std::vector<T>& x, const std::vector<int64_t>& shape, const CpOptions& o, int processes,
                   std::vector<double>* fits = nullptr) {
  CpResult lead;
  std::mutex mutex;
  tk::test::run_ranks(processes, [&](int me, std::unique_ptr<dist::Comm> comm) {
    const auto [lo, hi] = slab_rows(shape[0], me, processes);
    const std::vector<T> mine = slab(x, shape, 0, lo, hi);
    std::vector<int64_t> local = shape;
    local[0] = hi - lo;
    CpResult r = cp_als(DenseView<T>{mine.data(), local}, shape, *comm, o);
    std::lock_guard lock(mutex);
    if (fits) fits->push_back(r.fit);
    if (me == 0) lead = std::move(r);
  });
  return lead;
}

TEST(CpDenseDist, MatchesOneProcessOnOneToFourProcesses) {
  const tk::test::PlantedCp p = tk::test::planted_cp({13, 11, 9}, 3, 21, true);
  std::vector<double> x = p.data;
  std::mt19937 gen(4);
  std::normal_distribution<double> noise(0, 0.01);
  for (double& v : x) v += noise(gen);
  for (CpInit init : {CpInit::kGram, CpInit::kRandom}) {
    for (bool nonneg : {false, true}) {
      const CpOptions o = tk::test::fixed_iteration_options(init, nonneg, 2);
      const CpResult serial = cp_als(DenseView<double>{x.data(), p.shape}, o);
      for (int processes = 1; processes <= 4; ++processes) {
        SCOPED_TRACE("init " + std::to_string(static_cast<int>(init)) + " nonneg " + std::to_string(nonneg) +
                     " processes " + std::to_string(processes));
        std::vector<double> fits;
        const CpResult r = cp_spread(x, p.shape, o, processes, &fits);
        EXPECT_EQ(r.iterations, serial.iterations);
        EXPECT_NEAR(r.fit, serial.fit, 1e-10 * serial.fit);
        for (double fit : fits) EXPECT_EQ(fit, r.fit);
        ASSERT_EQ(r.factors.size(), 3u);
        for (size_t n = 0; n < 3; ++n)
          for (size_t e = 0; e < serial.factors[n].size(); ++e)
            EXPECT_NEAR(r.factors[n][e], serial.factors[n][e], 1e-6);
      }
    }
  }
}

TEST(CpDenseDist, FloatRecoversAndMoreProcessesThanRows) {
  // Mode 0 has 3 rows and there are 4 processes: one holds no rows.
  const tk::test::PlantedCp p = tk::test::planted_cp({3, 10, 9}, 2, 22);
  const std::vector<float> x(p.data.begin(), p.data.end());
  CpOptions o;
  o.rank = 2;
  o.tol = 1e-9;
  o.max_iters = 300;
  const CpResult serial = cp_als(DenseView<float>{x.data(), p.shape}, o);
  const CpResult r = cp_spread(x, p.shape, o, 4);
  EXPECT_GT(r.fit, 0.999);
  // An exact fit in float stops at its rounding floor, about sqrt(eps) = 3e-4, where it
  // stops depends on the order of sums.
  EXPECT_NEAR(r.fit, serial.fit, 1e-3);
  EXPECT_GT(tk::test::factor_match_score(p.factors, r.factors, 2, 2), 0.99);
}

}  // namespace
}  // namespace tk::decomp
