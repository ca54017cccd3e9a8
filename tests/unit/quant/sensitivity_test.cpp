// Tensor roles by name (GGUF and Hugging Face spellings, tied heads) and their weights.
#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "tk/quant/sensitivity.h"

namespace tk::quant {
namespace {

TEST(Sensitivity, RolesByGgufAndHfNames) {
  EXPECT_EQ(tensor_role("blk.3.attn_v.weight", false), TensorRole::kAttnV);
  EXPECT_EQ(tensor_role("model.layers.3.self_attn.v_proj.weight", false), TensorRole::kAttnV);
  EXPECT_EQ(tensor_role("blk.0.ffn_down.weight", false), TensorRole::kFfnDown);
  EXPECT_EQ(tensor_role("model.layers.0.mlp.down_proj.weight", false), TensorRole::kFfnDown);
  EXPECT_EQ(tensor_role("blk.1.attn_output.weight", false), TensorRole::kAttnOutput);
  EXPECT_EQ(tensor_role("output.weight", false), TensorRole::kOutput);
  EXPECT_EQ(tensor_role("lm_head.weight", false), TensorRole::kOutput);
  EXPECT_EQ(tensor_role("encoder.layer.0.attention.self.query.weight", false), TensorRole::kOther);
  // a norm has no role
  EXPECT_EQ(tensor_role("blk.1.attn_norm.weight", false), TensorRole::kOther);
}

TEST(Sensitivity, TiedEmbeddingsAreTheHead) {
  const std::vector<std::string_view> tied = {"token_embd.weight", "blk.0.attn_q.weight"};
  const std::vector<std::string_view> untied = {"token_embd.weight", "blk.0.attn_q.weight", "output.weight"};
  EXPECT_TRUE(embeddings_tied(tied));
  EXPECT_FALSE(embeddings_tied(untied));
  EXPECT_FALSE(embeddings_tied({"blk.0.attn_q.weight"}));
  EXPECT_EQ(tensor_role("token_embd.weight", true), TensorRole::kOutput);
  EXPECT_EQ(tensor_role("model.embed_tokens.weight", false), TensorRole::kEmbedding);
}

TEST(Sensitivity, WeightsAsMeasured) {
  for (bool weighted : {false, true}) {
    EXPECT_EQ(role_weight(TensorRole::kFfnUp, weighted), 1.0);
    EXPECT_EQ(role_weight(TensorRole::kOther, weighted), 1.0);
    // the measurement's order: the head far above all, ffn_down above the attention inputs
    EXPECT_GT(role_weight(TensorRole::kOutput, weighted), 5 * role_weight(TensorRole::kFfnDown, weighted));
    EXPECT_GT(role_weight(TensorRole::kFfnDown, weighted), role_weight(TensorRole::kAttnQ, weighted));
  }
}

TEST(Sensitivity, ObjectiveWeightsOnlyWhereRolesAre) {
  // A model with roles: role weight over signal; the tied head weighs as the output.
  const std::vector<std::string_view> llm = {"token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_up.weight"};
  const std::vector<double> w = objective_weights(llm, llm, {2.0, 4.0, 8.0}, {false, true, false});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_DOUBLE_EQ(w[0], role_weight(TensorRole::kOutput, false) / 2.0);
  EXPECT_DOUBLE_EQ(w[1], role_weight(TensorRole::kAttnQ, true) / 4.0);
  EXPECT_DOUBLE_EQ(w[2], 1.0 / 8.0);
  // None: the squared errors as they are.
  const std::vector<std::string_view> bert = {"encoder.layer.0.attention.self.query.weight"};
  EXPECT_EQ(objective_weights(bert, bert, {5.0}, {false}), std::vector<double>{1.0});
}

}  // namespace
}  // namespace tk::quant
