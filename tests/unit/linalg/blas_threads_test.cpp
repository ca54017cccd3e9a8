// The tools link the serial OpenBLAS: BLAS has no threads of its own, so a process
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

TEST(BlasThreads, BlasIsSerial) { EXPECT_STREQ(tk::linalg::blas_threading(), "serial"); }

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

}  // namespace
