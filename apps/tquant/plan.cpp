#include "plan.h"

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/io/glob.h"
#include "tk/quant/scheme.h"

namespace tk::tquant {

const std::vector<std::string>& default_keep_globs() {
  static const std::vector<std::string> globs = {"*norm*", "*bias", "*embed*", "*wte*", "*wpe*", "*ln_*"};
  return globs;
}

std::vector<std::string> default_candidates() {
  // From about 2 to 8.5 bits per weight; those the scheme table does not know are
  // skipped, so the list follows the table. trellis:2:10 is the 2-bit trellis with 1024
  // states: within 0.25 dB of the default 4096 at a fifth of the search time.
  static const char* const kNames[] = {"kmeans:2", "vq:4:8", "trellis:2:10", "q2k", "int3",  "kmeans:3", "q3k",  "int4",
                                       "nf4",      "mxfp4",    "nvfp4", "q4k",     "kmeans:4", "int5",
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

std::string matching_keep(const std::string& name, const QuantArgs& args) {
  for (const std::string& g : args.keep) {
    if (io::glob_match(g, name)) return g;
  }
  if (!args.no_default_keep) {
    for (const std::string& g : default_keep_globs()) {
      if (io::glob_match(g, name)) return g;
    }
  }
  return {};
}

}  // namespace

std::vector<PlanEntry> plan_tensors(const std::vector<io::TensorInfo>& infos, const QuantArgs& args,
                                    cli::TensorSelection& selection, bool budget) {
  std::vector<std::pair<std::string, std::string>> rules;
  for (const std::string& r : args.rules) rules.push_back(parse_rule(r));
  std::vector<PlanEntry> plan;
  for (size_t i = 0; i < infos.size(); ++i) {
    PlanEntry e;
    e.index = i;
    e.info = infos[i];
    const std::string& name = infos[i].name;
    const std::pair<std::string, std::string>* rule = nullptr;
    for (const auto& r : rules) {
      if (io::glob_match(r.first, name)) rule = &r;
    }
    std::string keep = matching_keep(name, args);
    if (!selection.selects(name)) {
      e.reason = "not selected";
    } else if (!dtype_is_float(infos[i].dtype)) {
      e.reason = fmt::format("{} is not a float dtype", dtype_name(infos[i].dtype));
    } else if (shape_numel(infos[i].shape) == 0) {
      e.reason = "empty";
    } else if (rule) {
      e.quantize = true;
      e.scheme = rule->second;
      e.reason = fmt::format("rule '{}={}'", rule->first, rule->second);
    } else if (!keep.empty()) {
      e.reason = fmt::format("kept by --keep '{}'", keep);
    } else {
      e.quantize = true;
      e.budgeted = budget;
      e.scheme = budget ? "" : args.scheme;
      e.reason = budget ? "budget" : "--scheme";
    }
    plan.push_back(std::move(e));
  }
  return plan;
}

}  // namespace tk::tquant
