#include "plan.h"

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/io/glob.h"
#include "tk/quant/scheme.h"

namespace tk::tquant {

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
  // From about 2 to 8.5 bits per weight; those the scheme table does not know are
  // skipped, so the list follows the table. trellis:2:10 is the 2-bit trellis with 1024
  // states: within 0.25 dB of the default 4096 at a fifth of the search time.
  static const char* const kNames[] = {"kmeans:2", "vq:4:8", "trellis:2:10", "iq2xxs", "iq2xs", "q2k", "iq2s", "iq3xxs", "int3",  "kmeans:3", "iq3s", "q3k",  "iq4xs", "int4",
                                       "nf4",      "iq4nl",    "mxfp4", "nvfp4", "q4k",     "kmeans:4", "int5",
                                       "q5k",     "kmeans:5", "int6",  "q6k",     "mxfp6_e2m3", "int8",
                                       "q8k",     "mxfp8_e4m3"};
  std::vector<std::string> out;
  for (const char* name : kNames) {
    try {
      quant::make_scheme(name);
      out.emplace_back(name);
    } catch (const Error&) {
    }
  }
  return out;
}

std::pair<std::string, std::string> parse_rule(const std::string& rule) {
  size_t eq = rule.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == rule.size()) {
    throw usage_error("expected GLOB=SCHEME, got '" + rule + "'", "--rule");
  }
  return {rule.substr(0, eq), rule.substr(eq + 1)};
}

namespace {

std::string first_match(const std::vector<std::string>& globs, const std::string& name) {
  for (const std::string& g : globs) {
    if (io::glob_match(g, name)) return g;
  }
  return {};
}

// Why the default rules keep this tensor in its dtype, or empty: by kind (scalars,
// 1-D tensors, small tensors), then by name.
std::string default_keep_reason(const io::TensorInfo& info, const QuantArgs& args) {
  if (!args.keep_lm_head && args.no_default_keep) return {};
  if (args.keep_lm_head) {
    if (std::string g = first_match(lm_head_globs(), info.name); !g.empty()) {
      return fmt::format("output head '{}' (--keep-lm-head)", g);
    }
  }
  if (args.no_default_keep) return {};
  const uint64_t n = shape_numel(info.shape);
  if (info.shape.empty()) return "scalar";
  if (n == 1) return "one element";
  if (info.shape.size() == 1) return "1-D";
  if (n < static_cast<uint64_t>(args.min_elements)) {
    return fmt::format("{} elements, under --min-elements {}", n, args.min_elements);
  }
  if (std::string g = first_match(default_keep_globs(), info.name); !g.empty()) {
    return fmt::format("name matches '{}'", g);
  }
  if (!args.quantize_embeddings) {
    if (std::string g = first_match(embedding_globs(), info.name); !g.empty()) {
      return fmt::format("embedding '{}' (--quantize-embeddings quantizes it)", g);
    }
  }
  return {};
}

}  // namespace

std::vector<PlanEntry> plan_tensors(const std::vector<io::TensorInfo>& infos, const QuantArgs& args,
                                    cli::TensorSelection& selection, bool budget) {
  if (args.min_elements < 0) throw usage_error("must not be negative", "--min-elements");
  std::vector<std::pair<std::string, std::string>> rules;
  for (const std::string& r : args.rules) rules.push_back(parse_rule(r));
  std::vector<bool> rule_used(rules.size(), false);
  std::vector<PlanEntry> plan;
  for (size_t i = 0; i < infos.size(); ++i) {
    const std::string& name = infos[i].name;
    if (!selection.selects(name)) continue;  // -t/--exclude: left out of the output
    PlanEntry e;
    e.index = i;
    e.info = infos[i];
    const std::pair<std::string, std::string>* rule = nullptr;
    for (size_t r = 0; r < rules.size(); ++r) {
      if (!io::glob_match(rules[r].first, name)) continue;
      rule = &rules[r];
      rule_used[r] = true;
    }
    std::string kept;
    if (!dtype_is_float(infos[i].dtype)) {
      e.reason = fmt::format("{} is not a float dtype", dtype_name(infos[i].dtype));
    } else if (shape_numel(infos[i].shape) == 0) {
      e.reason = "empty";
    } else if (kept = default_keep_reason(infos[i], args); !kept.empty()) {
      e.reason = "kept: " + kept;
      if (rule) e.unapplied_rule = rule->first + "=" + rule->second;
    } else if (rule) {
      e.quantize = true;
      e.scheme = rule->second;
      e.reason = fmt::format("rule '{}={}'", rule->first, rule->second);
    } else if (std::string g = first_match(args.keep, name); !g.empty()) {
      e.reason = fmt::format("kept by --keep '{}'", g);
    } else {
      e.quantize = true;
      e.budgeted = budget;
      e.scheme = budget ? "" : args.scheme;
      e.reason = budget ? "budget" : "--scheme";
    }
    plan.push_back(std::move(e));
  }
  // As -t: a rule that matches no selected tensor is a mistake (a typo, GGUF names given
  // HF ones), not a rule to skip in silence.
  for (size_t r = 0; r < rules.size(); ++r)
    if (!rule_used[r]) throw usage_error("no tensor matches '" + rules[r].first + "'", "--rule");
  return plan;
}

}  // namespace tk::tquant
