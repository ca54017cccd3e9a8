// The dtype table, name lookup and storage sizes.
#include "tk/core/dtype.h"

#include <array>
#include <string>

#include "tk/core/error.h"

namespace tk {
namespace {

using C = DTypeClass;

constexpr std::array<DTypeTraits, static_cast<size_t>(DType::kCount)> kTable = {{
    {DType::kBool, "BOOL", "bool", 8, C::kBool, 1},
    {DType::kU8, "U8", "u8", 8, C::kUnsigned, 1},
    {DType::kI8, "I8", "i8", 8, C::kSigned, 1},
    {DType::kU16, "U16", "u16", 16, C::kUnsigned, 2},
    {DType::kI16, "I16", "i16", 16, C::kSigned, 2},
    {DType::kU32, "U32", "u32", 32, C::kUnsigned, 4},
    {DType::kI32, "I32", "i32", 32, C::kSigned, 4},
    {DType::kU64, "U64", "u64", 64, C::kUnsigned, 8},
    {DType::kI64, "I64", "i64", 64, C::kSigned, 8},
    {DType::kF16, "F16", "f16", 16, C::kFloat, 2},
    {DType::kBF16, "BF16", "bf16", 16, C::kFloat, 2},
    {DType::kF32, "F32", "f32", 32, C::kFloat, 4},
    {DType::kF64, "F64", "f64", 64, C::kFloat, 8},
    {DType::kF8E4M3, "F8_E4M3", "f8_e4m3", 8, C::kFloat, 1},
    {DType::kF8E5M2, "F8_E5M2", "f8_e5m2", 8, C::kFloat, 1},
    {DType::kF8E8M0, "F8_E8M0", "f8_e8m0", 8, C::kFloat, 1},
    {DType::kF4, "F4", "f4", 4, C::kFloat, 1},
    {DType::kF6E2M3, "F6_E2M3", "f6_e2m3", 6, C::kFloat, 1},
    {DType::kF6E3M2, "F6_E3M2", "f6_e3m2", 6, C::kFloat, 1},
    {DType::kC64, "C64", "c64", 64, C::kComplex, 4},
    {DType::kF8E4M3FNUZ, "F8_E4M3FNUZ", "f8_e4m3fnuz", 8, C::kFloat, 1},
    {DType::kF8E5M2FNUZ, "F8_E5M2FNUZ", "f8_e5m2fnuz", 8, C::kFloat, 1},
}};

constexpr bool table_matches_enum() {
  for (size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<size_t>(kTable[i].dtype) != i) return false;
  return true;
}
static_assert(table_matches_enum(), "dtype table out of enum order");

struct Alias {
  const char* spelling;  // lower case, '_' as separator
  DType dtype;
};

// Spellings accepted besides the safetensors and short names.
constexpr Alias kAliases[] = {
    {"boolean", DType::kBool},
    {"uint8", DType::kU8},       {"int8", DType::kI8},
    {"uint16", DType::kU16},     {"int16", DType::kI16},
    {"uint32", DType::kU32},     {"int32", DType::kI32},     {"int", DType::kI32},
    {"uint64", DType::kU64},     {"int64", DType::kI64},     {"long", DType::kI64},
    {"float16", DType::kF16},    {"half", DType::kF16},      {"fp16", DType::kF16},
    {"bfloat16", DType::kBF16},
    {"float32", DType::kF32},    {"float", DType::kF32},     {"fp32", DType::kF32},
    {"single", DType::kF32},
    {"float64", DType::kF64},    {"double", DType::kF64},    {"fp64", DType::kF64},
    {"fp8", DType::kF8E4M3},     {"e4m3", DType::kF8E4M3},   {"e4m3fn", DType::kF8E4M3},
    {"fp8_e4m3", DType::kF8E4M3}, {"f8e4m3", DType::kF8E4M3}, {"f8_e4m3fn", DType::kF8E4M3},
    {"float8_e4m3fn", DType::kF8E4M3},
    {"e5m2", DType::kF8E5M2},    {"fp8_e5m2", DType::kF8E5M2}, {"f8e5m2", DType::kF8E5M2},
    {"float8_e5m2", DType::kF8E5M2},
    {"e4m3fnuz", DType::kF8E4M3FNUZ}, {"float8_e4m3fnuz", DType::kF8E4M3FNUZ},
    {"e5m2fnuz", DType::kF8E5M2FNUZ}, {"float8_e5m2fnuz", DType::kF8E5M2FNUZ},
    {"e8m0", DType::kF8E8M0},    {"e8m0fnu", DType::kF8E8M0}, {"fp8_e8m0", DType::kF8E8M0},
    {"f8e8m0", DType::kF8E8M0},  {"f8_e8m0fnu", DType::kF8E8M0},
    {"float8_e8m0fnu", DType::kF8E8M0},
    {"fp4", DType::kF4},         {"e2m1", DType::kF4},       {"e2m1fn", DType::kF4},
    {"f4_e2m1", DType::kF4},     {"fp4_e2m1", DType::kF4},   {"float4_e2m1fn", DType::kF4},
    {"fp6_e2m3", DType::kF6E2M3}, {"e2m3", DType::kF6E2M3},  {"f6e2m3", DType::kF6E2M3},
    {"float6_e2m3fn", DType::kF6E2M3},
    {"fp6_e3m2", DType::kF6E3M2}, {"e3m2", DType::kF6E3M2},  {"f6e3m2", DType::kF6E3M2},
    {"float6_e3m2fn", DType::kF6E3M2},
    {"complex64", DType::kC64},  {"complex", DType::kC64},
};

std::string normalize_spelling(std::string_view text) {
  std::string s(text);
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    else if (c == '-') c = '_';
  }
  return s;
}

}  // namespace

const DTypeTraits& dtype_traits(DType dtype) {
  auto index = static_cast<size_t>(dtype);
  if (index >= kTable.size())
    throw internal_error("invalid dtype value " + std::to_string(index));
  return kTable[index];
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const DTypeTraits& t : kTable)
    if (name == t.name) return t.dtype;
  return std::nullopt;
}

std::optional<DType> dtype_parse(std::string_view text) {
  const std::string s = normalize_spelling(text);
  for (const DTypeTraits& t : kTable)
    if (s == t.short_name) return t.dtype;  // short names are the lower-cased safetensors names
  for (const Alias& a : kAliases)
    if (s == a.spelling) return a.dtype;
  return std::nullopt;
}

uint64_t dtype_storage_bytes(DType dtype, uint64_t count) {
  const auto bits = static_cast<uint64_t>(dtype_bits(dtype));
  const uint64_t limit = bits % 8 == 0 ? UINT64_MAX / (bits / 8) : UINT64_MAX / bits;
  if (count > limit)
    throw invalid_input("storage size of " + std::to_string(count) + " elements of " +
                        dtype_name(dtype) + " overflows");
  if (bits % 8 == 0) return count * (bits / 8);
  if (count * bits % 8 != 0)
    throw invalid_input(std::to_string(count) + " elements of " + dtype_name(dtype) +
                        " do not fill a whole number of bytes");
  return count * bits / 8;
}

}  // namespace tk
