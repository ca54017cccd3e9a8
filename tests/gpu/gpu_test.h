// The GPU tests (ctest label gpu): each compares a GPU path with its CPU reference. On a
// machine without a CUDA device each test is skipped, and ctest reports it as skipped,
// never as passed.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tk/device/device.h"

namespace tk::test {

// The reason there is no device to test on, or "" when device 0 is there.
inline std::string no_gpu_reason() {
  std::string why;
  return device::cuda_device_count(&why) > 0 ? std::string() : "no CUDA device: " + why;
}

}  // namespace tk::test

// First line of every GPU test.
#define TK_REQUIRE_GPU()                                          \
  do {                                                            \
    const std::string tk_no_gpu = ::tk::test::no_gpu_reason();    \
    if (!tk_no_gpu.empty()) GTEST_SKIP() << tk_no_gpu;            \
  } while (0)
