// The repacking behind compressed_tensors.h (the config is ct_config.cpp's). The layouts
// are those of the compressed-tensors package's compressors (pack_quantized/helpers.py:
// pack_to_int32; nvfp4/helpers.py: pack_fp4_to_uint8).
#include "tk/quant/compressed_tensors.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/quant/quant_internal.h"

namespace tk::quant {
namespace {

using namespace detail;

constexpr const char* kPacked = "pack-quantized";
constexpr const char* kFloat = "float-quantized";
constexpr const char* kNvfp4 = "nvfp4-pack-quantized";
constexpr int64_t kNvfp4Block = 16;

std::optional<CtScheme> refuse(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return std::nullopt;
}

int int_bits(std::string_view scheme) {
  if (scheme.size() != 4 || scheme.substr(0, 3) != "int") return 0;
  const int bits = scheme[3] - '0';
  return bits >= 2 && bits <= 8 ? bits : 0;
}

bool power_of_two(float t) {
  int e = 0;
  return t > 0 && std::isfinite(t) && std::frexp(t, &e) == 0.5f;
}

// Copy the first `nbits` of a little-endian bit stream; the bits after them stay zero.
void copy_bits(const uint8_t* from, uint64_t nbits, uint8_t* to) {
  std::memcpy(to, from, nbits / 8);
  if (nbits % 8) to[nbits / 8] = static_cast<uint8_t>(from[nbits / 8] & ((1u << (nbits % 8)) - 1));
}

int64_t packed_words(int64_t cols, int bits) { return (cols * bits + 31) / 32; }

const Tensor& need(const std::map<std::string, Tensor>& params, const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) throw invalid_input("missing parameter '" + name + "'");
  return it->second;
}

void check(bool ok, const std::string& what) {
  if (!ok) throw invalid_input(what);
}

// Zero points z (U8 [rows, groups], 0 .. 2^B - 1) packed as compressed-tensors packs them
// (pack_to_int32 with packed_dim 0): each column's values down the rows as one dense
// LSB-first stream of B-bit values, ceil(rows B / 32) words, giving I32 [words, groups].
Tensor pack_columns(const Tensor& zeros, int bits) {
  const int64_t rows = zeros.shape()[0], groups = zeros.shape()[1];
  const int64_t words = packed_words(rows, bits);
  Tensor out = Tensor::zeros(DType::kI32, {words, groups});
  auto* w = out.mutable_data_as<uint32_t>();
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t v = zeros.data()[r * groups + g], bit = static_cast<uint64_t>(r * bits);
      w[(bit / 32) * groups + g] |= static_cast<uint32_t>(v << (bit % 32));
      if (bit % 32 + bits > 32) w[(bit / 32 + 1) * groups + g] |= static_cast<uint32_t>(v >> (32 - bit % 32));
    }
  }
  return out;
}

// The inverse of pack_columns for a [rows, groups] result.
Tensor unpack_columns(const Tensor& packed, int64_t rows, int64_t groups, int bits) {
  const int64_t words = packed_words(rows, bits);
  check(packed.dtype() == DType::kI32 && packed.shape() == Shape{words, groups},
        fmt::format("weight_zero_point must be I32 [{}, {}]", words, groups));
  const auto* w = packed.data_as<uint32_t>();
  Tensor out = Tensor::empty(DType::kU8, {rows, groups});
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t bit = static_cast<uint64_t>(r * bits);
      uint64_t v = w[(bit / 32) * groups + g] >> (bit % 32);
      if (bit % 32 + bits > 32) v |= static_cast<uint64_t>(w[(bit / 32 + 1) * groups + g]) << (32 - bit % 32);
      out.mutable_data()[r * groups + g] = static_cast<uint8_t>(v & ((1u << bits) - 1));
    }
  }
  return out;
}

// Rows and columns of a 2-D weight from weight_shape (I64 or I32, two positive values).
std::pair<int64_t, int64_t> weight_shape(const Tensor& t) {
  check(t.numel() == 2 && (t.dtype() == DType::kI64 || t.dtype() == DType::kI32),
        "weight_shape must hold two I64 or I32 values");
  int64_t v[2];
  for (int i = 0; i < 2; ++i) v[i] = t.dtype() == DType::kI64 ? t.data_as<int64_t>()[i] : t.data_as<int32_t>()[i];
  check(v[0] > 0 && v[1] > 0 && v[0] <= (int64_t{1} << 40) / v[1], "weight_shape is not a sane 2-D shape");
  return {v[0], v[1]};
}

Quantized from_packed(const CtScheme& s, const std::map<std::string, Tensor>& params) {
  check(s.type == "int" && s.num_bits >= 2 && s.num_bits <= 8,
        fmt::format("{}: tensorkit reads 2- to 8-bit integers", s.text()));
  check(s.symmetric || s.strategy == "group" || s.strategy == "channel",
        fmt::format("{}: zero points are read per group or channel", s.text()));
  const auto [rows, cols] = weight_shape(need(params, "weight_shape"));
  const int bits = s.num_bits;
  const Tensor& packed = need(params, "weight_packed");
  const int64_t words = packed_words(cols, bits);
  check(packed.dtype() == DType::kI32 && packed.shape() == Shape{rows, words},
        fmt::format("weight_packed must be I32 [{}, {}]", rows, words));
  const Tensor& scales = need(params, "weight_scale");
  check(is_scale_dtype(scales.dtype()), "weight_scale must be F16, BF16 or F32");
  Layout l;
  std::string granularity = s.strategy;
  if (s.strategy == "group") {
    check(s.group_size > 0 && s.group_size % 8 == 0 && cols % s.group_size == 0,
          fmt::format("group size {} must be a multiple of 8 that divides {} columns", s.group_size, cols));
    l = make_layout(Shape{rows, cols}, s.group_size);
    check(scales.shape() == Shape{rows, cols / s.group_size}, "weight_scale's shape does not match the groups");
  } else {
    check(s.strategy == "channel" || s.strategy == "tensor", "strategy '" + s.strategy + "' is not supported");
    l = make_layout(Shape{rows, cols}, std::max<int64_t>(8, round_up(cols, 8)));
    const bool channel = s.strategy == "channel";
    check(scales.numel() == (channel ? static_cast<uint64_t>(rows) : 1), "weight_scale's shape does not match");
  }
  Quantized q = new_quantized("int" + std::to_string(bits), Shape{rows, cols}, l);
  q.params["bits"] = std::to_string(bits);
  q.params["granularity"] = granularity;
  q.params["symmetric"] = s.symmetric ? "1" : "0";
  if (!s.symmetric) {
    q.params["zero_point"] = "int";
    q.parts["zeros"] = unpack_columns(need(params, "weight_zero_point"), rows, l.groups_per_row, bits);
  }
  const int64_t row_bytes = l.padded_cols * bits / 8;
  Tensor codes = Tensor::zeros(DType::kU8, {rows, row_bytes});
  for (int64_t r = 0; r < rows; ++r) {
    copy_bits(packed.data() + r * words * 4, static_cast<uint64_t>(cols * bits), codes.mutable_data() + r * row_bytes);
  }
  q.parts["codes"] = std::move(codes);
  q.parts["scales"] = s.strategy == "group" ? scales : scales.reshaped(s.strategy == "channel" ? Shape{rows, 1} : Shape{1});
  return q;
}

Quantized from_float(const CtScheme& s, const std::map<std::string, Tensor>& params) {
  check(s.type == "float" && s.num_bits == 8, s.text() + ": tensorkit reads 8-bit floats as E4M3");
  check(s.strategy == "tensor" || s.strategy == "channel", "strategy '" + s.strategy + "' is not supported");
  const Tensor& weight = need(params, "weight");
  check(weight.dtype() == DType::kF8E4M3 && weight.rank() == 2, "weight must be a 2-D F8_E4M3 tensor");
  const int64_t rows = weight.shape()[0];
  const Tensor& scale = need(params, "weight_scale");
  const bool channel = s.strategy == "channel";
  check(is_scale_dtype(scale.dtype()) && scale.numel() == (channel ? static_cast<uint64_t>(rows) : 1),
        "weight_scale must be one float per " + std::string(channel ? "row" : "tensor"));
  Quantized q;
  q.scheme = "fp8_e4m3";
  q.shape = weight.shape();
  q.params["granularity"] = s.strategy;
  q.parts["codes"] = weight;
  Tensor scales = Tensor::empty(DType::kF32, channel ? Shape{rows, 1} : Shape{1});
  cast_array(scale.dtype(), scale.data(), DType::kF32, scales.mutable_data(), scale.numel());
  q.parts["scales"] = std::move(scales);
  return q;
}

Quantized from_nvfp4(const CtScheme& s, const std::map<std::string, Tensor>& params) {
  check(s.type == "float" && s.num_bits == 4 && s.group_size == kNvfp4Block,
        s.text() + ": nvfp4 is 4-bit floats in groups of 16");
  const Tensor& packed = need(params, "weight_packed");
  check(packed.dtype() == DType::kU8 && packed.rank() == 2, "weight_packed must be a 2-D U8 tensor");
  const int64_t rows = packed.shape()[0], cols = packed.shape()[1] * 2;
  check(cols % kNvfp4Block == 0, "nvfp4 rows must be whole blocks of 16");
  const Tensor& scales = need(params, "weight_scale");
  check(scales.dtype() == DType::kF8E4M3 && scales.shape() == Shape{rows, cols / kNvfp4Block},
        fmt::format("weight_scale must be F8_E4M3 [{}, {}]", rows, cols / kNvfp4Block));
  const Tensor& global = need(params, "weight_global_scale");
  check(global.numel() == 1 && is_scale_dtype(global.dtype()), "weight_global_scale must be one float");
  float g = 0;
  cast_array(global.dtype(), global.data(), DType::kF32, &g, 1);
  check(g > 0 && std::isfinite(g), "weight_global_scale must be positive and finite");
  Quantized q = new_quantized("nvfp4", Shape{rows, cols}, make_layout(Shape{rows, cols}, kNvfp4Block));
  q.parts["codes"] = Tensor(DType::kF4, Shape{rows, cols}, packed.buffer());
  q.parts["scales"] = scales;
  Tensor t = Tensor::empty(DType::kF32, {1});
  t.mutable_data_as<float>()[0] = 1.0f / g;
  q.parts["tensor_scale"] = std::move(t);
  return q;
}

}  // namespace

std::string CtScheme::text() const {
  std::string s = type + std::to_string(num_bits) + " " + strategy;
  if (group_size > 0) s += " " + std::to_string(group_size);
  if (!symmetric) s += " asymmetric";
  return s + " (" + format + ")";
}

bool ct_scheme_supported(std::string_view scheme, const QuantOptions& o, std::string* why) {
  if (int_bits(scheme)) {
    if (!o.symmetric && !o.integer_zero_point) {
      refuse(why, "compressed-tensors stores integer zero points, not tensorkit's float offsets");
      return false;
    }
    if (!o.symmetric && o.granularity == Granularity::kTensor) {
      refuse(why, "compressed-tensors packs zero points per group or channel, not per tensor");
      return false;
    }
    return true;
  }
  if (scheme == "fp8_e4m3" || scheme == "nvfp4") return true;
  refuse(why, fmt::format("compressed-tensors has no format for {}; it holds {}", scheme, ct_schemes_text()));
  return false;
}

std::string ct_schemes_text() {
  return "int2..int8 (pack-quantized; asymmetric: integer zero points per group or channel), fp8_e4m3 "
         "(float-quantized), nvfp4 (nvfp4-pack-quantized)";
}

std::optional<CtScheme> ct_scheme_for(const Quantized& q, std::string* why) {
  if (q.shape.size() != 2) return refuse(why, "compressed-tensors quantizes 2-D weights");
  if (q.params.count("view_cols")) return refuse(why, "quantized under another view of the tensor");
  const std::string granularity = q.params.count("granularity") ? q.params.at("granularity") : "";
  QuantOptions as_quantized;
  as_quantized.symmetric = q.params.count("symmetric") == 0 || q.params.at("symmetric") == "1";
  as_quantized.integer_zero_point = q.params.count("zero_point") && q.params.at("zero_point") == "int";
  as_quantized.granularity = granularity == "tensor" ? Granularity::kTensor : Granularity::kDefault;
  std::string reason;
  if (!ct_scheme_supported(q.scheme, as_quantized, &reason)) return refuse(why, reason);
  const int64_t cols = q.shape[1];
  if (const int bits = int_bits(q.scheme)) {
    CtScheme s{kPacked, "int", bits, granularity, 0, as_quantized.symmetric};
    if (granularity == "group") {
      s.group_size = param_int(q, "group_size", 8, INT64_MAX / 64);
      if (param_int(q, "padded_cols", 0, INT64_MAX / 64) != cols) {
        return refuse(why, fmt::format("rows of {} are not whole groups of {}", cols, s.group_size));
      }
    }
    return s;
  }
  if (q.scheme == "fp8_e4m3") return CtScheme{kFloat, "float", 8, granularity, 0, true};
  // nvfp4
  if (param_int(q, "padded_cols", 0, INT64_MAX / 64) != cols) {
    return refuse(why, fmt::format("rows of {} are not whole blocks of 16", cols));
  }
  auto t = q.parts.find("tensor_scale");
  if (t == q.parts.end() || t->second.dtype() != DType::kF32 || t->second.numel() != 1 ||
      !power_of_two(t->second.data_as<float>()[0])) {
    return refuse(why, "nvfp4's tensor scale is not a power of two (compressed-tensors divides by its reciprocal)");
  }
  return CtScheme{kNvfp4, "float", 4, "tensor_group", kNvfp4Block, true};
}

std::string ct_tensorkit_scheme(const CtScheme& s) {
  if (s.format == kFloat) return "fp8_e4m3";
  if (s.format == kNvfp4) return "nvfp4";
  return "int" + std::to_string(s.num_bits);
}

Shape ct_weight_shape(const CtScheme& s, const Shape& root, const Tensor* shape_param) {
  if (s.format == kPacked) {
    if (!shape_param) throw invalid_input("missing parameter 'weight_shape'");
    const auto [rows, cols] = weight_shape(*shape_param);
    return {rows, cols};
  }
  if (root.size() != 2) throw invalid_input("not a 2-D weight");
  Shape shape = root;
  if (s.format == kNvfp4) shape[1] *= 2;  // two values a byte
  shape_numel(shape);                      // throws on overflow
  return shape;
}

std::vector<std::string> ct_param_names(const CtScheme& s) {
  if (s.format == kFloat) return {"weight", "weight_scale"};
  if (s.format == kNvfp4) return {"weight_packed", "weight_scale", "weight_global_scale"};
  if (!s.symmetric) return {"weight_packed", "weight_scale", "weight_shape", "weight_zero_point"};
  return {"weight_packed", "weight_scale", "weight_shape"};
}

std::vector<std::pair<DType, Shape>> ct_param_layouts(const CtScheme& s, int64_t rows, int64_t cols,
                                                      DType scale_dtype) {
  if (s.format == kFloat) {
    return {{DType::kF8E4M3, {rows, cols}}, {DType::kF32, s.strategy == "channel" ? Shape{rows, 1} : Shape{1}}};
  }
  if (s.format == kNvfp4) {
    return {{DType::kU8, {rows, cols / 2}}, {DType::kF8E4M3, {rows, cols / kNvfp4Block}}, {DType::kF32, {1}}};
  }
  const Shape scales = s.strategy == "group"     ? Shape{rows, cols / s.group_size}
                       : s.strategy == "channel" ? Shape{rows, 1}
                                                 : Shape{1};
  std::vector<std::pair<DType, Shape>> layouts = {
      {DType::kI32, {rows, packed_words(cols, s.num_bits)}}, {scale_dtype, scales}, {DType::kI64, {2}}};
  if (!s.symmetric) layouts.push_back({DType::kI32, {packed_words(rows, s.num_bits), scales.back()}});
  return layouts;
}

Tensor ct_param(const Quantized& q, const CtScheme& s, std::string_view name) {
  const int64_t rows = q.shape[0], cols = q.shape[1];
  auto part_of = [&](const char* part) -> const Tensor& {
    auto it = q.parts.find(part);
    if (it == q.parts.end()) throw invalid_input(std::string("missing part '") + part + "'", q.scheme);
    return it->second;
  };
  if (s.format == kFloat) return part_of(name == "weight" ? "codes" : "scales");
  if (s.format == kNvfp4) {
    if (name == "weight_packed") return Tensor(DType::kU8, Shape{rows, cols / 2}, part_of("codes").buffer());
    if (name == "weight_scale") return part_of("scales");
    Tensor global = Tensor::empty(DType::kF32, {1});
    global.mutable_data_as<float>()[0] = 1.0f / part_of("tensor_scale").data_as<float>()[0];
    return global;
  }
  const int bits = s.num_bits;
  if (name == "weight_scale") return s.strategy == "tensor" ? part_of("scales").reshaped(Shape{1}) : part_of("scales");
  if (name == "weight_zero_point") return pack_columns(part_of("zeros"), bits);
  if (name == "weight_shape") {
    Tensor shape = Tensor::empty(DType::kI64, {2});
    shape.mutable_data_as<int64_t>()[0] = rows;
    shape.mutable_data_as<int64_t>()[1] = cols;
    return shape;
  }
  const Tensor& codes = part_of("codes");
  const int64_t words = packed_words(cols, bits);
  const int64_t row_bytes = param_int(q, "padded_cols", 0, INT64_MAX / 64) * bits / 8;
  if (codes.nbytes() != static_cast<uint64_t>(rows * row_bytes)) throw invalid_input("codes have the wrong size", q.scheme);
  Tensor packed = Tensor::zeros(DType::kI32, {rows, words});
  for (int64_t r = 0; r < rows; ++r) {
    copy_bits(codes.data() + r * row_bytes, static_cast<uint64_t>(cols * bits), packed.mutable_data() + r * words * 4);
  }
  return packed;
}

std::vector<std::pair<std::string, Tensor>> ct_params(const Quantized& q, const CtScheme& s) {
  std::vector<std::pair<std::string, Tensor>> params;
  for (const std::string& name : ct_param_names(s)) params.emplace_back(name, ct_param(q, s, name));
  return params;
}

Quantized ct_quantized(const CtScheme& s, const std::map<std::string, Tensor>& params) {
  if (s.format == kPacked) return from_packed(s, params);
  if (s.format == kFloat) return from_float(s, params);
  if (s.format == kNvfp4) return from_nvfp4(s, params);
  throw invalid_input("format '" + s.format + "' is not supported (tensorkit reads " + kPacked + ", " + kFloat +
                      " and " + kNvfp4 + ")");
}

}  // namespace tk::quant
