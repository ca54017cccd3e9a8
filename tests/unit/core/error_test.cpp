#include "tk/core/error.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace tk {
namespace {

TEST(Error, KindNames) {
  EXPECT_STREQ(error_kind_name(ErrorKind::kUsage), "usage");
  EXPECT_STREQ(error_kind_name(ErrorKind::kInvalidInput), "invalid input");
  EXPECT_STREQ(error_kind_name(ErrorKind::kIo), "I/O");
  EXPECT_STREQ(error_kind_name(ErrorKind::kUnavailable), "unavailable");
  EXPECT_STREQ(error_kind_name(ErrorKind::kRuntime), "runtime");
  EXPECT_STREQ(error_kind_name(ErrorKind::kInternal), "internal");
}

TEST(Error, ShorthandsCarryKindMessageAndWhere) {
  const Error e = invalid_input("bad header", "tensor 'w'");
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  EXPECT_STREQ(e.what(), "bad header");
  EXPECT_EQ(e.where(), "tensor 'w'");
  EXPECT_EQ(usage_error("x").kind(), ErrorKind::kUsage);
  EXPECT_EQ(io_error("x").kind(), ErrorKind::kIo);
  EXPECT_EQ(unavailable("x").kind(), ErrorKind::kUnavailable);
  EXPECT_EQ(runtime_error("x").kind(), ErrorKind::kRuntime);
  EXPECT_EQ(internal_error("x").kind(), ErrorKind::kInternal);
  EXPECT_EQ(usage_error("x").where(), "");
}

TEST(Error, WithContextPrependsLocation) {
  const Error inner = invalid_input("bad dtype", "tensor 'w'");
  const Error outer = inner.with_context("model.safetensors");
  EXPECT_EQ(outer.where(), "model.safetensors: tensor 'w'");
  EXPECT_STREQ(outer.what(), "bad dtype");
  EXPECT_EQ(outer.kind(), ErrorKind::kInvalidInput);
  EXPECT_EQ(invalid_input("m").with_context("f.h5").where(), "f.h5");
  EXPECT_EQ(inner.with_context("").where(), "tensor 'w'");
}

TEST(Error, ErrnoError) {
  const Error e = errno_error("failed to open for reading", "x.bin", ENOENT);
  EXPECT_EQ(e.kind(), ErrorKind::kIo);
  EXPECT_EQ(std::string(e.what()), "failed to open for reading: No such file or directory");
  EXPECT_EQ(e.where(), "x.bin");
}

}  // namespace
}  // namespace tk
