// Array kernels between f32 and the narrow floats. Every loop body is branch-free
// (selects, integer and float adds) so that it vectorises; the F16C path converts eight
// values per instruction. The float adds feed selects, and GCC if-converts those only
// without trapping math (no code here reads the floating-point exception flags).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "tk/core/float_kernels.h"

#include <bit>
#include <cstring>

#include "tk/core/float_format.h"

#include "tk/core/isa.h"
#if TK_X86
#include <immintrin.h>
#endif

namespace tk::detail {
namespace {

// Loads and stores go through memcpy: the arrays may come from a file at any offset.
inline uint32_t load_bits(const float* p) {
  uint32_t u;
  std::memcpy(&u, p, sizeof u);
  return u;
}
inline uint16_t load_u16(const uint16_t* p) {
  uint16_t u;
  std::memcpy(&u, p, sizeof u);
  return u;
}
inline void store_u16(uint16_t* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }
inline void store_bits(float* p, uint32_t u) { std::memcpy(p, &u, sizeof u); }

// f32 bits -> F16 bits, round to nearest even; NaN keeps the top payload bits, quietened.
inline uint16_t f32_bits_to_f16(uint32_t u) {
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  // Normal result: rebias the exponent and round by adding 0xfff plus the kept LSB.
  const uint32_t normal = (a + (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  // Subnormal result: adding 0.5f leaves the rounded F16 mantissa in the low bits.
  constexpr uint32_t kHalf = 126u << 23;
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(a) + std::bit_cast<float>(kHalf)) - kHalf;
  const uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  uint32_t r = a < (113u << 23) ? sub : normal;
  r = a >= (143u << 23) ? 0x7c00u : r;
  r = a > 0x7f800000u ? nan : r;
  return static_cast<uint16_t>(r | sign);
}

// F16 bits -> f32 bits, exact; NaN is quietened, payload kept.
inline uint32_t f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t a = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t exponent = a & (0x7c00u << 13);
  const uint32_t normal = a + (static_cast<uint32_t>(127 - 15) << 23);
  const uint32_t special =
      (a + (static_cast<uint32_t>(255 - 31) << 23)) | ((a & 0x7fe000u) ? 0x400000u : 0u);
  // Subnormal: build 2^-14 * (1 + m/1024) and subtract 2^-14.
  constexpr uint32_t kMagic = 113u << 23;
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(a + kMagic) - std::bit_cast<float>(kMagic));
  uint32_t r = exponent == 0 ? sub : normal;
  r = exponent == (0x7c00u << 13) ? special : r;
  return r | sign;
}

inline uint16_t f32_bits_to_bf16(uint32_t u) {
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = ((u >> 16) & 0x8000u) | 0x7fc0u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

}  // namespace

void f32_to_f16_array_portable(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_u16(dst + i, f32_bits_to_f16(load_bits(src + i)));
}

void f16_to_f32_array_portable(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_bits(dst + i, f16_bits_to_f32(load_u16(src + i)));
}

namespace {
#if TK_X86
TK_BEGIN_AVX2
// The whole 8-value pieces; returns how many values were converted.
size_t f32_to_f16_f16c(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  return i;
}
size_t f16_to_f32_f16c(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  return i;
}
TK_END_TARGET
#endif
}  // namespace

void f32_to_f16_array(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
#if TK_X86
  if (use_avx2()) i = f32_to_f16_f16c(src, dst, n);
#endif
  f32_to_f16_array_portable(src + i, dst + i, n - i);
}

void f16_to_f32_array(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
#if TK_X86
  if (use_avx2()) i = f16_to_f32_f16c(src, dst, n);
#endif
  f16_to_f32_array_portable(src + i, dst + i, n - i);
}

namespace {

// The loops below are compiled twice: as they stand (baseline x86-64) and inlined into the
// AVX2 region further down, where the compiler vectorises them eight or more values wide.
inline void f32_to_bf16_loop(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_u16(dst + i, f32_bits_to_bf16(load_bits(src + i)));
}

inline void bf16_to_f32_loop(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_bits(dst + i, static_cast<uint32_t>(load_u16(src + i)) << 16);
}

inline void saturate_half_loop(const float* src, uint16_t* dst, size_t n, uint16_t inf_code, uint16_t max_code) {
  for (size_t i = 0; i < n; ++i) {
    const bool finite = (load_bits(src + i) & 0x7fffffffu) < 0x7f800000u;
    const uint16_t code = load_u16(dst + i);
    const bool inf = (code & 0x7fffu) == inf_code;
    store_u16(dst + i, (finite && inf) ? static_cast<uint16_t>((code & 0x8000u) | max_code) : code);
  }
}

inline void float_format_encode_loop(const FloatFormat& f, const float* src, uint8_t* codes, size_t n,
                                     bool saturate) {
  // Normal results: rebias the f32 exponent and round at the target LSB with an integer
  // add. Subnormal results: add a power of two whose ulp is the target's smallest step,
  // so that the FPU rounds (to nearest even) at the right bit.
  const int shift = 23 - f.mantissa_bits;
  const uint32_t rebias = static_cast<uint32_t>(f.bias - 127) << 23;
  const uint32_t min_normal = static_cast<uint32_t>(127 + 1 - f.bias) << 23;
  const uint32_t magic_bits = static_cast<uint32_t>(127 + 1 - f.bias - f.mantissa_bits + 23) << 23;
  const float magic = std::bit_cast<float>(magic_bits);
  // Local copies: the stores through `codes` (uint8_t) may alias `f` otherwise.
  const uint32_t max_code = f.max_code, nan_code = f.nan_code, sign_shift = f.bits - 1;
  const uint32_t overflow = saturate ? f.max_code : f.inf_code;
  const uint32_t inf = (saturate && !f.ieee_specials) ? f.max_code : f.inf_code;
  const uint32_t half_minus_one = (1u << (shift - 1)) - 1;
  // FNUZ: zero and the NaN take no sign. Codes fit in 8 bits, so ~0u matches nothing.
  const uint32_t unsigned_a = f.fnuz ? 0u : ~0u, unsigned_b = f.fnuz ? f.nan_code : ~0u;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, src + i, sizeof u);
    const uint32_t a = u & 0x7fffffffu;
    const uint32_t sign = (u >> 31) << sign_shift;
    const uint32_t normal = (a + rebias + half_minus_one + ((a >> shift) & 1u)) >> shift;
    const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(a) + magic) - magic_bits;
    uint32_t r = a < min_normal ? sub : normal;
    r = r > max_code ? overflow : r;
    r = a == 0x7f800000u ? inf : r;
    r = a > 0x7f800000u ? nan_code : r;
    codes[i] = static_cast<uint8_t>(r ^ ((r == unsigned_a || r == unsigned_b) ? 0u : sign));
  }
}

#if TK_X86
TK_BEGIN_AVX2
void f32_to_bf16_avx2(const float* src, uint16_t* dst, size_t n) { f32_to_bf16_loop(src, dst, n); }
void bf16_to_f32_avx2(const uint16_t* src, float* dst, size_t n) { bf16_to_f32_loop(src, dst, n); }
void saturate_half_avx2(const float* src, uint16_t* dst, size_t n, uint16_t inf_code, uint16_t max_code) {
  saturate_half_loop(src, dst, n, inf_code, max_code);
}
void float_format_encode_avx2(const FloatFormat& f, const float* src, uint8_t* codes, size_t n, bool saturate) {
  float_format_encode_loop(f, src, codes, n, saturate);
}
TK_END_TARGET
#endif

}  // namespace

void f32_to_bf16_array(const float* src, uint16_t* dst, size_t n) {
#if TK_X86
  if (use_avx2()) return f32_to_bf16_avx2(src, dst, n);
#endif
  f32_to_bf16_loop(src, dst, n);
}

void bf16_to_f32_array(const uint16_t* src, float* dst, size_t n) {
#if TK_X86
  if (use_avx2()) return bf16_to_f32_avx2(src, dst, n);
#endif
  bf16_to_f32_loop(src, dst, n);
}

void saturate_half_array(const float* src, uint16_t* dst, size_t n, uint16_t inf_code, uint16_t max_code) {
#if TK_X86
  if (use_avx2()) return saturate_half_avx2(src, dst, n, inf_code, max_code);
#endif
  saturate_half_loop(src, dst, n, inf_code, max_code);
}

namespace {

// The paths other than AVX2's out of line: inlined into the dispatcher, their frame (six
// saved registers) cost a 32-value MX block a tenth of its encode on the AVX2 path.
[[gnu::noinline]] void float_format_encode_other(const FloatFormat& f, const float* src, uint8_t* codes, size_t n,
                                                 bool saturate) {
  if (!f.has_zero || f.bits > 8) {
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, src + i, sizeof v);
      codes[i] = static_cast<uint8_t>(float_format_encode(f, v, saturate));
    }
    return;
  }
  float_format_encode_loop(f, src, codes, n, saturate);
}

}  // namespace

void float_format_encode_f32_array(const FloatFormat& f, const float* src, uint8_t* codes, size_t n,
                                   bool saturate) {
#if TK_X86
  if (f.has_zero && f.bits <= 8 && use_avx2()) return float_format_encode_avx2(f, src, codes, n, saturate);
#endif
  float_format_encode_other(f, src, codes, n, saturate);
}

}  // namespace tk::detail
