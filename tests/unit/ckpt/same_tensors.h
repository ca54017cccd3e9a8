// The check the checkpoint tests share: two lists of named tensors are the same, name,
// dtype, shape and bytes, in order.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tk/ckpt/checkpoint.h"

namespace tk::test {

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
