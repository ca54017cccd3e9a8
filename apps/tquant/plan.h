// What tquant does with each tensor of the input, and why (printed by --explain).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tk/io/gguf_types.h"
#include "tk/io/tensor_file.h"
#include "tquant.h"

namespace tk::tquant {

struct PlanEntry {
  size_t index = 0;          // in the reader
  io::TensorInfo info;
  bool quantize = false;     // else passed through unchanged
  bool budgeted = false;     // the scheme is chosen by the budget solver
  std::string scheme;        // fixed scheme (--scheme or --rule) or the budget's choice
  std::string reason;        // "--scheme", "rule 'GLOB=SCHEME'", "kept: 1-D", ...
  int64_t group_size = 0;    // a fallback's group size (0: the options')
  // GGUF output: a fallback's ggml type (llama.cpp's, e.g. Q5_1 for Q5_K), which fixes
  // the scheme's layout, symmetry included; nullopt: the scheme's own twin.
  std::optional<io::GgmlType> gguf_type;
  std::string unapplied_rule;  // a --rule that matched a tensor the default rules keep
};

// Decide for every tensor the selection (-t/--exclude) takes (the others are left out):
// dtype, empty tensors, the default keep rules (by kind: scalars, 1-D, under
// --min-elements; by name: norms, biases, anchors, embeddings; --keep-lm-head), which
// a --rule does not override (the entry names the rule for a notice), then --rule (last
// match wins) and --keep. `budget` marks the remaining tensors for the solver, else
// they get args.scheme.
std::vector<PlanEntry> plan_tensors(const std::vector<io::TensorInfo>& infos, const QuantArgs& args,
                                    cli::TensorSelection& selection, bool budget);

// "--rule GLOB=SCHEME" split at the last '='; kUsage when malformed.
std::pair<std::string, std::string> parse_rule(const std::string& rule);

}  // namespace tk::tquant
