#include "plan.h"

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/io/glob.h"
#include "tk/quant/keep_rules.h"

namespace tk::tquant {

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

// Why the default rules keep this tensor in its dtype (quant::default_keep), in the
// words of tquant's flags, or empty.
std::string default_keep_reason(const io::TensorInfo& info, const QuantArgs& args) {
  const quant::KeepRules rules{!args.no_default_keep, args.min_elements, args.quantize_embeddings, args.keep_lm_head};
  const quant::KeepDecision d = quant::default_keep(info.name, info.shape, rules);
  switch (d.reason) {
    case quant::KeepReason::kNone: return {};
    case quant::KeepReason::kLmHead: return fmt::format("output head '{}' (--keep-lm-head)", d.glob);
    case quant::KeepReason::kScalar: return "scalar";
    case quant::KeepReason::kOneElement: return "one element";
    case quant::KeepReason::kOneDimensional: return "1-D";
    case quant::KeepReason::kSmall:
      return fmt::format("{} elements, under --min-elements {}", shape_numel(info.shape), args.min_elements);
    case quant::KeepReason::kName: return fmt::format("name matches '{}'", d.glob);
    case quant::KeepReason::kEmbedding: return fmt::format("embedding '{}' (--quantize-embeddings quantizes it)", d.glob);
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
