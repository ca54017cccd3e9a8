// How far a tensor's quantization error moves a language model's output, by the tensor's
// role in the model, for the budget's objective (tquant --budget / --size).
//
// For a linear layer y = W x, the loss grows by about 1/2 sum_ij F_ij dW_ij^2 for a small
// error dW, with F_ij ~ E[g_i^2] E[x_j^2] (g: the loss's gradient at y). The importance
// matrix supplies E[x_j^2], so its weighted squared error is the layer's output error;
// E[g^2], how much the rest of the network amplifies that output error, is what the
// weights below stand for. They are per role, not per tensor, and were measured, not
// assumed: scripts/bench/tquant_llm_ppl.py --sensitivity quantizes one group of tensors
// at a time and measures llama.cpp's KL divergence (docs/QUANT.md has the figures and
// how well the objective predicts them).
#pragma once

#include <string_view>
#include <vector>

namespace tk::quant {

enum class TensorRole {
  kOther,  // not a recognised transformer matrix: weight 1, the objective as without roles
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnOutput,
  kFfnGate,
  kFfnUp,
  kFfnDown,
  kEmbedding,  // token embeddings read by index only
  kOutput,     // the output head, and token embeddings tied to it
};

// The role of a tensor by its name: llama.cpp's GGUF names (blk.N.attn_q.weight,
// token_embd.weight, output.weight) and Hugging Face's (q_proj, o_proj, gate_proj,
// embed_tokens, lm_head, ...). `tied`: the model has no output head of its own, so its
// token embeddings are the head.
TensorRole tensor_role(std::string_view name, bool tied);

// Whether a model of these tensor names has no output head of its own (tied embeddings).
bool embeddings_tied(const std::vector<std::string_view>& names);

// The weight of a relative error (squared error over signal energy) in the role's
// tensors against one in an MLP up-projection; `weighted`: both weighted by an
// importance matrix. 1 for kOther.
double role_weight(TensorRole role, bool weighted);

std::string_view role_name(TensorRole role);

// The weight of each budgeted tensor's squared error in the budget's objective. In a
// model of which some budgeted tensor has a role: the role's weight over the tensor's
// signal energy (its squared error becomes a relative error), with `weighted[i]` saying
// whether an importance matrix weighted tensor i's error and signal. Otherwise all 1:
// the squared errors summed, as for models without roles. `model` names every tensor of
// the model (for tied embeddings); `budgeted`, `signal` and `weighted` run in step.
std::vector<double> objective_weights(const std::vector<std::string_view>& model,
                                      const std::vector<std::string_view>& budgeted,
                                      const std::vector<double>& signal, const std::vector<bool>& weighted);

}  // namespace tk::quant
