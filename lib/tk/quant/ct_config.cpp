// The quantization_config of compressed_tensors.h: written for tquant's groups, read
// from a model's config.json (as the compressed-tensors package's QuantizationConfig
// and QuantizationArgs), and its targets matched against module names.
#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <re2/re2.h>

#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"
#include "tk/quant/compressed_tensors.h"

namespace tk::quant {

// Each "re:" pattern of a config, compiled once.
struct CtPatterns {
  std::map<std::string, std::unique_ptr<const re2::RE2>, std::less<>> compiled;
};

namespace {

using nlohmann::json;

constexpr const char* kPacked = "pack-quantized";
constexpr const char* kNvfp4 = "nvfp4-pack-quantized";
constexpr std::string_view kPatternPrefix = "re:";
// A pattern longer than this is a hostile file, not a model's config (module names run
// to a few dozen characters); it is refused before it is compiled.
constexpr size_t kMaxPattern = 1024;

json args_json(const CtScheme& s) {
  json a = {{"num_bits", s.num_bits}, {"type", s.type},   {"symmetric", s.symmetric}, {"strategy", s.strategy},
            {"dynamic", false},       {"actorder", nullptr}, {"block_structure", nullptr}, {"observer", "minmax"},
            {"observer_kwargs", json::object()}};
  a["group_size"] = s.group_size > 0 ? json(s.group_size) : json(nullptr);
  if (s.format == kNvfp4) a["scale_dtype"] = "torch.float8_e4m3fn";
  return a;
}

std::string json_string(const json& j, const char* key, const std::string& fallback = {}) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw invalid_input(std::string("'") + key + "' must be a string");
  return it->get<std::string>();
}

CtScheme parse_args(const json& w, const std::string& format) {
  if (!w.is_object()) throw invalid_input("a config group has no 'weights' object");
  CtScheme s;
  s.format = format;
  s.type = json_string(w, "type", "int");
  auto bits = w.find("num_bits");
  if (bits == w.end() || !bits->is_number_integer() || *bits < 1 || *bits > 16) {
    throw invalid_input("'num_bits' must be an integer from 1 to 16");
  }
  s.num_bits = bits->get<int>();
  s.strategy = json_string(w, "strategy", "tensor");
  if (auto g = w.find("group_size"); g != w.end() && !g->is_null()) {
    if (!g->is_number_integer() || *g < 1) throw invalid_input("'group_size' must be a positive integer");
    s.group_size = g->get<int64_t>();
  }
  if (auto sym = w.find("symmetric"); sym != w.end() && !sym->is_null()) {
    if (!sym->is_boolean()) throw invalid_input("'symmetric' must be true or false");
    s.symmetric = sym->get<bool>();
  }
  return s;
}

// A target or ignore entry that names a module class ("Linear") rather than modules.
bool class_target(const std::string& t) {
  return !t.empty() && std::isupper(static_cast<unsigned char>(t[0])) && t.find('.') == std::string::npos;
}

bool is_pattern(std::string_view target) { return target.starts_with(kPatternPrefix); }

// RE2 (a linear-time automaton) of a "re:" target. Python's re syntax that RE2 lacks
// (backreferences, lookaround) does not compile and is refused.
std::unique_ptr<const re2::RE2> compile(const std::string& target) {
  const std::string shown = target.substr(0, 96) + (target.size() > 96 ? "..." : "");
  if (target.size() > kMaxPattern) {
    throw invalid_input(fmt::format("pattern '{}' in the quantization config is too long (more than {} characters)",
                                    shown, kMaxPattern));
  }
  re2::RE2::Options options;
  options.set_log_errors(false);  // the library never prints; the error is thrown instead
  auto re = std::make_unique<const re2::RE2>(target.substr(kPatternPrefix.size()), options);
  if (!re->ok()) {
    throw invalid_input(fmt::format("pattern '{}' in the quantization config is not supported: {}", shown,
                                    re->error()));
  }
  return re;
}

std::shared_ptr<const CtPatterns> compile_patterns(const CtConfig& config) {
  auto patterns = std::make_shared<CtPatterns>();
  auto add = [&](const std::string& t) {
    if (is_pattern(t) && !patterns->compiled.count(t)) patterns->compiled.emplace(t, compile(t));
  };
  for (const std::string& t : config.ignore) add(t);
  for (const CtGroup& g : config.groups)
    for (const std::string& t : g.targets) add(t);
  return patterns;
}

// compressed-tensors' match_name: re.match for a "re:" target (anchored at the start
// only), equality otherwise.
bool name_matches(const CtConfig& config, const std::string& target, const std::string& module) {
  if (!is_pattern(target)) return target == module;
  std::unique_ptr<const re2::RE2> own;
  const re2::RE2* re = nullptr;
  if (config.patterns) {
    auto it = config.patterns->compiled.find(target);
    if (it != config.patterns->compiled.end()) re = it->second.get();
  }
  if (!re) re = (own = compile(target)).get();
  return re->Match(module, 0, module.size(), re2::RE2::ANCHOR_START, nullptr, 0);
}

}  // namespace

std::string ct_quantization_config(const CtConfig& config) {
  json groups = json::object();
  std::string format;
  for (size_t i = 0; i < config.groups.size(); ++i) {
    const CtGroup& g = config.groups[i];
    groups[fmt::format("group_{}", i)] = {{"targets", g.targets},
                                          {"weights", args_json(g.scheme)},
                                          {"input_activations", nullptr},
                                          {"output_activations", nullptr},
                                          {"format", g.scheme.format}};
    format = i == 0 || format == g.scheme.format ? g.scheme.format : "mixed-precision";
  }
  json c = {{"quant_method", "compressed-tensors"},
            {"format", format.empty() ? "dense" : format},
            {"quantization_status", "compressed"},
            {"config_groups", std::move(groups)},
            {"ignore", config.ignore},
            {"kv_cache_scheme", nullptr},
            {"global_compression_ratio", nullptr}};
  return c.dump();
}

std::optional<CtConfig> ct_config_parse(const std::string& config_json) {
  // Only the members read here are built; the rest of the document is checked and dropped.
  std::optional<json> doc;
  try {
    doc = json_parse_object_members(config_json, "config.json", {"quantization_config", "torch_dtype", "dtype"});
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!doc) return std::nullopt;
  auto qc = doc->find("quantization_config");
  if (qc == doc->end() || !qc->is_object()) return std::nullopt;
  if (json_string(*qc, "quant_method") != "compressed-tensors") return std::nullopt;
  const std::string format = json_string(*qc, "format", kPacked);
  CtConfig config;
  auto groups = qc->find("config_groups");
  if (groups == qc->end() || !groups->is_object()) throw invalid_input("quantization_config has no config_groups");
  for (const auto& [name, g] : groups->items()) {
    if (!g.is_object()) throw invalid_input("config group '" + name + "' is not an object");
    const std::string group_format = json_string(g, "format", format);
    if (group_format == "mixed-precision") throw invalid_input("config group '" + name + "' names no format");
    CtGroup group;
    try {
      group.scheme = parse_args(g.contains("weights") ? g["weights"] : json(), group_format);
    } catch (const Error& e) {
      throw invalid_input(e.message(), "config group '" + name + "'");
    }
    auto targets = g.find("targets");
    if (targets == g.end() || !targets->is_array()) throw invalid_input("config group '" + name + "' has no targets");
    for (const json& t : *targets) {
      if (!t.is_string()) throw invalid_input("config group '" + name + "': targets must be strings");
      group.targets.push_back(t.get<std::string>());
    }
    config.groups.push_back(std::move(group));
  }
  for (const char* key : {"torch_dtype", "dtype"}) {
    const std::string name = doc->contains(key) && (*doc)[key].is_string() ? (*doc)[key].get<std::string>() : "";
    if (name == "float32") config.dtype = DType::kF32;
    if (name == "bfloat16") config.dtype = DType::kBF16;
    if (name == "float16") config.dtype = DType::kF16;
  }
  if (auto ignore = qc->find("ignore"); ignore != qc->end() && ignore->is_array()) {
    for (const json& t : *ignore)
      if (t.is_string()) config.ignore.push_back(t.get<std::string>());
  }
  config.patterns = compile_patterns(config);
  return config;
}

const CtGroup* ct_group_for(const CtConfig& config, const std::string& module) {
  for (const std::string& t : config.ignore)
    if (!class_target(t) && name_matches(config, t, module)) return nullptr;
  for (const CtGroup& g : config.groups)
    for (const std::string& t : g.targets)
      if (!class_target(t) && name_matches(config, t, module)) return &g;
  for (const CtGroup& g : config.groups)
    for (const std::string& t : g.targets)
      if (class_target(t)) return &g;
  return nullptr;
}

}  // namespace tk::quant
