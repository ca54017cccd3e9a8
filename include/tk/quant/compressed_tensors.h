// tensorkit's quantized tensors as compressed-tensors parameters, the safetensors layout
// that vLLM and transformers load (a model directory whose config.json carries a
// `quantization_config` with quant_method "compressed-tensors").
//
// A quantized weight MODULE.weight becomes MODULE.<param> tensors. The twins:
//
//   tensorkit (options)                          format                 params
//   intB symmetric, group G | channel | tensor   pack-quantized         weight_packed (I32: B-bit values + 2^(B-1),
//     (B = 2..8; scales f16, bf16 or f32)                                 dense LSB-first, ceil(cols B / 32) words
//                                                                         a row), weight_scale, weight_shape (I64)
//   intB asymmetric with integer zero points     pack-quantized         the same and weight_zero_point (z - 2^(B-1)
//     (QuantOptions::integer_zero_point),                                 packed down each column: I32
//     group G | channel                                                   [ceil(rows B / 32), groups])
//   fp8_e4m3, tensor | channel                   float-quantized        weight (F8_E4M3), weight_scale (F32)
//   nvfp4 with a power-of-two tensor scale t     nvfp4-pack-quantized   weight_packed (U8, two E2M1 a byte, low
//                                                                         nibble first), weight_scale (F8_E4M3 a
//                                                                         block of 16), weight_global_scale = 1 / t
//
// compressed-tensors decodes (q - zp) * scale in the scale's dtype, and for nvfp4
// e2m1 * (scale / global): tensorkit's values for these twins bit for bit (but for the
// sign of zeros, as with the ggml twins: tensorkit's symmetric decoders add +0 where
// 0 * a negative scale is -0), rounded to
// the scale's dtype (tquant gives the scales the tensor's own dtype, which `tquant
// dequant` rounds to as well), and for nvfp4 only when 1 / t is exact, hence the power
// of two (QuantOptions::power_of_two_tensor_scale).
// tensorkit's asymmetric integers with a float offset (its default) have no twin; nor do
// padded rows of grouped integers, other views of the tensor (view_cols), or tensors
// that are not 2-D.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/tensor.h"
#include "tk/quant/scheme.h"

namespace tk::quant {

// The arguments of one compressed-tensors weight scheme (QuantizationArgs) and its format.
struct CtScheme {
  std::string format;      // "pack-quantized", "float-quantized", "nvfp4-pack-quantized"
  std::string type;        // "int" or "float"
  int num_bits = 0;
  std::string strategy;    // "tensor", "channel", "group" or "tensor_group"
  int64_t group_size = 0;  // group and tensor_group; 0 otherwise
  bool symmetric = true;

  auto operator<=>(const CtScheme&) const = default;
  // "int4 group 32 (pack-quantized)", for messages.
  std::string text() const;
};

// The twin of q, or nullopt with the reason in `why` (when given).
std::optional<CtScheme> ct_scheme_for(const Quantized& q, std::string* why = nullptr);

// Whether a scheme (canonical name) quantized under `options` gives results with a twin
// (their shape aside); the reason when not. tquant checks it before quantizing.
bool ct_scheme_supported(std::string_view scheme, const QuantOptions& options, std::string* why = nullptr);
// The schemes with a twin, for messages.
std::string ct_schemes_text();

// The parameters of q under `s` (= ct_scheme_for(q)), in compressed-tensors' order (its
// compression_param_names): the first is the root ("weight_packed" or "weight").
std::vector<std::pair<std::string, Tensor>> ct_params(const Quantized& q, const CtScheme& s);
// The parameter names a module quantized under `s` stores, root first.
std::vector<std::string> ct_param_names(const CtScheme& s);
// One parameter of q under `s`, by name (ct_params makes them all): a writer that stores
// a module's parameters apart asks for each when its turn comes.
Tensor ct_param(const Quantized& q, const CtScheme& s, std::string_view name);
// The dtype and shape of each parameter (ct_param_names' order) of a rows x cols weight
// under `s`, its integer scales in `scale_dtype`: what a writer declares before the data.
std::vector<std::pair<DType, Shape>> ct_param_layouts(const CtScheme& s, int64_t rows, int64_t cols,
                                                      DType scale_dtype);

// The Quantized that the parameters stand for, to dequantize with make_scheme(q.scheme).
// `params` are keyed by local name ("weight_packed", ...). Throws kInvalidInput naming
// what is missing or malformed (dtype, shape, an unsupported scheme).
Quantized ct_quantized(const CtScheme& s, const std::map<std::string, Tensor>& params);

// The tensorkit scheme a compressed-tensors scheme reads as: "int4", "fp8_e4m3", "nvfp4".
std::string ct_tensorkit_scheme(const CtScheme& s);
// The shape of the weight a module stores under `s`: from `weight_shape` (its tensor,
// for pack-quantized), else from the root parameter's shape `root`. Throws
// kInvalidInput unless it is a 2-D shape whose size does not overflow.
Shape ct_weight_shape(const CtScheme& s, const Shape& root, const Tensor* weight_shape);

// One config group: its weight scheme and its targets (module names, "re:" patterns,
// or module classes such as "Linear").
struct CtGroup {
  CtScheme scheme;
  std::vector<std::string> targets;
};
// The compiled "re:" patterns of a config (opaque: ct_config.cpp's).
struct CtPatterns;
struct CtConfig {
  std::vector<CtGroup> groups;
  std::vector<std::string> ignore;
  std::optional<DType> dtype;  // config.json's torch_dtype (or dtype), when a float type
  // ct_config_parse compiles the patterns once; ct_group_for compiles any other pattern
  // (of a config made or changed by hand) on each call.
  std::shared_ptr<const CtPatterns> patterns;
};

// The `quantization_config` object (JSON text) of groups whose targets are exact module
// names; format is the groups' one, or "mixed-precision" when they differ.
std::string ct_quantization_config(const CtConfig& config);

// The quantization config of a config.json text; nullopt when the JSON policy
// (core/json_parse_internal.h) refuses the text or it is not an object, has no
// quantization_config or one of another quant_method. Throws kInvalidInput for a
// malformed compressed-tensors config (a group without weights or targets, bits out of
// range, a "re:" pattern that does not compile).
std::optional<CtConfig> ct_config_parse(const std::string& config_json);

// The group that quantizes module `module` (a name without ".weight"): the first whose
// name or "re:" target matches, else the first with a class target; null when an ignore
// entry matches or no group does. A "re:" pattern matches as compressed-tensors'
// re.match does (anchored at the start of the name only), in time linear in the name
// (RE2: no backreferences or lookaround, which such a config is refused for).
const CtGroup* ct_group_for(const CtConfig& config, const std::string& module);

}  // namespace tk::quant
