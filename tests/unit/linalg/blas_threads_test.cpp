// The tools link the OpenBLAS built on OpenMP: BLAS has no pool of its own, so a process
// runs no threads beyond OpenMP's (no workers spinning beside the tools' loops).
#include <gtest/gtest.h>
#include <omp.h>

#include <filesystem>
#include <vector>

#include "tk/linalg/blas.h"

namespace {

int process_threads() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(BlasThreads, BlasRunsOnOpenmp) { EXPECT_STREQ(tk::linalg::blas_threading(), "openmp"); }

TEST(BlasThreads, NoThreadsBeyondOpenmps) {
  omp_set_num_threads(4);
  int team = 0;
#pragma omp parallel
  {
#pragma omp single
    team = omp_get_num_threads();
  }
  const int64_t n = 512;  // large enough that OpenBLAS splits the product
  std::vector<double> a(n * n, 1.0), b(n * n, 2.0), c(n * n, 0.0);
  tk::linalg::gemm(tk::linalg::Op::kNoTrans, tk::linalg::Op::kNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0,
                   c.data(), n);
  EXPECT_EQ(c[0], 2.0 * n);
  // OpenMP's team (the main thread and three workers) and nothing else.
  EXPECT_EQ(team, 4);
  EXPECT_LE(process_threads(), team);
}

// A SerialBlas scope keeps its calls on the caller's thread without changing the thread
// count the caller's own OpenMP loops get.
TEST(BlasThreads, SerialScopeLeavesTheLoopsThreadCount) {
  omp_set_num_threads(3);
  const int64_t n = 256;
  std::vector<double> a(n * n, 1.0), b(n * n, 3.0), c(n * n, 0.0);
  {
    tk::linalg::SerialBlas serial;
    tk::linalg::gemm(tk::linalg::Op::kNoTrans, tk::linalg::Op::kNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n,
                     0.0, c.data(), n);
    EXPECT_EQ(omp_get_max_threads(), 3);
  }
  EXPECT_EQ(c[n * n - 1], 3.0 * n);
  EXPECT_EQ(omp_get_max_threads(), 3);
}

}  // namespace
