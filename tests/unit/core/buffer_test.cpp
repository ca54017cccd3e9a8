#include "tk/core/buffer.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tk/core/error.h"

namespace tk {
namespace {

using test::kind_of;

TEST(Buffer, AllocateIsAlignedAndWritable) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000}}) {
    Buffer b = Buffer::allocate(bytes);
    EXPECT_EQ(b.size(), bytes);
    EXPECT_TRUE(b.writable());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kBufferAlignment, 0u);
    if (bytes) b.mutable_data()[bytes - 1] = 7;
  }
  EXPECT_TRUE(Buffer().empty());
  EXPECT_EQ(kind_of([] { Buffer::allocate(SIZE_MAX - 10); }), ErrorKind::kUnavailable);
}

TEST(Buffer, ZerosAndSharedStorage) {
  Buffer a = Buffer::zeros(100);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(a.data()[i], 0);
  Buffer copy = a;
  a.mutable_data()[5] = 42;
  EXPECT_EQ(copy.data()[5], 42);
}

TEST(Buffer, SliceBounds) {
  Buffer a = Buffer::zeros(10);
  a.mutable_data()[3] = 9;
  Buffer s = a.slice(3, 4);
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s.data()[0], 9);
  EXPECT_EQ(a.slice(10, 0).size(), 0u);
  EXPECT_EQ(kind_of([&] { a.slice(8, 3); }), ErrorKind::kInternal);
  EXPECT_EQ(kind_of([&] { a.slice(11, 0); }), ErrorKind::kInternal);
  EXPECT_EQ(kind_of([&] { a.slice(1, SIZE_MAX); }), ErrorKind::kInternal);
}

TEST(Buffer, BorrowConstIsReadOnly) {
  uint8_t raw[4] = {1, 2, 3, 4};
  Buffer w = Buffer::borrow(raw, 4);
  w.mutable_data()[0] = 9;
  EXPECT_EQ(raw[0], 9);
  Buffer r = Buffer::borrow_const(raw, 4);
  EXPECT_FALSE(r.writable());
  EXPECT_EQ(r.data()[1], 2);
  EXPECT_EQ(kind_of([&] { r.mutable_data(); }), ErrorKind::kInternal);
  EXPECT_EQ(kind_of([&] { r.slice(1, 2).mutable_data(); }), ErrorKind::kInternal);
}

TEST(Buffer, MapFile) {
  char path[] = "/tmp/tk_buffer_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char text[] = "tensorkit";
  ASSERT_EQ(write(fd, text, 9), 9);
  close(fd);
  {
    Buffer m = Buffer::map_file(path);
    EXPECT_EQ(m.size(), 9u);
    EXPECT_EQ(std::memcmp(m.data(), text, 9), 0);
    EXPECT_FALSE(m.writable());
    EXPECT_EQ(kind_of([&] { m.mutable_data(); }), ErrorKind::kInternal);
    Buffer tail = m.slice(6, 3);
    m = Buffer();
    EXPECT_EQ(std::memcmp(tail.data(), "kit", 3), 0);  // the slice keeps the mapping alive
  }
  std::remove(path);
  EXPECT_EQ(kind_of([&] { Buffer::map_file(path); }), ErrorKind::kIo);
}

TEST(Buffer, MapEmptyFile) {
  char path[] = "/tmp/tk_buffer_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  Buffer m = Buffer::map_file(path);
  EXPECT_TRUE(m.empty());
  std::remove(path);
}

}  // namespace
}  // namespace tk
