// tquant: quantize the float tensors of a model with one scheme or under a size budget
// (a scheme per tensor), and restore dense tensors from a quantized file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/tool.h"
#include "tk/quant/scheme.h"

namespace tk::tquant {

// --format's value for a compressed-tensors model directory (vLLM, transformers).
inline constexpr const char* kCompressedTensors = "compressed-tensors";

struct QuantArgs {
  std::string input = "-";
  std::string output = "-";
  std::string format;                  // --format; empty: from the output's extension
  std::string scheme;                  // --scheme
  int64_t group_size = 0;              // --group-size
  std::string granularity;             // --granularity tensor|channel|group
  bool asym = false;                   // --asym
  std::string scale_dtype;             // --scale-dtype f16|bf16|f32
  std::string scale_rule;              // --scale-rule floor|ceil|search
  bool fast = false;                   // --fast
  bool double_quant = false;           // --double-quant
  std::string outliers;                // --outliers 0.1% | 0.001
  std::string importance;              // --importance FILE
  std::optional<double> budget;        // --budget BPW
  std::string size;                    // --size BYTES
  std::string candidates;              // --candidates LIST
  std::vector<std::string> rules;      // --rule GLOB=SCHEME
  std::vector<std::string> keep;       // --keep GLOB
  bool no_default_keep = false;        // --no-default-keep
  int64_t min_elements = 4096;         // --min-elements: smaller tensors are kept
  bool quantize_embeddings = false;    // --quantize-embeddings
  bool keep_lm_head = false;           // --keep-lm-head
  bool explain = false;                // --explain
  bool dry_run = false;                // --dry-run
  bool allow_nonfinite = false;        // --allow-nonfinite
  bool exact_budget = false;           // --exact-budget: measure every candidate whole
};

struct DequantArgs {
  std::string input = "-";
  std::string output = "-";
  std::string format;
  std::string dtype;  // f32|bf16|f16; empty: each tensor's original dtype
};

// The QuantOptions the flags ask for (without importance and seed). Throws kUsage.
quant::QuantOptions options_from_args(const QuantArgs& args);

int run_quantize(cli::Tool& tool, const QuantArgs& args);
int run_dequant(cli::Tool& tool, const DequantArgs& args);

}  // namespace tk::tquant
