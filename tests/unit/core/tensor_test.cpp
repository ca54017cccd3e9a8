#include "tk/core/tensor.h"

#include <gtest/gtest.h>

#include <string>

#include "tk/core/error.h"

namespace tk {
namespace {

TEST(Tensor, WrapsMatchingBuffer) {
  Tensor t(DType::kF32, {2, 3}, Buffer::zeros(24));
  EXPECT_EQ(t.numel(), 6u);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.dtype(), DType::kF32);
  Tensor packed(DType::kF4, {4}, Buffer::zeros(2));
  EXPECT_EQ(packed.nbytes(), 2u);
  Tensor scalar(DType::kBF16, {}, Buffer::zeros(2));
  EXPECT_EQ(scalar.numel(), 1u);
}

TEST(Tensor, SizeMismatchThrows) {
  try {
    Tensor(DType::kF32, {2, 3}, Buffer::zeros(23));
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()), "tensor of F32 [2, 3] needs 24 bytes, got 23");
  }
  try {
    Tensor(DType::kF4, {3}, Buffer::zeros(2));
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  }
  EXPECT_THROW(Tensor(DType::kF32, {-1}, Buffer()), Error);
}

TEST(Tensor, CloneAndReshape) {
  Tensor t = Tensor::zeros(DType::kI16, {2, 2});
  t.mutable_data_as<int16_t>()[3] = -5;
  Tensor c = t.clone();
  t.mutable_data_as<int16_t>()[3] = 1;
  EXPECT_EQ(c.data_as<int16_t>()[3], -5);
  Tensor r = t.reshaped({4});
  EXPECT_EQ(r.shape(), (Shape{4}));
  EXPECT_EQ(r.data(), t.data());  // same bytes
  EXPECT_THROW(t.reshaped({3}), Error);
  Tensor e = Tensor::empty(DType::kC64, {3});
  EXPECT_EQ(e.nbytes(), 24u);
}

TEST(Tensor, ReadOnlyBufferRefusesWrites) {
  const uint8_t raw[4] = {};
  Tensor t(DType::kU8, {4}, Buffer::borrow_const(raw, 4));
  try {
    t.mutable_data();
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  }
  EXPECT_TRUE(t.clone().buffer().writable());
}

}  // namespace
}  // namespace tk
