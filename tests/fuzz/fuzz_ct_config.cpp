// libFuzzer target for a model's config.json as the compressed-tensors code takes it
// (lib/tk/quant/ct_config.cpp, ct_model.cpp). Each input is a config.json text.
// Checked: reading its quantization_config either gives a config whose groups are
// matched against module names (its "re:" patterns in linear time) or fails with
// kInvalidInput; making a quantized model's config from it either fails with
// kInvalidInput (or kUsage: it is quantized already) or keeps every byte of the input
// before its closing brace, adds no more than the new member, and reads back as that
// member's config.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tk/core/error.h"
#include "tk/quant/compressed_tensors.h"
#include "tk/quant/ct_model.h"

namespace {

using tk::ErrorKind;
using tk::quant::CtConfig;

void check(bool ok) {
  if (!ok) std::abort();
}

const char* const kModules[] = {"model.layers.0.mlp.down_proj", "model.layers.17.self_attn.q_proj", "lm_head",
                                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", ""};

void read_config(const std::string& text) {
  std::optional<CtConfig> config;
  try {
    config = tk::quant::ct_config_parse(text);
  } catch (const tk::Error& e) {
    check(e.kind() == ErrorKind::kInvalidInput);
    return;
  }
  if (!config) return;
  for (const char* module : kModules) {
    const tk::quant::CtGroup* g = tk::quant::ct_group_for(*config, module);
    check(!g || (g >= config->groups.data() && g < config->groups.data() + config->groups.size()));
  }
}

void make_config(const std::string& text) {
  CtConfig ct;
  ct.groups.push_back({tk::quant::CtScheme{"pack-quantized", "int", 4, "group", 128, true}, {kModules[0]}});
  std::string out;
  try {
    out = tk::quant::ct_model_config(text, ct);
  } catch (const tk::Error& e) {
    check(e.kind() == ErrorKind::kInvalidInput || e.kind() == ErrorKind::kUsage);
    return;
  }
  const std::string_view in = text.empty() ? std::string_view("{}") : std::string_view(text);
  const size_t close = in.find_last_of('}');
  check(close != std::string_view::npos);
  const std::string_view kept = in.substr(0, in.find_last_not_of(" \t\r\n", close - 1) + 1);
  check(std::string_view(out).substr(0, kept.size()) == kept);
  const std::string member = tk::quant::ct_quantization_config(ct);
  check(out.size() <= in.size() + 4 * member.size());
  const std::optional<CtConfig> back = tk::quant::ct_config_parse(out);
  check(back && back->groups.size() == 1 && back->groups[0].scheme == ct.groups[0].scheme &&
        back->groups[0].targets == ct.groups[0].targets);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  read_config(text);
  make_config(text);
  return 0;
}
