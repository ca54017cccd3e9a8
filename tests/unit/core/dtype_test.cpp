// The dtype table, name lookup, storage sizes and the scalar conversion rules that the
// fixtures do not cover (saturation, deliberate differences from the reference).
#include "tk/core/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "tk/core/error.h"

namespace tk {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(DTypeTable, NamesWidthsAndClasses) {
  struct Row {
    DType dtype;
    const char* name;
    const char* short_name;
    int bits;
    DTypeClass cls;
    int alignment;
  };
  const Row rows[] = {
      {DType::kBool, "BOOL", "bool", 8, DTypeClass::kBool, 1},
      {DType::kU8, "U8", "u8", 8, DTypeClass::kUnsigned, 1},
      {DType::kI8, "I8", "i8", 8, DTypeClass::kSigned, 1},
      {DType::kU16, "U16", "u16", 16, DTypeClass::kUnsigned, 2},
      {DType::kI16, "I16", "i16", 16, DTypeClass::kSigned, 2},
      {DType::kU32, "U32", "u32", 32, DTypeClass::kUnsigned, 4},
      {DType::kI32, "I32", "i32", 32, DTypeClass::kSigned, 4},
      {DType::kU64, "U64", "u64", 64, DTypeClass::kUnsigned, 8},
      {DType::kI64, "I64", "i64", 64, DTypeClass::kSigned, 8},
      {DType::kF16, "F16", "f16", 16, DTypeClass::kFloat, 2},
      {DType::kBF16, "BF16", "bf16", 16, DTypeClass::kFloat, 2},
      {DType::kF32, "F32", "f32", 32, DTypeClass::kFloat, 4},
      {DType::kF64, "F64", "f64", 64, DTypeClass::kFloat, 8},
      {DType::kF8E4M3, "F8_E4M3", "f8_e4m3", 8, DTypeClass::kFloat, 1},
      {DType::kF8E5M2, "F8_E5M2", "f8_e5m2", 8, DTypeClass::kFloat, 1},
      {DType::kF8E8M0, "F8_E8M0", "f8_e8m0", 8, DTypeClass::kFloat, 1},
      {DType::kF4, "F4", "f4", 4, DTypeClass::kFloat, 1},
      {DType::kF6E2M3, "F6_E2M3", "f6_e2m3", 6, DTypeClass::kFloat, 1},
      {DType::kF6E3M2, "F6_E3M2", "f6_e3m2", 6, DTypeClass::kFloat, 1},
      {DType::kC64, "C64", "c64", 64, DTypeClass::kComplex, 4},
      {DType::kF8E4M3FNUZ, "F8_E4M3FNUZ", "f8_e4m3fnuz", 8, DTypeClass::kFloat, 1},
      {DType::kF8E5M2FNUZ, "F8_E5M2FNUZ", "f8_e5m2fnuz", 8, DTypeClass::kFloat, 1},
  };
  ASSERT_EQ(std::size(rows), static_cast<size_t>(DType::kCount));
  for (const Row& r : rows) {
    const DTypeTraits& t = dtype_traits(r.dtype);
    EXPECT_EQ(t.dtype, r.dtype);
    EXPECT_STREQ(t.name, r.name);
    EXPECT_STREQ(dtype_name(r.dtype), r.name);
    EXPECT_STREQ(t.short_name, r.short_name);
    EXPECT_EQ(t.bits, r.bits) << r.name;
    EXPECT_EQ(dtype_bits(r.dtype), r.bits);
    EXPECT_EQ(t.cls, r.cls) << r.name;
    EXPECT_EQ(t.alignment, r.alignment) << r.name;
    EXPECT_EQ(dtype_is_float(r.dtype), r.cls == DTypeClass::kFloat);
    EXPECT_EQ(dtype_from_safetensors_name(r.name), r.dtype);
    EXPECT_EQ(dtype_parse(r.name), r.dtype);
    EXPECT_EQ(dtype_parse(r.short_name), r.dtype);
  }
}

TEST(DTypeTable, InvalidEnumValueThrowsInternal) {
  try {
    dtype_traits(DType::kCount);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  }
}

TEST(DTypeNames, SafetensorsLookupIsExact) {
  EXPECT_EQ(dtype_from_safetensors_name("BF16"), DType::kBF16);
  EXPECT_EQ(dtype_from_safetensors_name("bf16"), std::nullopt);
  EXPECT_EQ(dtype_from_safetensors_name("F8_E4M3 "), std::nullopt);
  EXPECT_EQ(dtype_from_safetensors_name(""), std::nullopt);
  EXPECT_EQ(dtype_from_safetensors_name("float32"), std::nullopt);
}

TEST(DTypeNames, ParseAcceptsAliasesCaseInsensitively) {
  const std::pair<const char*, DType> cases[] = {
      {"float32", DType::kF32},    {"FLOAT", DType::kF32},         {"Float32", DType::kF32},
      {"half", DType::kF16},       {"float16", DType::kF16},       {"fp16", DType::kF16},
      {"bfloat16", DType::kBF16},  {"BFloat16", DType::kBF16},     {"double", DType::kF64},
      {"float64", DType::kF64},    {"fp8", DType::kF8E4M3},        {"e4m3", DType::kF8E4M3},
      {"float8_e4m3fn", DType::kF8E4M3}, {"F8-E4M3", DType::kF8E4M3}, {"e5m2", DType::kF8E5M2},
      {"fp8_e5m2", DType::kF8E5M2}, {"e8m0", DType::kF8E8M0},      {"float8_e8m0fnu", DType::kF8E8M0},
      {"fp4", DType::kF4},         {"e2m1", DType::kF4},           {"float4_e2m1fn", DType::kF4},
      {"fp6_e2m3", DType::kF6E2M3}, {"e2m3", DType::kF6E2M3},      {"fp6_e3m2", DType::kF6E3M2},
      {"E3M2", DType::kF6E3M2},    {"int8", DType::kI8},           {"uint8", DType::kU8},
      {"int16", DType::kI16},      {"uint16", DType::kU16},        {"int32", DType::kI32},
      {"uint32", DType::kU32},     {"int64", DType::kI64},         {"uint64", DType::kU64},
      {"complex64", DType::kC64},  {"boolean", DType::kBool},      {"Bool", DType::kBool},
      {"e4m3fnuz", DType::kF8E4M3FNUZ}, {"float8_e4m3fnuz", DType::kF8E4M3FNUZ},
      {"F8-E4M3FNUZ", DType::kF8E4M3FNUZ}, {"e5m2fnuz", DType::kF8E5M2FNUZ},
      {"float8_e5m2fnuz", DType::kF8E5M2FNUZ}, {"E5M2FNUZ", DType::kF8E5M2FNUZ},
  };
  for (const auto& [text, dtype] : cases) EXPECT_EQ(dtype_parse(text), dtype) << text;
}

TEST(DTypeNames, ParseRejectsUnknownSpellings) {
  for (const char* text : {"", "f", "fp6", "float8", "f32 ", " f32", "int128", "complex128", "e4m3x", "bf"})
    EXPECT_EQ(dtype_parse(text), std::nullopt) << "'" << text << "'";
}

TEST(DTypeStorage, BytesPerCount) {
  EXPECT_EQ(dtype_storage_bytes(DType::kF32, 0), 0u);
  EXPECT_EQ(dtype_storage_bytes(DType::kF32, 3), 12u);
  EXPECT_EQ(dtype_storage_bytes(DType::kC64, 3), 24u);
  EXPECT_EQ(dtype_storage_bytes(DType::kBool, 5), 5u);
  EXPECT_EQ(dtype_storage_bytes(DType::kF4, 2), 1u);
  EXPECT_EQ(dtype_storage_bytes(DType::kF4, 6), 3u);
  EXPECT_EQ(dtype_storage_bytes(DType::kF6E2M3, 4), 3u);
  EXPECT_EQ(dtype_storage_bytes(DType::kF6E3M2, 8), 6u);
  EXPECT_EQ(dtype_storage_bytes(DType::kU64, uint64_t{1} << 60), uint64_t{1} << 63);
}

void expect_invalid_input(DType dtype, uint64_t count, const std::string& message) {
  try {
    dtype_storage_bytes(dtype, count);
    FAIL() << "no exception for " << count << " x " << dtype_name(dtype);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(DTypeStorage, SubByteCountsMustFillWholeBytes) {
  expect_invalid_input(DType::kF4, 3, "3 elements of F4 do not fill a whole number of bytes");
  expect_invalid_input(DType::kF6E2M3, 2, "2 elements of F6_E2M3 do not fill a whole number of bytes");
  expect_invalid_input(DType::kF6E3M2, 5, "5 elements of F6_E3M2 do not fill a whole number of bytes");
}

TEST(DTypeStorage, OverflowThrows) {
  expect_invalid_input(DType::kU64, uint64_t{1} << 61, "storage size of 2305843009213693952 elements of U64 overflows");
  expect_invalid_input(DType::kF4, UINT64_MAX / 2, "storage size of 9223372036854775807 elements of F4 overflows");
  EXPECT_EQ(dtype_storage_bytes(DType::kF4, UINT64_MAX / 4 - 1), UINT64_MAX / 8);
  expect_invalid_input(DType::kF32, UINT64_MAX, "storage size of 18446744073709551615 elements of F32 overflows");
  EXPECT_EQ(dtype_storage_bytes(DType::kU8, UINT64_MAX), UINT64_MAX);
}

// ---- scalar conversions: hand-picked values and the saturating mode ----

uint8_t enc(DType d, double v, bool saturate = false) { return minifloat_from_f64(d, v, saturate); }

TEST(MinifloatScalar, RangeEndsAndSpecials) {
  EXPECT_EQ(minifloat_to_f32(DType::kF8E4M3, 0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(minifloat_to_f32(DType::kF8E4M3, 0x7f)));
  EXPECT_TRUE(std::isnan(minifloat_to_f32(DType::kF8E4M3, 0xff)));
  EXPECT_EQ(minifloat_to_f32(DType::kF8E4M3, 0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(minifloat_to_f32(DType::kF8E5M2, 0x7b), 57344.0f);
  EXPECT_EQ(minifloat_to_f32(DType::kF8E5M2, 0x7c), std::numeric_limits<float>::infinity());
  EXPECT_EQ(minifloat_to_f32(DType::kF8E5M2, 0xfc), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(minifloat_to_f32(DType::kF8E8M0, 0x00), std::ldexp(1.0f, -127));
  EXPECT_EQ(minifloat_to_f32(DType::kF8E8M0, 0x7f), 1.0f);
  EXPECT_EQ(minifloat_to_f32(DType::kF8E8M0, 0xfe), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(minifloat_to_f32(DType::kF8E8M0, 0xff)));
  EXPECT_EQ(minifloat_to_f32(DType::kF4, 0x7), 6.0f);
  EXPECT_EQ(minifloat_to_f32(DType::kF4, 0xf), -6.0f);
  EXPECT_EQ(minifloat_to_f32(DType::kF4, 0x1), 0.5f);
  EXPECT_EQ(minifloat_to_f32(DType::kF6E2M3, 0x1f), 7.5f);
  EXPECT_EQ(minifloat_to_f32(DType::kF6E3M2, 0x1f), 28.0f);
  EXPECT_TRUE(std::signbit(minifloat_to_f32(DType::kF6E3M2, 0x20)));
}

TEST(MinifloatScalar, OverflowAndSpecialsWithoutSaturation) {
  EXPECT_EQ(enc(DType::kF8E4M3, 1e6), 0x7f);  // no Inf: NaN
  EXPECT_EQ(enc(DType::kF8E4M3, -1e6), 0xff);
  EXPECT_EQ(enc(DType::kF8E4M3, kInf), 0x7f);
  EXPECT_EQ(enc(DType::kF8E4M3, 464.0), 0x7e);  // tie between 448 and 480: even, 448
  EXPECT_EQ(enc(DType::kF8E4M3, 464.0001), 0x7f);
  EXPECT_EQ(enc(DType::kF8E5M2, 61440.0), 0x7c);  // tie: rounds up to Inf
  EXPECT_EQ(enc(DType::kF8E5M2, -kInf), 0xfc);
  EXPECT_EQ(enc(DType::kF8E5M2, kNaN), 0x7e);
  EXPECT_EQ(enc(DType::kF4, 100.0), 0x7);  // types without Inf/NaN clamp
  EXPECT_EQ(enc(DType::kF4, -kInf), 0xf);
  EXPECT_EQ(enc(DType::kF4, kNaN), 0x8);  // ml_dtypes: NaN -> the code of -0
  EXPECT_EQ(enc(DType::kF6E2M3, -kNaN), 0x00);
  EXPECT_EQ(enc(DType::kF8E4M3, -0.0), 0x80);
  EXPECT_EQ(enc(DType::kF4, -0.0), 0x8);
}

TEST(MinifloatScalar, FnuzHaveOneNaNAndNoNegativeZero) {
  for (DType d : {DType::kF8E4M3FNUZ, DType::kF8E5M2FNUZ}) {
    SCOPED_TRACE(dtype_name(d));
    EXPECT_TRUE(std::isnan(minifloat_to_f32(d, 0x80)));
    EXPECT_EQ(std::bit_cast<uint32_t>(minifloat_to_f32(d, 0x00)), 0u);
    EXPECT_EQ(enc(d, 1.0), 0x40);
    EXPECT_EQ(enc(d, -1.0), 0xc0);
    EXPECT_EQ(enc(d, -0.0), 0x00);
    EXPECT_EQ(enc(d, -1e-30), 0x00);  // rounds to zero: +0, not the NaN code
    EXPECT_EQ(enc(d, kNaN), 0x80);
    EXPECT_EQ(enc(d, -kNaN), 0x80);
    EXPECT_EQ(enc(d, kInf), 0x80);  // no Inf: NaN, unsigned
    EXPECT_EQ(enc(d, -kInf), 0x80);
    EXPECT_EQ(enc(d, 1e6), 0x80);
    EXPECT_EQ(enc(d, -1e6), 0x80);
    EXPECT_EQ(enc(d, 1e6, true), 0x7f);
    EXPECT_EQ(enc(d, -1e6, true), 0xff);
    EXPECT_EQ(enc(d, kInf, true), 0x7f);
    EXPECT_EQ(enc(d, -kInf, true), 0xff);
    EXPECT_EQ(enc(d, -kNaN, true), 0x80);
    EXPECT_EQ(enc(d, -0.0, true), 0x00);
  }
  EXPECT_EQ(minifloat_to_f32(DType::kF8E4M3FNUZ, 0x7f), 240.0f);
  EXPECT_EQ(minifloat_to_f32(DType::kF8E4M3FNUZ, 0xff), -240.0f);
  EXPECT_EQ(minifloat_to_f32(DType::kF8E4M3FNUZ, 0x01), std::ldexp(1.0f, -10));
  EXPECT_EQ(enc(DType::kF8E4M3FNUZ, 248.0), 0x80);  // tie between 240 and 256: even, overflow
  EXPECT_EQ(enc(DType::kF8E4M3FNUZ, 247.9), 0x7f);
  EXPECT_EQ(minifloat_to_f32(DType::kF8E5M2FNUZ, 0x7f), 57344.0f);
  EXPECT_EQ(minifloat_to_f32(DType::kF8E5M2FNUZ, 0x01), std::ldexp(1.0f, -17));
  EXPECT_EQ(enc(DType::kF8E5M2FNUZ, -std::ldexp(1.0, -17)), 0x81);
  EXPECT_EQ(enc(DType::kF8E5M2FNUZ, -std::ldexp(1.0, -18)), 0x00);  // tie to even: zero
}

TEST(MinifloatScalar, E8M0RulesFollowTheReference) {
  EXPECT_EQ(enc(DType::kF8E8M0, 1.0), 0x7f);
  EXPECT_EQ(enc(DType::kF8E8M0, 1.5), 0x80);  // ties round up
  EXPECT_EQ(enc(DType::kF8E8M0, 3.0), 0x81);
  EXPECT_EQ(enc(DType::kF8E8M0, 1.4999), 0x7f);
  EXPECT_EQ(enc(DType::kF8E8M0, 0.0), 0xff);  // no zero
  EXPECT_EQ(enc(DType::kF8E8M0, -0.0), 0xff);
  EXPECT_EQ(enc(DType::kF8E8M0, -1.0), 0xff);  // unsigned
  EXPECT_EQ(enc(DType::kF8E8M0, kInf), 0xff);
  EXPECT_EQ(enc(DType::kF8E8M0, std::ldexp(1.0, -127)), 0x00);
  // Below 2^-126 the rule is the same: nearest power of two by value, 1.5 * 2^-127 ties up.
  EXPECT_EQ(enc(DType::kF8E8M0, std::ldexp(1.4, -127)), 0x00);
  EXPECT_EQ(enc(DType::kF8E8M0, std::ldexp(1.5, -127)), 0x01);
  EXPECT_EQ(enc(DType::kF8E8M0, std::ldexp(1.0, -126)), 0x01);
  EXPECT_EQ(enc(DType::kF8E8M0, std::ldexp(1.5, -128)), 0x00);
  EXPECT_EQ(enc(DType::kF8E8M0, std::ldexp(1.0, -140)), 0x00);
  EXPECT_EQ(enc(DType::kF8E8M0, 5e-324), 0x00);
  // The f32 subnormals either side of the tie (bits 0x5fffff and 0x600000).
  EXPECT_EQ(minifloat_from_f64(DType::kF8E8M0, std::bit_cast<float>(0x005fffffu), false), 0x00);
  EXPECT_EQ(minifloat_from_f64(DType::kF8E8M0, std::bit_cast<float>(0x00600000u), false), 0x01);
  EXPECT_EQ(enc(DType::kF8E8M0, std::ldexp(1.4999, 127)), 0xfe);
  EXPECT_EQ(enc(DType::kF8E8M0, std::ldexp(1.5, 127)), 0xff);  // rounds past the top: NaN
  EXPECT_EQ(enc(DType::kF8E8M0, std::ldexp(1.0, 128)), 0xff);
  EXPECT_EQ(enc(DType::kF8E8M0, 5.7e38), 0xff);
}

TEST(MinifloatScalar, SaturateClampsFiniteOverflow) {
  EXPECT_EQ(enc(DType::kF8E4M3, 1e6, true), 0x7e);
  EXPECT_EQ(enc(DType::kF8E4M3, -1e6, true), 0xfe);
  EXPECT_EQ(enc(DType::kF8E4M3, 470.0, true), 0x7e);
  EXPECT_EQ(enc(DType::kF8E4M3, kInf, true), 0x7e);  // no Inf code: max
  EXPECT_EQ(enc(DType::kF8E4M3, kNaN, true), 0x7f);
  EXPECT_EQ(enc(DType::kF8E5M2, 1e6, true), 0x7b);
  EXPECT_EQ(enc(DType::kF8E5M2, -1e6, true), 0xfb);
  EXPECT_EQ(enc(DType::kF8E5M2, kInf, true), 0x7c);  // Inf stays Inf
  EXPECT_EQ(enc(DType::kF8E8M0, 1e300, true), 0xfe);
  EXPECT_EQ(enc(DType::kF8E8M0, kInf, true), 0xfe);
  EXPECT_EQ(enc(DType::kF8E8M0, 0.0, true), 0x00);  // smallest scale
  EXPECT_EQ(enc(DType::kF8E8M0, -3.0, true), 0x00);
  EXPECT_EQ(enc(DType::kF8E8M0, kNaN, true), 0xff);
  EXPECT_EQ(enc(DType::kF4, 1e6, true), 0x7);
}

TEST(MinifloatScalar, RejectsWideTypes) {
  try {
    minifloat_from_f64(DType::kF16, 1.0, false);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  }
  EXPECT_THROW(minifloat_to_f32(DType::kF32, 0), Error);
}

TEST(HalfScalar, KnownValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // tie above max rounds to Inf
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie to even
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::quiet_NaN()), 0xffc0);
  EXPECT_EQ(bf16_to_f32(0xc000), -2.0f);
}

}  // namespace
}  // namespace tk
