// Which tensors of a model stay in their dtype unless asked otherwise, and the schemes a
// budget chooses among by default: the policy a quantizer applies before any scheme is
// chosen (tquant's defaults), for callers of the library too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tk/core/shape.h"

namespace tk::quant {

struct KeepRules {
  bool defaults = true;              // keep by kind (scalars, 1-D, small) and by name
  int64_t min_elements = 4096;       // smaller tensors are kept (with `defaults`)
  bool quantize_embeddings = false;  // else embeddings are kept (with `defaults`)
  bool keep_lm_head = false;         // keep output heads, with or without `defaults`
};

// Why a tensor is kept, checked in this order; kNone: it is quantized.
enum class KeepReason { kNone, kLmHead, kScalar, kOneElement, kOneDimensional, kSmall, kName, kEmbedding };

struct KeepDecision {
  KeepReason reason = KeepReason::kNone;
  std::string glob;  // kLmHead, kName, kEmbedding: the name pattern that matched
};

// The default decision for a tensor of `name` and `shape` (a float tensor that is not
// empty): output heads when asked, then by kind, then norms, biases, batch-norm
// statistics and anchors by name, then embeddings.
KeepDecision default_keep(const std::string& name, const Shape& shape, const KeepRules& rules);

// Names kept in their dtype by default (norms, biases, anchors in HF, PyTorch, TF/Keras
// and JAX naming); embedding names, kept unless quantize_embeddings; output-head names
// (keep_lm_head). Globs as io::glob_match reads them.
const std::vector<std::string>& default_keep_globs();
const std::vector<std::string>& embedding_globs();
const std::vector<std::string>& lm_head_globs();

// A budget's candidate schemes when none are given: from about 2 to 8.5 bits per weight,
// those the scheme table knows.
std::vector<std::string> default_candidates();

}  // namespace tk::quant
