// The default keep rules as a library call: kind before name, output heads only when
// asked, embeddings unless asked to quantize them.
#include <algorithm>

#include "test_util.h"
#include "tk/quant/keep_rules.h"
#include "tk/quant/scheme.h"

namespace tk::quant {
namespace {

KeepReason why(const std::string& name, const Shape& shape, const KeepRules& rules = {}) {
  return default_keep(name, shape, rules).reason;
}

TEST(KeepRules, ByKindThenByName) {
  EXPECT_EQ(why("w", {}), KeepReason::kScalar);
  EXPECT_EQ(why("w", {1, 1}), KeepReason::kOneElement);
  EXPECT_EQ(why("blk.0.attn_norm.weight", {576}), KeepReason::kOneDimensional);
  EXPECT_EQ(why("w", {32, 32}), KeepReason::kSmall);
  EXPECT_EQ(why("w", {32, 32}, {.min_elements = 1024}), KeepReason::kNone);
  const KeepDecision norm = default_keep("encoder.LayerNorm.weight", {64, 64}, {});
  EXPECT_EQ(norm.reason, KeepReason::kName);
  EXPECT_EQ(norm.glob, "*Norm*");
  EXPECT_EQ(why("blk.0.ffn_up.weight", {1536, 576}), KeepReason::kNone);
}

TEST(KeepRules, EmbeddingsAndHeads) {
  EXPECT_EQ(why("token_embd.weight", {49152, 576}), KeepReason::kEmbedding);
  EXPECT_EQ(why("token_embd.weight", {49152, 576}, {.quantize_embeddings = true}), KeepReason::kNone);
  EXPECT_EQ(why("output.weight", {49152, 576}), KeepReason::kNone);
  const KeepRules heads{.defaults = false, .keep_lm_head = true};
  const KeepDecision head = default_keep("lm_head.weight", {49152, 576}, heads);
  EXPECT_EQ(head.reason, KeepReason::kLmHead);
  EXPECT_EQ(head.glob, "*lm_head*");
  EXPECT_EQ(why("blk.0.attn_norm.weight", {576}, heads), KeepReason::kNone);  // no defaults
}

TEST(KeepRules, DefaultCandidatesAreKnownSchemes) {
  const std::vector<std::string> c = default_candidates();
  ASSERT_FALSE(c.empty());
  for (const std::string& s : c) EXPECT_NO_THROW(make_scheme(s)) << s;
  EXPECT_NE(std::find(c.begin(), c.end(), "q4k"), c.end());
}

}  // namespace
}  // namespace tk::quant
