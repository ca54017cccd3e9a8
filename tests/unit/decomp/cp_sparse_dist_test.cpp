// Sparse CP-ALS across processes (sparse_dist.h) on ranks that are threads: the result
// of 1..4 processes against the one-process cp_als_sparse, planted-model recovery,
// processes without nonzeros or rows, and the shared .tns reader.
#include <gtest/gtest.h>

#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "cp_test_util.h"
#include "dist/thread_comm.h"
#include "test_util.h"
#include "tk/core/error.h"
#include "tk/core/shape.h"
#include "tk/decomp/sparse_dist.h"
#include "tk/io/tns.h"

namespace tk::decomp {
namespace {

using test::factor_match_score;

// A planted tensor whose factors are themselves sparse and nonnegative, so that the
// exact model is sparse, plus noise on the nonzeros.
io::SparseTensor planted_sparse(const std::vector<int64_t>& shape, int64_t rank, double noise, uint32_t seed,
                                std::vector<std::vector<double>>* factors = nullptr) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> f;
  for (int64_t dim : shape) {
    std::vector<double> a(static_cast<size_t>(dim * rank));
    for (double& v : a) v = u(gen) < 0.3 ? 0.2 + u(gen) : 0.0;
    f.push_back(std::move(a));
  }
  io::SparseTensor x;
  x.shape = shape;
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      for (int64_t k = 0; k < shape[2]; ++k) {
        double v = 0;
        for (int64_t r = 0; r < rank; ++r) v += f[0][i * rank + r] * f[1][j * rank + r] * f[2][k * rank + r];
        if (v == 0) continue;
        x.indices.insert(x.indices.end(), {i, j, k});
        x.values.push_back(v * (1 + noise * normal(gen)));
      }
  if (factors) *factors = std::move(f);
  return x;
}

// Rank `me` of `processes`: every processes-th nonzero, starting at `me` (any split will do).
io::SparseTensor share(const io::SparseTensor& x, int me, int processes) {
  io::SparseTensor s;
  s.shape = x.shape;
  for (int64_t e = me; e < x.nnz(); e += processes) {
    s.indices.insert(s.indices.end(), x.indices.begin() + e * 3, x.indices.begin() + e * 3 + 3);
    s.values.push_back(x.values[e]);
  }
  return s;
}

// The result on process 0 (the one with factors), and every process's fit and stats.
struct SpreadRun {
  CpResult lead;
  std::vector<double> fits;
  SparseDistStats stats;
};

SpreadRun run_spread(const io::SparseTensor& x, const CpOptions& o, int processes,
               const std::function<io::SparseTensor(int)>& part = {}) {
  SpreadRun run;
  run.fits.resize(static_cast<size_t>(processes));
  std::mutex mutex;
  tk::test::run_ranks(processes, [&](int me, std::unique_ptr<dist::Comm> comm) {
    SparseDistStats stats;
    CpResult r = cp_als_sparse(part ? part(me) : share(x, me, processes), o, *comm, &stats);
    std::lock_guard lock(mutex);
    run.fits[me] = r.fit;
    if (me == 0) run.lead = std::move(r), run.stats = stats;
    if (me != 0) {
      EXPECT_TRUE(r.factors.empty());
    }
  });
  return run;
}

TEST(CpSparseDist, MatchesOneProcessOnOneToFourProcesses) {
  const io::SparseTensor x = planted_sparse({23, 19, 17}, 3, 0.01, 5);
  for (CpInit init : {CpInit::kGram, CpInit::kRandom}) {
    for (bool nonneg : {false, true}) {
      const CpOptions o = tk::test::fixed_iteration_options(init, nonneg, 11);
      const CpResult serial = cp_als_sparse(x, o);
      for (int processes = 1; processes <= 4; ++processes) {
        SCOPED_TRACE("init " + std::to_string(static_cast<int>(init)) + " nonneg " + std::to_string(nonneg) +
                     " processes " + std::to_string(processes));
        const SpreadRun run = run_spread(x, o, processes);
        EXPECT_EQ(serial.iterations, 6);
        EXPECT_EQ(run.lead.iterations, 6);
        EXPECT_NEAR(run.lead.fit, serial.fit, 1e-10 * serial.fit);
        for (double fit : run.fits) EXPECT_EQ(fit, run.lead.fit);
        ASSERT_EQ(run.lead.factors.size(), 3u);
        for (size_t k = 0; k < serial.lambda.size(); ++k)
          EXPECT_NEAR(run.lead.lambda[k], serial.lambda[k], 1e-8 * serial.lambda[0]);
        for (size_t n = 0; n < 3; ++n)
          for (size_t e = 0; e < serial.factors[n].size(); ++e)
            EXPECT_NEAR(run.lead.factors[n][e], serial.factors[n][e], 1e-6);
        EXPECT_EQ(static_cast<int>(tk::shape_numel(run.stats.grid)), processes);
        EXPECT_EQ(run.stats.bytes_per_iteration_max == 0, processes == 1);
      }
    }
  }
}

TEST(CpSparseDist, RecoversThePlantedFactors) {
  std::vector<std::vector<double>> planted;
  const io::SparseTensor x = planted_sparse({30, 25, 20}, 3, 0.0, 9, &planted);
  CpOptions o;
  o.rank = 3;
  o.tol = 1e-12;
  o.max_iters = 500;
  o.restarts = 3;
  const SpreadRun run = run_spread(x, o, 4);
  EXPECT_GT(run.lead.fit, 0.999);
  EXPECT_GT(factor_match_score(planted, run.lead.factors, 3, 3), 0.99);
}

TEST(CpSparseDist, ProcessesWithoutNonzerosOrRows) {
  // Two nonzeros of a 2 x 2 x 2 tensor on three processes: the grid cuts mode 0 into
  // three layers, one of them empty, and only process 1 starts with any nonzero.
  io::SparseTensor x;
  x.shape = {2, 2, 2};
  x.indices = {0, 0, 0, 1, 1, 1};
  x.values = {1.0, 2.0};
  CpOptions o;
  o.rank = 2;
  const CpResult serial = cp_als_sparse(x, o);
  auto only_on_1 = [&](int me) {
    io::SparseTensor s;
    s.shape = x.shape;
    if (me == 1) s = x;
    return s;
  };
  const SpreadRun run = run_spread(x, o, 3, only_on_1);
  EXPECT_NEAR(run.lead.fit, serial.fit, 1e-12);
  EXPECT_EQ(run.stats.grid, (std::vector<int64_t>{3, 1, 1}));
  EXPECT_EQ(run.stats.nnz_min, 0);
}

TEST(CpSparseDist, AnErrorOnOneProcessStopsEvery) {
  const io::SparseTensor x = planted_sparse({8, 7, 6}, 2, 0.0, 3);
  CpOptions o;
  o.rank = 2;
  std::mutex mutex;
  std::vector<std::string> messages;
  tk::test::run_ranks(3, [&](int me, std::unique_ptr<dist::Comm> comm) {
    io::SparseTensor mine = share(x, me, 3);
    if (me == 2) mine.values[0] = std::nan("");
    try {
      cp_als_sparse(mine, o, *comm);
    } catch (const Error& e) {
      std::lock_guard lock(mutex);
      messages.push_back(e.message());
    }
  });
  EXPECT_EQ(messages, std::vector<std::string>(3, "the tensor has NaN or Inf entries"));
}

TEST(CpSparseDist, SharedReaderAgreesOnShapeAndBase) {
  tk::test::TempDir dir;
  // 1-based on the whole, but only the last lines show the largest indices.
  std::string text = "# c\n";
  for (int e = 0; e < 30; ++e) text += std::to_string(e % 3 + 1) + " " + std::to_string(e % 4 + 1) + " 1.5\n";
  text += "9 2 1\n";
  const std::string path = dir.write("s.tns", text);
  const io::SparseTensor whole = io::read_tns(path);
  std::mutex mutex;
  int64_t nnz = 0;
  tk::test::run_ranks(4, [&](int me, std::unique_ptr<dist::Comm> comm) {
    const io::SparseTensor mine = read_tns_shared(path, *comm);
    EXPECT_EQ(mine.shape, whole.shape);
    std::lock_guard lock(mutex);
    nnz += mine.nnz();
    (void)me;
  });
  EXPECT_EQ(nnz, whole.nnz());
  // A declared shape too small, and a bad line: every process gets the same error.
  const std::string bad = dir.write("b.tns", text + "1 1 x\n");
  std::vector<std::string> errors;
  tk::test::run_ranks(3, [&](int, std::unique_ptr<dist::Comm> comm) {
    std::string got;
    try {
      read_tns_shared(bad, *comm);
    } catch (const Error& e) {
      got = e.message() + " (" + e.where() + ")";
    }
    io::TnsReadOptions small;
    small.shape = {8, 4};
    try {
      read_tns_shared(path, *comm, small);
    } catch (const Error& e) {
      got += " / " + e.message();
    }
    std::lock_guard lock(mutex);
    errors.push_back(got);
  });
  EXPECT_EQ(errors, std::vector<std::string>(3, "expected a number as the value (" + bad +
                                                    ": line 33) / index 9 in mode 0 lies beyond the declared extent "
                                                    "8 (1-based)"));
}

}  // namespace
}  // namespace tk::decomp
