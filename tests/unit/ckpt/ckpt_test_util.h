// What the checkpoint tests share: tensors of random bytes, and the check that two lists
// of named tensors are the same (name, dtype, shape and bytes, in order).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "tk/ckpt/checkpoint.h"

namespace tk::test {

inline Tensor random_tensor(DType dtype, Shape shape, uint64_t seed) {
  Tensor t = Tensor::empty(dtype, shape);
  std::mt19937_64 rng(seed);
  uint8_t* p = t.mutable_data();
  for (uint64_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(rng());
  return t;
}

inline void expect_same_tensors(const std::vector<ckpt::NamedTensor>& a, const std::vector<ckpt::NamedTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].tensor.dtype(), b[i].tensor.dtype());
    EXPECT_EQ(a[i].tensor.shape(), b[i].tensor.shape());
    ASSERT_EQ(a[i].tensor.nbytes(), b[i].tensor.nbytes());
    EXPECT_EQ(0, std::memcmp(a[i].tensor.data(), b[i].tensor.data(), a[i].tensor.nbytes())) << a[i].name;
  }
}

}  // namespace tk::test
