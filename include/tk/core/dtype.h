// The one dtype table: every element type tensorkit reads or writes (the safetensors
// set), with its width and conversions to and from f32/f64.
//
// Sub-byte types (F4, F6_*) are packed as a little-endian bit stream: element i occupies
// bits [i*w, (i+1)*w) counting from bit 0 of byte 0. For F4 this puts element 0 in the
// low nibble of byte 0. A tensor of a sub-byte type must hold a whole number of bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tk {

enum class DType : uint8_t {
  kBool, kU8, kI8, kU16, kI16, kU32, kI32, kU64, kI64,
  kF16, kBF16, kF32, kF64,
  kF8E4M3,  // OCP E4M3 "fn": bias 7, no Inf, NaN = S.1111.111, max 448
  kF8E5M2,  // OCP E5M2: IEEE-like, bias 15, Inf and NaN, max 57344
  kF8E8M0,  // OCP E8M0 scale: 2^(e-127), no sign, no zero, 0xFF = NaN
  kF4,      // OCP E2M1 (fp4): bias 1, no Inf/NaN, max 6, two per byte
  kF6E2M3,  // OCP E2M3 (fp6): bias 1, no Inf/NaN, max 7.5
  kF6E3M2,  // OCP E3M2 (fp6): bias 3, no Inf/NaN, max 28
  kC64,     // complex64: two f32 (real, imaginary)
  kF8E4M3FNUZ,  // E4M3 "fnuz": bias 8, no Inf, no -0, the one NaN is 0x80, max 240
  kF8E5M2FNUZ,  // E5M2 "fnuz": bias 16, no Inf, no -0, the one NaN is 0x80, max 57344
  kCount
};

enum class DTypeClass : uint8_t { kBool, kUnsigned, kSigned, kFloat, kComplex };

struct DTypeTraits {
  DType dtype;
  const char* name;       // safetensors spelling: "F32", "BF16", "F8_E4M3", ...
  const char* short_name; // command-line spelling: "f32", "bf16", "f8_e4m3", ...
  int bits;               // storage bits per element (F4: 4, F6: 6, C64: 64)
  DTypeClass cls;
  int alignment;          // natural alignment in bytes (1 for sub-byte types)
};

// Traits of a dtype. The table is indexed by the enum value.
const DTypeTraits& dtype_traits(DType dtype);
inline const char* dtype_name(DType dtype) { return dtype_traits(dtype).name; }
inline int dtype_bits(DType dtype) { return dtype_traits(dtype).bits; }
inline bool dtype_is_float(DType dtype) { return dtype_traits(dtype).cls == DTypeClass::kFloat; }

// Look a dtype up by its safetensors name ("BF16") only; exact, case-sensitive.
std::optional<DType> dtype_from_safetensors_name(std::string_view name);
// Look a dtype up by any accepted user spelling: safetensors names and short names,
// case-insensitive, plus aliases (float32, half, bfloat16, fp8, e4m3, fp4, ...).
std::optional<DType> dtype_parse(std::string_view text);

// Bytes needed to store `count` elements. Throws tk::Error(kInvalidInput) when the
// count * bits overflows or, for sub-byte types, is not a whole number of bytes.
uint64_t dtype_storage_bytes(DType dtype, uint64_t count);

// ---- Scalar conversions (reference implementations, round to nearest even) ----
//
// Decoding is exact. Encoding from f32 or f64 rounds to nearest, ties to even, with
// the behaviour of the ml_dtypes reference package: NaN maps to the type's NaN (or, for
// types without NaN, to the encoding ml_dtypes produces); overflow maps to Inf where the
// type has one and NaN otherwise, unless `saturate` is set, in which case finite values
// beyond the largest magnitude clamp to +-max (Inf still maps to Inf / max).
//
// Details, all as ml_dtypes does them unless noted:
// - The sign of a NaN input is kept (E4M3: 0x7f / 0xff). F4 and F6 have no NaN: NaN
//   encodes as the code of -0 (and -NaN as +0); Inf and overflow clamp to +-max.
// - The FNUZ types have no -0: -0.0 and negatives that round to zero encode as +0
//   (0x00), and NaN of either sign, +-Inf and (without `saturate`) finite overflow of
//   either sign encode as the one NaN, 0x80. With `saturate`, overflow and Inf give +-max.
// - F16 and BF16 NaN: f32_to_f16 keeps the top payload bits and sets the quiet bit (as
//   F16C hardware does), f32_to_bf16 gives 0x7fc0 / 0xffc0; f16_to_f32 quiets NaNs.
// - E8M0 has no mantissa, so "even" is the implicit bit: ties round up (1.5 -> 2). Zero,
//   negatives and -Inf encode as NaN (0xFF); with `saturate` they give 0x00 (2^-127) and
//   +Inf gives 0xFE. Inputs in (2^-127, 2^-126) round up to 2^-126. Unlike ml_dtypes 0.6,
//   f64 inputs that round up to 2^129 give NaN (ml_dtypes wraps them to 0x00).
// - f64 inputs are rounded once. (ml_dtypes' float64 array casts go through float32;
//   its scalar constructors round once, as here.)

float f16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);

// Decode one 8-bit-or-narrower float code (F8_*, F4, F6_*) held in the low bits of `code`.
float minifloat_to_f32(DType dtype, uint8_t code);
// Encode a double into an 8-bit-or-narrower float code (F8_*, F4, F6_*).
uint8_t minifloat_from_f64(DType dtype, double value, bool saturate);

// ---- Array conversions (the fast paths used by tools) ----

// Convert `count` elements starting at element index `first` of the packed array `src`
// of type `dtype` into f32. Integers convert by value (rounding for wide ones), BOOL to
// 0/1, C64 to its real part.
void convert_to_f32(DType dtype, const void* src, uint64_t first, uint64_t count, float* dst);
// Same into f64 (exact for every type except U64/I64 beyond 2^53).
void convert_to_f64(DType dtype, const void* src, uint64_t first, uint64_t count, double* dst);

struct CastOptions {
  bool saturate = false;  // clamp finite overflow to +-max instead of Inf/NaN
};

// Convert `count` elements of `src` (type `from`) into `dst` (type `to`), both packed
// arrays starting at element 0. Float-to-float casts round once, to nearest even (F64
// sources are not first rounded to f32). Float-to-integer casts round to nearest and
// clamp; NaN becomes 0. Casting to the same type copies the bytes.
// Also: float-to-integer ties go to even; integer-to-integer casts clamp to the target
// range; integers reach float targets other than F32 through f64 (exact up to 2^53); a
// BOOL target gets 1 for any nonzero (or NaN) value, a C64 source counts as nonzero when
// either part is. A sub-byte target whose count does not fill whole bytes gets zero
// padding bits. Pointers need no alignment. Throws kInvalidInput when the byte size of
// `count` elements overflows. Large arrays are converted by several OpenMP threads.
void cast_array(DType from, const void* src, DType to, void* dst, uint64_t count,
                const CastOptions& options = {});

// What a cast of float values gave up beyond rounding to the nearest value of the target.
struct CastLosses {
  uint64_t rounded = 0;     // integer target: values with a fraction, rounded to an integer
  uint64_t clamped = 0;     // integer target: values beyond its range clamped, or NaN made 0
  uint64_t overflowed = 0;  // float target: finite values that became Inf or NaN
  CastLosses& operator+=(const CastLosses& other);
  bool any() const { return rounded + clamped + overflowed != 0; }
};

// Compare `count` elements of `src` (a float type `from`) with the result `dst` of casting
// them to `to`, and count what the cast lost. Zero for a BOOL target or a non-float source.
CastLosses cast_losses(DType from, const void* src, DType to, const void* dst, uint64_t count);

}  // namespace tk
