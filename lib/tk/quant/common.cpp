// Layout, params, parts and scale storage shared by the scheme families.
#include <cstring>

#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/core/float_format.h"
#include "tk/core/float_kernels.h"
#include "tk/quant/quant_internal.h"

namespace tk::quant::detail {

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

Layout make_layout(const Shape& shape, int64_t group) {
  if (group <= 0) throw internal_error("quant layout: group size must be positive");
  Layout l;
  l.cols = shape.empty() ? 1 : shape.back();
  const auto numel = static_cast<int64_t>(shape_numel(shape));
  l.rows = l.cols == 0 ? 0 : numel / l.cols;
  l.group = group;
  l.padded_cols = round_up(l.cols, group);
  l.groups_per_row = l.padded_cols / group;
  return l;
}

PaddedInput pad_input(const float* x, const Layout& layout, const float* importance) {
  PaddedInput p;
  if (layout.cols == layout.padded_cols) {
    p.data = x;
  } else {
    p.storage.assign(static_cast<size_t>(layout.rows * layout.padded_cols), 0.0f);
    for (int64_t r = 0; r < layout.rows; ++r) {
      std::memcpy(p.storage.data() + r * layout.padded_cols, x + r * layout.cols,
                  static_cast<size_t>(layout.cols) * sizeof(float));
    }
    p.data = p.storage.data();
  }
  p.weights.assign(static_cast<size_t>(layout.padded_cols), 0.0f);
  for (int64_t c = 0; c < layout.cols; ++c) p.weights[c] = importance ? importance[c] : 1.0f;
  return p;
}

void unpad_output(const float* padded, const Layout& layout, float* out) {
  for (int64_t r = 0; r < layout.rows; ++r) {
    std::memcpy(out + r * layout.cols, padded + r * layout.padded_cols,
                static_cast<size_t>(layout.cols) * sizeof(float));
  }
}

std::string param(const Quantized& q, const std::string& key) {
  auto it = q.params.find(key);
  if (it == q.params.end()) throw invalid_input("quantized tensor lacks the parameter '" + key + "'", q.scheme);
  return it->second;
}

int64_t param_int(const Quantized& q, const std::string& key, int64_t lo, int64_t hi) {
  const std::string text = param(q, key);
  int64_t value = 0;
  size_t used = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < lo || value > hi) {
    throw invalid_input("bad parameter " + key + "=" + text + " (expected an integer in [" + std::to_string(lo) +
                            ", " + std::to_string(hi) + "])",
                        q.scheme);
  }
  return value;
}

const Tensor& part(const Quantized& q, const std::string& name, DType dtype, uint64_t numel) {
  auto it = q.parts.find(name);
  if (it == q.parts.end()) throw invalid_input("quantized tensor lacks the part '" + name + "'", q.scheme);
  const Tensor& t = it->second;
  if (t.dtype() != dtype || t.numel() != numel) {
    throw invalid_input("part '" + name + "' is " + dtype_name(t.dtype()) + " " + shape_to_string(t.shape()) +
                            ", expected " + dtype_name(dtype) + " of " + std::to_string(numel) + " elements",
                        q.scheme);
  }
  return t;
}

Tensor new_part(DType dtype, Shape shape) { return Tensor::zeros(dtype, std::move(shape)); }

Quantized new_quantized(std::string scheme, const Shape& shape, const Layout& layout) {
  Quantized q;
  q.scheme = std::move(scheme);
  q.shape = shape;
  q.params["group_size"] = std::to_string(layout.group);
  q.params["padded_cols"] = std::to_string(layout.padded_cols);
  return q;
}

void check_shape_param(const Quantized& q, const Layout& layout) {
  const int64_t padded = param_int(q, "padded_cols", 0, INT64_MAX / 64);
  if (padded != layout.padded_cols) {
    throw invalid_input("padded_cols=" + std::to_string(padded) + " does not match the shape " +
                            shape_to_string(q.shape) + " and group size " + std::to_string(layout.group),
                        q.scheme);
  }
}

// Scales saturate at the dtype's largest finite value: a huge tensor then clips
// instead of decoding to Inf or NaN.
uint16_t scale_to_f16(float value) { return tk::detail::f64_to_f16(value, true); }
static uint16_t scale_to_bf16(float value) { return tk::detail::f64_to_bf16(value, true); }

float round_to_scale_dtype(float value, DType dtype) {
  switch (dtype) {
    case DType::kF16: return f16_to_f32(scale_to_f16(value));
    case DType::kBF16: return bf16_to_f32(scale_to_bf16(value));
    default: return value;
  }
}

void store_scale(Tensor& part, uint64_t i, float value) {
  switch (part.dtype()) {
    case DType::kF16: part.mutable_data_as<uint16_t>()[i] = scale_to_f16(value); break;
    case DType::kBF16: part.mutable_data_as<uint16_t>()[i] = scale_to_bf16(value); break;
    case DType::kF32: part.mutable_data_as<float>()[i] = value; break;
    default: throw internal_error("store_scale: not a scale dtype");
  }
}

float load_scale(const Tensor& part, uint64_t i) {
  switch (part.dtype()) {
    case DType::kF16: return f16_to_f32(part.data_as<uint16_t>()[i]);
    case DType::kBF16: return bf16_to_f32(part.data_as<uint16_t>()[i]);
    case DType::kF32: return part.data_as<float>()[i];
    default: throw internal_error("load_scale: not a scale dtype");
  }
}

void load_scales(const Tensor& part, uint64_t first, uint64_t count, float* out) {
  const auto n = static_cast<size_t>(count);
  switch (part.dtype()) {
    case DType::kF16: return tk::detail::f16_to_f32_array(part.data_as<uint16_t>() + first, out, n);
    case DType::kBF16: return tk::detail::bf16_to_f32_array(part.data_as<uint16_t>() + first, out, n);
    case DType::kF32: std::memcpy(out, part.data_as<float>() + first, n * sizeof(float)); return;
    default: throw internal_error("load_scales: not a scale dtype");
  }
}

bool is_scale_dtype(DType dtype) { return dtype == DType::kF16 || dtype == DType::kBF16 || dtype == DType::kF32; }

DType parse_scale_dtype(const std::string& text) {
  auto d = dtype_parse(text);
  if (!d || !is_scale_dtype(*d)) throw invalid_input("bad scale dtype '" + text + "' (f16, bf16 or f32)");
  return *d;
}

}  // namespace tk::quant::detail
