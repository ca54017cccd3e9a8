// Text rendering of reports: tables, sizes, numbers, metadata lines.
#include "cli/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cli/metadata_text.h"
#include "cli/number_format.h"
#include "tk/core/error.h"

namespace tk::cli {
namespace {

TEST(TextTable, AlignsColumnsWithTwoSpacesAndNoTrailingBlanks) {
  TextTable t({"name", "dtype", "shape", "bytes"});
  t.add_row({"embed.weight", "F32", "[16, 8]", "512"});
  t.add_row({"b", "BF16", "[8]", "16"});
  EXPECT_EQ(t.render(),
            "name          dtype  shape    bytes\n"
            "embed.weight  F32    [16, 8]  512\n"
            "b             BF16   [8]      16\n");
}

TEST(TextTable, HeaderOnlyAndWrongRowLength) {
  TextTable t({"a", "bb"});
  EXPECT_EQ(t.render(), "a  bb\n");
  try {
    t.add_row({"x"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  }
}

TEST(NumberFormat, BytesUseBinaryUnitsToOneDecimal) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(4300), "4.2 KiB");
  EXPECT_EQ(format_bytes(1024 * 1024 - 1), "1.0 MiB");  // not "1024.0 KiB"
  EXPECT_EQ(format_bytes(uint64_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(format_bytes(uint64_t{5} << 40), "5.0 TiB");
}

TEST(NumberFormat, NumbersArePrintfG6) {
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(-1.5), "-1.5");
  EXPECT_EQ(format_number(3.14159265), "3.14159");
  EXPECT_EQ(format_number(1e-7), "1e-07");
  EXPECT_EQ(format_number(123456789.0), "1.23457e+08");
  EXPECT_EQ(format_number(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(format_number(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_number(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(NumberFormat, JsonNumbersHaveNoNaN) {
  EXPECT_EQ(json_number(2.5), nlohmann::json(2.5));
  EXPECT_TRUE(json_number(std::nan("")).is_null());
  EXPECT_TRUE(json_number(INFINITY).is_null());
  EXPECT_TRUE(json_number(-INFINITY).is_null());
  EXPECT_EQ(bytes_parse("600KB", "--size"), 600000u);
  EXPECT_EQ(bytes_parse("600kB", "--size"), 600000u);
  EXPECT_EQ(bytes_parse("600KiB", "--size"), 614400u);
  EXPECT_EQ(bytes_parse("600K", "--size"), 614400u);
  EXPECT_EQ(bytes_parse("1.5GB", "--size"), 1500000000u);
  EXPECT_EQ(bytes_parse("2MiB", "--size"), 2097152u);
  EXPECT_EQ(bytes_parse("4096", "--size"), 4096u);
  EXPECT_THROW(bytes_parse("4Ki", "--size"), Error);
  EXPECT_THROW(bytes_parse("4 XB", "--size"), Error);
  EXPECT_EQ(count_noun(1, "tensor", "tensors"), "1 tensor");
  EXPECT_EQ(count_noun(0, "tensor", "tensors"), "0 tensors");
}

TEST(MetadataText, JsonValuesOnOneCompactLineInTheirOrder) {
  EXPECT_EQ(metadata_value_text("{\"b\": 1,\n \"a\": [1, 2]}"), "{\"b\":1,\"a\":[1,2]}");
  EXPECT_EQ(metadata_value_text("[ ]"), "[]");
  EXPECT_EQ(metadata_value_text("pt"), "pt");
  EXPECT_EQ(metadata_value_text("42"), "42");  // scalars stay as written
  EXPECT_EQ(metadata_value_text("two\nlines\t!"), "two\\nlines\\t!");
  EXPECT_EQ(metadata_value_text(std::string("a\x01", 2)), "a\\x01");
  // Names and values from files never reach the terminal as controls or break a line.
  EXPECT_EQ(metadata_value_text("\x1b]0;title\a"), "\\x1b]0;title\\x07");
  EXPECT_EQ(metadata_value_text("[\"\xc2\x9b\"]"), "[\"\\u009b\"]");
  EXPECT_EQ(metadata_lines({{"k\ney", "v"}}), "  k\\ney: v\n");
}

TEST(TextTable, EscapesControlsInCells) {
  TextTable t({"name"});
  t.add_row({"a\x1b[2Jb"});
  t.add_row({std::string("c\0d", 3)});
  EXPECT_EQ(t.render(), "name\na\\x1b[2Jb\nc\\0d\n");
}

TEST(MetadataText, LinesAreIndentedKeyValuePairs) {
  io::Metadata m = {{"format", "pt"}, {"config", "{\"hidden\": 8}"}};
  EXPECT_EQ(metadata_lines(m), "  config: {\"hidden\":8}\n  format: pt\n");
  EXPECT_EQ(metadata_lines({}), "");
}

}  // namespace
}  // namespace tk::cli
