// The name matcher behind -t/--exclude and --rename.
#include "tk/io/glob.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tk::io {
namespace {

using Captures = std::vector<std::string>;

TEST(Glob, LiteralMatchesOnlyItself) {
  EXPECT_TRUE(glob_match("embed.weight", "embed.weight"));
  EXPECT_FALSE(glob_match("embed.weight", "embed.weights"));
  EXPECT_FALSE(glob_match("embed.weight", "embed"));
  EXPECT_TRUE(glob_match("", ""));
  EXPECT_FALSE(glob_match("", "a"));
}

TEST(Glob, StarMatchesAnyRunIncludingDotsAndSlashes) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*", "layers.0/attn.weight"));
  EXPECT_TRUE(glob_match("layers.*", "layers.0.attn.weight"));
  EXPECT_TRUE(glob_match("*.weight", "layers.0.attn.weight"));
  EXPECT_TRUE(glob_match("*attn*", "layers.0.attn.weight"));
  EXPECT_FALSE(glob_match("*.bias", "layers.0.attn.weight"));
  EXPECT_TRUE(glob_match("a**b", "ab"));
  EXPECT_FALSE(glob_match("a*b*c", "acb"));
}

TEST(Glob, QuestionMarkMatchesExactlyOneCharacter) {
  EXPECT_TRUE(glob_match("layers.?.w", "layers.7.w"));
  EXPECT_FALSE(glob_match("layers.?.w", "layers.12.w"));
  EXPECT_FALSE(glob_match("?", ""));
}

TEST(Glob, BackslashMakesTheNextCharacterLiteral) {
  EXPECT_TRUE(glob_match("a\\*b", "a*b"));
  EXPECT_FALSE(glob_match("a\\*b", "axb"));
  EXPECT_TRUE(glob_match("a\\?", "a?"));
  EXPECT_FALSE(glob_match("a\\?", "ab"));
  EXPECT_TRUE(glob_is_literal("a\\*b"));
  EXPECT_FALSE(glob_is_literal("a*b"));
  EXPECT_FALSE(glob_is_literal("a?"));
  EXPECT_EQ(glob_star_count("a\\*b*c*"), 2u);
}

TEST(Glob, PathologicalPatternStaysFast) {
  std::string text(2000, 'a');
  std::string pattern;
  for (int i = 0; i < 30; ++i) pattern += "*a";
  pattern += "b";
  EXPECT_FALSE(glob_match(pattern, text));  // exponential for a naive backtracker
}

TEST(GlobCapture, ReturnsWhatEachStarMatched) {
  EXPECT_EQ(glob_capture("model.*", "model.layers.0.w"), Captures{"layers.0.w"});
  EXPECT_EQ(glob_capture("*.weight", "a.b.weight"), Captures{"a.b"});
  EXPECT_EQ(glob_capture("a.*.*", "a.b.c.d"), (Captures{"b", "c.d"}));
  EXPECT_EQ(glob_capture("*", ""), Captures{""});
  EXPECT_EQ(glob_capture("x?*", "xyz"), Captures{"z"});
  EXPECT_EQ(glob_capture("plain", "plain"), Captures{});
  EXPECT_EQ(glob_capture("model.*", "other.x"), std::nullopt);
}

}  // namespace
}  // namespace tk::io
