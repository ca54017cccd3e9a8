// The narrow float formats and the scalar reference conversions declared in dtype.h.
#include "tk/core/float_format.h"

#include <array>
#include <cmath>
#include <limits>

#include "tk/core/error.h"

namespace tk::detail {
namespace {

//                                bits man bias signed zero  max     nan     inf   ieee  nan_mag fnuz
constexpr FloatFormat kF16     = f16_format();
constexpr FloatFormat kBF16    = {16, 7,  127, true, true, 0x7f7f, 0x7fc0, 0x7f80, true, 0, false};
constexpr FloatFormat kE4M3    = {8,  3,  7,   true, true, 0x7e,   0x7f,   0x7f,  false, 0x7f, false};
constexpr FloatFormat kE5M2    = {8,  2,  15,  true, true, 0x7b,   0x7e,   0x7c,  true,  0, false};
constexpr FloatFormat kE8M0    = {8,  0,  127, false, false, 0xfe, 0xff,   0xff,  false, 0xff, false};
// FNUZ: no Inf and no -0; 0x80 is the one NaN, and Inf and overflow encode to it.
constexpr FloatFormat kE4M3FNUZ = {8, 3,  8,   true, true, 0x7f,   0x80,   0x80,  false, 0, true};
constexpr FloatFormat kE5M2FNUZ = {8, 2,  16,  true, true, 0x7f,   0x80,   0x80,  false, 0, true};
// Types without Inf or NaN: ml_dtypes encodes Inf and overflow as +-max and NaN as the
// code of -0 (positive NaN) or +0 (negative NaN).
constexpr FloatFormat kE2M1    = {4,  1,  1,   true, true, 0x7,    0x8,    0x7,   false, 0, false};
constexpr FloatFormat kE2M3    = {6,  3,  1,   true, true, 0x1f,   0x20,   0x1f,  false, 0, false};
constexpr FloatFormat kE3M2    = {6,  2,  3,   true, true, 0x1f,   0x20,   0x1f,  false, 0, false};

const FloatFormat* find_format(DType dtype) {
  switch (dtype) {
    case DType::kF16: return &kF16;
    case DType::kBF16: return &kBF16;
    case DType::kF8E4M3: return &kE4M3;
    case DType::kF8E5M2: return &kE5M2;
    case DType::kF8E8M0: return &kE8M0;
    case DType::kF8E4M3FNUZ: return &kE4M3FNUZ;
    case DType::kF8E5M2FNUZ: return &kE5M2FNUZ;
    case DType::kF4: return &kE2M1;
    case DType::kF6E2M3: return &kE2M3;
    case DType::kF6E3M2: return &kE3M2;
    default: return nullptr;
  }
}

using Table = std::array<float, 256>;

Table build_table(const FloatFormat& format) {
  Table table;
  for (uint32_t code = 0; code < 256; ++code)
    table[code] = static_cast<float>(float_format_decode(format, code));
  return table;
}

}  // namespace

const FloatFormat& float_format(DType dtype) {
  const FloatFormat* format = find_format(dtype);
  if (!format) throw internal_error("dtype " + std::string(dtype_name(dtype)) + " is not a narrow float");
  return *format;
}

double float_format_decode(const FloatFormat& f, uint32_t code) {
  code &= (1u << f.bits) - 1;
  const uint32_t sign_bit = f.is_signed ? 1u << (f.bits - 1) : 0u;
  const bool negative = (code & sign_bit) != 0;
  const uint32_t magnitude = code & ~sign_bit;
  const int exponent_bits = f.bits - (f.is_signed ? 1 : 0) - f.mantissa_bits;
  const uint32_t exponent = magnitude >> f.mantissa_bits;
  const uint32_t fraction = magnitude & ((1u << f.mantissa_bits) - 1);
  const double sign = negative ? -1.0 : 1.0;
  if (f.fnuz && code == f.nan_code) return std::numeric_limits<double>::quiet_NaN();
  if (f.ieee_specials && exponent == (1u << exponent_bits) - 1)
    return fraction ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign)
                    : sign * std::numeric_limits<double>::infinity();
  if (f.nan_magnitude != 0 && magnitude == f.nan_magnitude)
    return std::copysign(std::numeric_limits<double>::quiet_NaN(), sign);
  double value;
  if (!f.has_zero)  // E8M0: every code is a normal power of two
    value = std::ldexp(1.0, static_cast<int>(exponent) - f.bias);
  else if (exponent == 0)
    value = std::ldexp(static_cast<double>(fraction), 1 - f.bias - f.mantissa_bits);
  else
    value = std::ldexp(static_cast<double>((1u << f.mantissa_bits) | fraction),
                       static_cast<int>(exponent) - f.bias - f.mantissa_bits);
  return sign * value;
}

const float* minifloat_table(DType dtype) {
  static const Table e4m3 = build_table(kE4M3);
  static const Table e5m2 = build_table(kE5M2);
  static const Table e8m0 = build_table(kE8M0);
  static const Table e4m3fnuz = build_table(kE4M3FNUZ);
  static const Table e5m2fnuz = build_table(kE5M2FNUZ);
  static const Table e2m1 = build_table(kE2M1);
  static const Table e2m3 = build_table(kE2M3);
  static const Table e3m2 = build_table(kE3M2);
  switch (dtype) {
    case DType::kF8E4M3: return e4m3.data();
    case DType::kF8E5M2: return e5m2.data();
    case DType::kF8E8M0: return e8m0.data();
    case DType::kF8E4M3FNUZ: return e4m3fnuz.data();
    case DType::kF8E5M2FNUZ: return e5m2fnuz.data();
    case DType::kF4: return e2m1.data();
    case DType::kF6E2M3: return e2m3.data();
    case DType::kF6E3M2: return e3m2.data();
    default: throw internal_error("dtype " + std::string(dtype_name(dtype)) + " is not a minifloat");
  }
}

uint16_t f64_to_f16(double value, bool saturate) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  if ((bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull)  // keep the payload's top bits
    return static_cast<uint16_t>(((bits >> 48) & 0x8000) | 0x7e00 | ((bits >> 42) & 0x3ff));
  return static_cast<uint16_t>(float_format_encode(kF16, value, saturate));
}

uint16_t f64_to_bf16(double value, bool saturate) {
  return static_cast<uint16_t>(float_format_encode(kBF16, value, saturate));
}

}  // namespace tk::detail

namespace tk {

float f16_to_f32(uint16_t bits) {
  if ((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0)  // NaN: quiet it, keep the payload
    return std::bit_cast<float>((static_cast<uint32_t>(bits & 0x8000) << 16) | 0x7fc00000u |
                                (static_cast<uint32_t>(bits & 0x3ff) << 13));
  return static_cast<float>(detail::float_format_decode(detail::kF16, bits));
}

uint16_t f32_to_f16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)  // NaN: quiet it, keep the payload's top bits
    return static_cast<uint16_t>(((bits >> 16) & 0x8000) | 0x7e00 | ((bits >> 13) & 0x3ff));
  return static_cast<uint16_t>(detail::float_format_encode(detail::kF16, value, false));
}

float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t f32_to_bf16(float value) {
  return static_cast<uint16_t>(detail::float_format_encode(detail::kBF16, value, false));
}

float minifloat_to_f32(DType dtype, uint8_t code) { return detail::minifloat_table(dtype)[code]; }

uint8_t minifloat_from_f64(DType dtype, double value, bool saturate) {
  if (dtype == DType::kF16 || dtype == DType::kBF16)
    throw internal_error("minifloat_from_f64 called for " + std::string(dtype_name(dtype)));
  return static_cast<uint8_t>(detail::float_format_encode(detail::float_format(dtype), value, saturate));
}

}  // namespace tk
