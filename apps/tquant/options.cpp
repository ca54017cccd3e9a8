// Flags -> QuantOptions.
#include <charconv>

#include "tk/core/error.h"
#include "tquant.h"

namespace tk::tquant {

namespace {

// "0.1%" -> 0.001: a percentage, written with its sign, from 0% to 50%. A bare number
// is refused: "0.1" is read as 10% by some tools and as 0.1% by others.
double parse_percent(const std::string& text) {
  if (text.empty() || text.back() != '%') {
    throw usage_error("expected a percentage such as 0.1%, got '" + text + "'", "--outliers");
  }
  const std::string number = text.substr(0, text.size() - 1);
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) {
    throw usage_error("expected a percentage such as 0.1%, got '" + text + "'", "--outliers");
  }
  if (!(value >= 0 && value <= 50)) throw usage_error("must be between 0% and 50%", "--outliers");
  return value / 100;
}

}  // namespace

quant::QuantOptions options_from_args(const QuantArgs& a) {
  quant::QuantOptions o;
  if (a.group_size < 0) throw usage_error("group size must be positive", "--group-size");
  o.group_size = a.group_size;
  if (a.granularity == "tensor") {
    o.granularity = quant::Granularity::kTensor;
  } else if (a.granularity == "channel") {
    o.granularity = quant::Granularity::kChannel;
  } else if (a.granularity == "group") {
    o.granularity = quant::Granularity::kGroup;
  } else if (!a.granularity.empty()) {
    throw usage_error("expected tensor, channel or group, got '" + a.granularity + "'", "--granularity");
  }
  o.symmetric = !a.asym;
  if (!a.scale_dtype.empty()) {
    auto d = dtype_parse(a.scale_dtype);
    if (!d || (*d != DType::kF16 && *d != DType::kBF16 && *d != DType::kF32)) {
      throw usage_error("expected f16, bf16 or f32, got '" + a.scale_dtype + "'", "--scale-dtype");
    }
    o.scale_dtype = *d;
  }
  if (a.scale_rule == "floor") {
    o.scale_rule = quant::ScaleRule::kFloor;
  } else if (a.scale_rule == "ceil") {
    o.scale_rule = quant::ScaleRule::kCeil;
  } else if (a.scale_rule == "search") {
    o.scale_rule = quant::ScaleRule::kSearch;
  } else if (!a.scale_rule.empty()) {
    throw usage_error("expected floor, ceil or search, got '" + a.scale_rule + "'", "--scale-rule");
  }
  o.fast = a.fast;
  o.double_quant = a.double_quant;
  if (!a.outliers.empty()) o.outlier_fraction = parse_percent(a.outliers);
  // compressed-tensors stores what its decoders read: integer zero points (--asym), and
  // the reciprocal of nvfp4's tensor scale, exact for a power of two.
  if (a.format == kCompressedTensors) {
    o.integer_zero_point = true;
    o.power_of_two_tensor_scale = true;
  }
  return o;
}

}  // namespace tk::tquant
