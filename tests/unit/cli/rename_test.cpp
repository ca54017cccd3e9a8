// --rename FROM=TO rules.
#include "cli/rename.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include <functional>

#include "tk/core/error.h"

namespace tk::cli {
namespace {

using test::kind_of;

TEST(Rename, ParseSplitsAtTheFirstEquals) {
  RenameRule r = rename_rule_parse("a=b=c");
  EXPECT_EQ(r.from, "a");
  EXPECT_EQ(r.to, "b=c");
}

TEST(Rename, ParseRejectsMalformedRules) {
  EXPECT_EQ(kind_of([] { rename_rule_parse("nothing"); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { rename_rule_parse("=x"); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { rename_rule_parse("x="); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { rename_rule_parse("a.*=*.*"); }), ErrorKind::kUsage);
  try {
    rename_rule_parse("nothing");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "invalid --rename 'nothing' (expected FROM=TO)");
  }
}

TEST(Rename, StarInToSubstitutesTheCapture) {
  Renamer r = Renamer::parse({"model.*=*"});
  EXPECT_EQ(r.apply("model.layers.0.w"), "layers.0.w");
  EXPECT_EQ(r.apply("lm_head.w"), "lm_head.w");  // no rule matches: unchanged
}

TEST(Rename, SeveralStarsSubstituteInOrder) {
  Renamer r = Renamer::parse({"layers.*.*.weight=blk*_*.w"});
  EXPECT_EQ(r.apply("layers.3.attn.q.weight"), "blk3_attn.q.w");
}

TEST(Rename, FirstMatchingRuleWins) {
  Renamer r = Renamer::parse({"*.bias=bias.*", "a.*=A.*"});
  EXPECT_EQ(r.apply("a.bias"), "bias.a");
  EXPECT_EQ(r.apply("a.weight"), "A.weight");
}

TEST(Rename, EscapedStarInToIsLiteral) {
  Renamer r = Renamer::parse({"x.*=\\*.*"});
  EXPECT_EQ(r.apply("x.y"), "*.y");
}

TEST(Rename, LiteralRuleRenamesOneName) {
  Renamer r = Renamer::parse({"embed.weight=tok_embeddings.weight"});
  EXPECT_EQ(r.apply("embed.weight"), "tok_embeddings.weight");
  EXPECT_EQ(r.apply("embed.weights"), "embed.weights");
}

TEST(Rename, EmptyResultIsAUsageError) {
  Renamer r = Renamer::parse({"model.*=*"});
  EXPECT_EQ(kind_of([&] { r.apply("model."); }), ErrorKind::kUsage);
}

}  // namespace
}  // namespace tk::cli
