// Escaping of names and values for human-readable output.
#include "cli/display_text.h"

#include <gtest/gtest.h>

#include <string>

namespace tk::cli {
namespace {

using namespace std::string_literals;

TEST(EscapeText, KeepsPrintableAsciiAndWellFormedUtf8) {
  EXPECT_EQ(escape_text("model.layers.0.weight"), "model.layers.0.weight");
  EXPECT_EQ(escape_text("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80"), "gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(escape_text(""), "");
}

TEST(EscapeText, EscapesC0ControlsDelAndTheBackslash) {
  EXPECT_EQ(escape_text("a\x1b[31mred"), "a\\x1b[31mred");
  EXPECT_EQ(escape_text("two\nlines\tand\r"), "two\\nlines\\tand\\r");
  EXPECT_EQ(escape_text("nul\0inside"s), "nul\\0inside");
  EXPECT_EQ(escape_text("del\x7f"), "del\\x7f");
  EXPECT_EQ(escape_text("bell\a"), "bell\\x07");
  EXPECT_EQ(escape_text("back\\slash"), "back\\\\slash");
}

TEST(EscapeText, EscapesC1ControlsAndBidiOverridesByteForByte) {
  EXPECT_EQ(escape_text("csi\xc2\x9b" "2J"), "csi\\xc2\\x9b2J");      // U+009B, the 8-bit CSI
  EXPECT_EQ(escape_text("\xc2\x85"), "\\xc2\\x85");                  // U+0085 NEL
  EXPECT_EQ(escape_text("x\xe2\x80\xaey"), "x\\xe2\\x80\\xaey");       // U+202E RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(escape_text("\xe2\x81\xa6"), "\\xe2\\x81\\xa6");          // U+2066 LEFT-TO-RIGHT ISOLATE
  EXPECT_EQ(escape_text("\xc2\xa0"), "\xc2\xa0");                    // U+00A0 is printable
}

TEST(EscapeText, EscapesEveryByteOfMalformedUtf8) {
  EXPECT_EQ(escape_text("\xff"), "\\xff");
  EXPECT_EQ(escape_text("a\x80z"), "a\\x80z");                       // stray continuation
  EXPECT_EQ(escape_text("\xc0\xaf"), "\\xc0\\xaf");                  // overlong '/'
  EXPECT_EQ(escape_text("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");          // overlong, 3 bytes
  EXPECT_EQ(escape_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");          // a surrogate
  EXPECT_EQ(escape_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(escape_text("end\xe2\x82"), "end\\xe2\\x82");            // truncated sequence
}

TEST(EscapeText, IsUnambiguous) {
  // The escaped form of a backslash sequence differs from the escaped control.
  EXPECT_NE(escape_text("\\x1b"), escape_text("\x1b"));
  EXPECT_NE(escape_text("\\0"), escape_text("\0"s));
  EXPECT_NE(escape_text("\\n"), escape_text("\n"));
}

TEST(EscapeJsonText, EscapesWhatJsonLeavesRawAsUnicodeEscapes) {
  EXPECT_EQ(escape_json_text("{\"a\":\"x\xc2\x9by\x7f\"}"), "{\"a\":\"x\\u009by\\u007f\"}");
  EXPECT_EQ(escape_json_text("{\"a\":\"\\u001b\xc3\xbc\"}"), "{\"a\":\"\\u001b\xc3\xbc\"}");
}

}  // namespace
}  // namespace tk::cli
