#include "tk/quant/sensitivity.h"

#include <algorithm>

namespace tk::quant {
namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

bool is_head(std::string_view name) { return name == "output.weight" || contains(name, "lm_head"); }

bool is_embedding(std::string_view name) {
  return name == "token_embd.weight" || contains(name, "embed_tokens") || contains(name, "wte.weight") ||
         contains(name, "tok_embeddings");
}

struct Pattern {
  std::string_view part;
  TensorRole role;
};

// GGUF's names, then Hugging Face's (llama, mistral, qwen, phi-3 style modules).
constexpr Pattern kPatterns[] = {
    {".attn_q.", TensorRole::kAttnQ},         {".attn_k.", TensorRole::kAttnK},
    {".attn_v.", TensorRole::kAttnV},         {".attn_output.", TensorRole::kAttnOutput},
    {".ffn_gate.", TensorRole::kFfnGate},     {".ffn_up.", TensorRole::kFfnUp},
    {".ffn_down.", TensorRole::kFfnDown},     {".q_proj.", TensorRole::kAttnQ},
    {".k_proj.", TensorRole::kAttnK},         {".v_proj.", TensorRole::kAttnV},
    {".o_proj.", TensorRole::kAttnOutput},    {".gate_proj.", TensorRole::kFfnGate},
    {".up_proj.", TensorRole::kFfnUp},        {".down_proj.", TensorRole::kFfnDown},
};

}  // namespace

TensorRole tensor_role(std::string_view name, bool tied) {
  if (is_head(name)) return TensorRole::kOutput;
  if (is_embedding(name)) return tied ? TensorRole::kOutput : TensorRole::kEmbedding;
  for (const Pattern& p : kPatterns)
    if (contains(name, p.part)) return p.role;
  return TensorRole::kOther;
}

bool embeddings_tied(const std::vector<std::string_view>& names) {
  bool embedding = false;
  for (std::string_view n : names) {
    if (is_head(n)) return false;
    embedding = embedding || is_embedding(n);
  }
  return embedding;
}

double role_weight(TensorRole role, bool weighted) {
  // Measured on SmolLM2-135M (llama architecture, 30 blocks, tied embeddings): each
  // role's tensors quantized to Q4_0 alone, in the first and in the last 15 blocks, the
  // mean KL divergence of llama.cpp's logits over the sum of the tensors' relative
  // errors, as a multiple of ffn_up's (docs/QUANT.md). `weighted`: errors and signals
  // weighted by llama-imatrix's activations, which move attn_v's outlier columns into
  // the error itself, so that its weight falls.
  struct Row {
    TensorRole role;
    double weighted, plain;
  };
  static constexpr Row kRows[] = {
      {TensorRole::kAttnQ, 0.49, 0.53},      {TensorRole::kAttnK, 0.58, 0.48},  {TensorRole::kAttnV, 0.68, 1.78},
      {TensorRole::kAttnOutput, 0.61, 0.47}, {TensorRole::kFfnGate, 0.95, 0.71}, {TensorRole::kFfnUp, 1.0, 1.0},
      {TensorRole::kFfnDown, 2.45, 1.98},    {TensorRole::kOutput, 17.6, 13.4},
  };
  for (const Row& r : kRows)
    if (r.role == role) return weighted ? r.weighted : r.plain;
  return 1;  // kOther, and untied input embeddings (not measured)
}

std::vector<double> objective_weights(const std::vector<std::string_view>& model,
                                      const std::vector<std::string_view>& budgeted,
                                      const std::vector<double>& signal, const std::vector<bool>& weighted) {
  const bool tied = embeddings_tied(model);
  std::vector<TensorRole> roles;
  for (std::string_view name : budgeted) roles.push_back(tensor_role(name, tied));
  std::vector<double> weight(budgeted.size(), 1.0);
  if (std::none_of(roles.begin(), roles.end(), [](TensorRole r) { return r != TensorRole::kOther; })) return weight;
  for (size_t i = 0; i < roles.size(); ++i) weight[i] = role_weight(roles[i], weighted[i]) / std::max(signal[i], 1e-300);
  return weight;
}

std::string_view role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kOther: return "other";
    case TensorRole::kAttnQ: return "attn_q";
    case TensorRole::kAttnK: return "attn_k";
    case TensorRole::kAttnV: return "attn_v";
    case TensorRole::kAttnOutput: return "attn_output";
    case TensorRole::kFfnGate: return "ffn_gate";
    case TensorRole::kFfnUp: return "ffn_up";
    case TensorRole::kFfnDown: return "ffn_down";
    case TensorRole::kEmbedding: return "embedding";
    case TensorRole::kOutput: return "output";
  }
  return "other";
}

}  // namespace tk::quant
