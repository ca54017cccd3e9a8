// The tools start OpenBLAS on one thread whatever the environment asks (OpenMP does the
// parallel work; common_options.cpp), by editing the environment block before the
// libraries load, and put the block back before main.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "tk/linalg/blas.h"

extern char** environ;

namespace {

TEST(StartupThreads, OpenblasStartsOnOneThread) { EXPECT_EQ(tk::linalg::blas_threads(), 1); }

TEST(StartupThreads, TheEnvironmentIsGivenBack) {
  // ctest runs this with PATH set and OPENBLAS_NUM_THREADS as the caller left it: the
  // entry borrowed while loading (PATH, when OPENBLAS_NUM_THREADS is absent) is PATH
  // again, and no second OPENBLAS_NUM_THREADS entry remains.
  ASSERT_NE(std::getenv("PATH"), nullptr);
  EXPECT_NE(std::string(std::getenv("PATH")).find('/'), std::string::npos);
  int openblas_entries = 0;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "OPENBLAS_NUM_THREADS=", 21) == 0) ++openblas_entries;
  EXPECT_LE(openblas_entries, 1);
}

}  // namespace
