#include "tk/core/shape.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include "tk/core/error.h"

namespace tk {
namespace {

using test::kind_of;

TEST(Shape, Numel) {
  EXPECT_EQ(shape_numel({}), 1u);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24u);
  EXPECT_EQ(shape_numel({5, 0, 7}), 0u);
  EXPECT_EQ(shape_numel({int64_t{1} << 31, int64_t{1} << 31}), uint64_t{1} << 62);
}

TEST(Shape, NumelRejectsNegativeAndOverflow) {
  EXPECT_EQ(kind_of([] { shape_numel({2, -1}); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([] { shape_numel({int64_t{1} << 31, (int64_t{1} << 31) + 1}); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([] { shape_numel({INT64_MAX, INT64_MAX}); }), ErrorKind::kInvalidInput);
  // A zero dimension does not hide an overflowing product of the others.
  EXPECT_EQ(kind_of([] { shape_numel({0, INT64_MAX, INT64_MAX}); }), ErrorKind::kInvalidInput);
}

TEST(Shape, ToString) {
  EXPECT_EQ(shape_to_string({}), "[]");
  EXPECT_EQ(shape_to_string({7}), "[7]");
  EXPECT_EQ(shape_to_string({2, 3, 4}), "[2, 3, 4]");
}

TEST(Shape, Parse) {
  EXPECT_EQ(shape_parse("2,3,4"), (Shape{2, 3, 4}));
  EXPECT_EQ(shape_parse("2x3x4"), (Shape{2, 3, 4}));
  EXPECT_EQ(shape_parse("0"), (Shape{0}));
  EXPECT_EQ(shape_parse("5"), (Shape{5}));
}

TEST(Shape, ParseRejectsMalformedText) {
  for (const char* text : {"", ",", "2,", ",2", "2,,3", "a", "2;3", "-1", "2x-3", "99999999999999999999"}) {
    EXPECT_EQ(kind_of([&] { shape_parse(text); }), ErrorKind::kUsage) << "'" << text << "'";
  }
  // Well-formed text whose element count overflows is reported by shape_numel.
  EXPECT_EQ(kind_of([] { shape_parse("4294967296,4294967296"); }), ErrorKind::kInvalidInput);
}

}  // namespace
}  // namespace tk
