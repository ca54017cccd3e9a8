#include "tk/quant/keep_rules.h"

#include "tk/core/error.h"
#include "tk/io/glob.h"
#include "tk/quant/scheme.h"

namespace tk::quant {

const std::vector<std::string>& default_keep_globs() {
  // Case matters to the globs, so both spellings are listed: HF's "LayerNorm", TF's
  // "BatchNorm", PyTorch's "norm"; "bias" (PyTorch, Flax), "biases" and "bias:0"
  // (TF/Keras); batch-norm statistics; detector anchor constants.
  static const std::vector<std::string> globs = {
      "*norm*", "*Norm*", "*ln_*",      "*bias",     "*bias:0",  "*biases",     "*biases:0",
      "*/b",    "*.b",    "*moving_mean*", "*moving_variance*", "*running_mean*", "*running_var*",
      "*anchor*", "*Anchor*"};
  return globs;
}

const std::vector<std::string>& embedding_globs() {
  // GGUF (llama.cpp's names): token_embd, position_embd, token_types.
  static const std::vector<std::string> globs = {"*embed*", "*Embed*", "*wte*",    "*wpe*",
                                                 "*tok_embeddings*", "*_embd.*", "token_types.*"};
  return globs;
}

const std::vector<std::string>& lm_head_globs() {
  static const std::vector<std::string> globs = {"*lm_head*", "output.weight", "*/logits/*"};
  return globs;
}

std::vector<std::string> default_candidates() {
  // trellis:2:10 is the 2-bit trellis with 1024 states: within 0.25 dB of the default
  // 4096 at a fifth of the search time.
  static const char* const kNames[] = {"kmeans:2", "vq:4:8", "trellis:2:10", "iq2xxs", "iq2xs", "q2k", "iq2s", "iq3xxs", "int3",  "kmeans:3", "iq3s", "q3k",  "iq4xs", "int4",
                                       "nf4",      "iq4nl",    "mxfp4", "nvfp4", "q4k",     "kmeans:4", "int5",
                                       "q5k",     "kmeans:5", "int6",  "q6k",     "mxfp6_e2m3", "int8",
                                       "q8k",     "mxfp8_e4m3"};
  std::vector<std::string> out;
  for (const char* name : kNames) {
    try {
      make_scheme(name);
      out.emplace_back(name);
    } catch (const Error&) {
    }
  }
  return out;
}

namespace {

std::string first_match(const std::vector<std::string>& globs, const std::string& name) {
  for (const std::string& g : globs) {
    if (io::glob_match(g, name)) return g;
  }
  return {};
}

}  // namespace

KeepDecision default_keep(const std::string& name, const Shape& shape, const KeepRules& rules) {
  if (rules.keep_lm_head) {
    if (std::string g = first_match(lm_head_globs(), name); !g.empty()) return {KeepReason::kLmHead, g};
  }
  if (!rules.defaults) return {};
  const uint64_t n = shape_numel(shape);
  if (shape.empty()) return {KeepReason::kScalar, {}};
  if (n == 1) return {KeepReason::kOneElement, {}};
  if (shape.size() == 1) return {KeepReason::kOneDimensional, {}};
  if (n < static_cast<uint64_t>(rules.min_elements)) return {KeepReason::kSmall, {}};
  if (std::string g = first_match(default_keep_globs(), name); !g.empty()) return {KeepReason::kName, g};
  if (!rules.quantize_embeddings) {
    if (std::string g = first_match(embedding_globs(), name); !g.empty()) return {KeepReason::kEmbedding, g};
  }
  return {};
}

}  // namespace tk::quant
