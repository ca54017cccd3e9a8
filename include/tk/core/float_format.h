// Bit-level description of the narrow float formats (F16, BF16, F8_*, F4, F6_*) and the
// one reference codec that encodes and decodes all of them.
//
// The encoder follows the ml_dtypes reference package: the source significand, with its
// implicit leading one, is shifted to the target width and rounded to nearest, ties to
// even, in one step; the carry of the rounding flows into the exponent. E8M0 has no
// mantissa bits and no subnormals: every input, subnormal or not, rounds to the nearest
// power of two by value, and the tie 1.5 * 2^e rounds up to 2^(e+1). Everything below
// 1.5 * 2^-127 gives 0x00 (2^-127). That is what ml_dtypes 0.7 does (0.5 and 0.6 rounded
// inputs below 2^-126 as if 0x00 were a subnormal slot).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "tk/core/dtype.h"
#include "tk/core/hd.h"

namespace tk::detail {

struct FloatFormat {
  int bits;           // total width of a code
  int mantissa_bits;  // stored fraction bits
  int bias;           // exponent bias
  bool is_signed;     // has a sign bit (the top bit of the code)
  bool has_zero;      // false for E8M0, whose smallest code is 2^-127
  uint32_t max_code;  // code of the largest finite magnitude
  uint32_t nan_code;  // code that positive NaN encodes to (sign-flipped for negative NaN)
  uint32_t inf_code;  // code that +Inf and, without saturation, finite overflow encode to
  // Decoding: which magnitudes are NaN / Inf.
  bool ieee_specials;     // all-ones exponent is Inf (mantissa 0) or NaN (F16, BF16, E5M2)
  uint32_t nan_magnitude; // the one NaN magnitude otherwise (E4M3: 0x7f, E8M0: 0xff); 0 if none
  // FNUZ formats: no negative zero; the code with only the sign bit set is the one NaN.
  // Codes 0 and nan_code (which is that code) are unsigned: encoding never flips their
  // sign bit, so -0 gives +0 and -NaN, -Inf and negative overflow give nan_code.
  bool fnuz;
};

// F16's format, for code that runs on a GPU as well (float_format(DType::kF16) is the
// same): a function, since device code cannot take the address of a host constant.
TK_HD constexpr FloatFormat f16_format() { return {16, 10, 15, true, true, 0x7bff, 0x7e00, 0x7c00, true, 0, false}; }

// Apply the sign bit `sign` (0 or the top bit) to an unsigned-magnitude result `code`,
// except where an FNUZ format has no signed variant (zero and the NaN).
TK_HD constexpr uint32_t float_format_apply_sign(const FloatFormat& f, uint32_t code, uint32_t sign) {
  return (f.fnuz && (code == 0 || code == f.nan_code)) ? code : code ^ sign;
}

// The format of a narrow float dtype. Throws kInternal for other dtypes.
const FloatFormat& float_format(DType dtype);

// Decode a code (low `bits` bits of `code`) exactly.
double float_format_decode(const FloatFormat& format, uint32_t code);

// Exact f32 values of every code of an 8-bit-or-narrower float dtype, indexed by code
// (256 entries; bits above the code width are ignored).
const float* minifloat_table(DType dtype);

// Encode an f64 into F16 / BF16 with one rounding. NaN: F16 keeps the top payload bits and
// sets the quiet bit (as F16C hardware does for f32); BF16 gives the canonical 0x7fc0.
uint16_t f64_to_f16(double value, bool saturate);
uint16_t f64_to_bf16(double value, bool saturate);

template <typename T> struct SourceFloatBits;
template <> struct SourceFloatBits<float> {
  using Bits = uint32_t;
  static constexpr int kMantissaBits = 23;
  static constexpr int kBias = 127;
  static constexpr Bits kExponentMask = 0x7f800000u;
  TK_HD static Bits of(float v) { return float_bits(v); }
};
template <> struct SourceFloatBits<double> {
  using Bits = uint64_t;
  static constexpr int kMantissaBits = 52;
  static constexpr int kBias = 1023;
  static constexpr Bits kExponentMask = 0x7ff0000000000000ull;
  TK_HD static Bits of(double v) { return double_bits(v); }
};

// Round `m` right by `shift` bits (0 <= shift < 64) to nearest, ties to even.
template <typename Bits> TK_HD constexpr Bits round_shift_right_even(Bits m, int shift) {
  if (shift == 0) return m;
  Bits q = m >> shift;
  Bits rest = m & ((Bits{1} << shift) - 1);
  Bits half = Bits{1} << (shift - 1);
  return q + ((rest > half || (rest == half && (q & 1))) ? 1 : 0);
}

// Encode an f32 or f64 value. Special cases, in this order: NaN -> nan_code; for an
// unsigned format, negative values, zero and -Inf -> NaN (saturate: the smallest code);
// Inf -> inf_code (saturate without an Inf code: max_code); zero -> signed zero; then
// round, and magnitudes above max_code -> inf_code (saturate: max_code). The sign is
// applied by flipping the top bit, as ml_dtypes does (FNUZ: not for zero and NaN).
// The GPU paths of the float-format schemes run this same source (TK_HD).
template <typename Src> TK_HD uint32_t float_format_encode(const FloatFormat& f, Src value, bool saturate) {
  using T = SourceFloatBits<Src>;
  using Bits = typename T::Bits;
  constexpr int kSrcBits = static_cast<int>(sizeof(Bits) * 8);
  const Bits bits = T::of(value);
  const bool negative = (bits >> (kSrcBits - 1)) != 0;
  const Bits magnitude = bits & ~(Bits{1} << (kSrcBits - 1));
  const uint32_t sign = (f.is_signed && negative) ? (1u << (f.bits - 1)) : 0u;

  if (magnitude > T::kExponentMask) return float_format_apply_sign(f, f.nan_code, sign);
  if (!f.is_signed && (negative || magnitude == 0)) return saturate ? 0u : f.nan_code;
  if (magnitude == T::kExponentMask) {
    const bool has_inf = f.ieee_specials;
    return float_format_apply_sign(f, (saturate && !has_inf) ? f.max_code : f.inf_code, sign);
  }
  if (magnitude == 0) return float_format_apply_sign(f, 0, sign);

  int exponent;
  Bits significand;  // implicit one at bit kMantissaBits
  const Bits biased = magnitude >> T::kMantissaBits;
  const Bits fraction = magnitude & ((Bits{1} << T::kMantissaBits) - 1);
  if (biased != 0) {
    exponent = static_cast<int>(biased) - T::kBias;
    significand = fraction | (Bits{1} << T::kMantissaBits);
  } else {
    int normalize = leading_zeros(fraction) - (kSrcBits - 1 - T::kMantissaBits);
    significand = fraction << normalize;
    exponent = 1 - T::kBias - normalize;
  }
  if (!f.has_zero) {  // E8M0: up iff the significand is at least 1.5, clamped at 2^-127
    const bool up = ((significand >> (T::kMantissaBits - 1)) & 1) != 0;
    const int biased_code = exponent + f.bias + (up ? 1 : 0);
    const int code = biased_code > 0 ? biased_code : 0;
    if (code > static_cast<int>(f.max_code))
      return float_format_apply_sign(f, saturate ? f.max_code : f.inf_code, sign);
    return static_cast<uint32_t>(code);
  }
  const int base = exponent + f.bias - 1;  // target biased exponent minus one
  int shift = T::kMantissaBits - f.mantissa_bits + (base < 0 ? -base : 0);
  if (shift > T::kMantissaBits + 2) shift = T::kMantissaBits + 2;  // beyond this everything rounds to 0
  const Bits rounded = round_shift_right_even(significand, shift);
  const uint64_t code = (static_cast<uint64_t>(base > 0 ? base : 0) << f.mantissa_bits) + rounded;
  if (code > f.max_code) return float_format_apply_sign(f, saturate ? f.max_code : f.inf_code, sign);
  return float_format_apply_sign(f, static_cast<uint32_t>(code), sign);
}

}  // namespace tk::detail
