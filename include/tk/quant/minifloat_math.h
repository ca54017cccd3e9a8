// The float-format schemes' searches as the reference computes them: MX's shared exponent,
// nvfp4's block scales and fp8's scale candidates. The CPU's mx.cpp, nvfp4.cpp and fp8.cpp
// (scalar and, inlined, AVX2) and the GPU's cuda/minifloat.cu run this one source
// (TK_HD), so that both choose the same scales and codes.
//
// The element codes come from a callable encode(v, n, codes) that gives what
// float_format_encode(format, v[i], saturate = true) does for each value: the CPU passes
// its vectorised twin of that function, the GPU the function itself.
#pragma once

#include <cstdint>

#include "tk/core/float_format.h"
#include "tk/core/hd.h"
#include "tk/quant/group_search.h"

namespace tk::quant::detail {

using tk::detail::float_format_encode;
using tk::detail::FloatFormat;

// 2^k in f32 as std::ldexp(1.0f, k) gives it: exact for -149 <= k <= 127, else Inf or 0.
TK_HD inline float pow2f(int k) {
  if (k > 127) return bits_float(0x7f800000u);
  if (k < -149) return 0.0f;
  return bits_float(k >= -126 ? static_cast<uint32_t>(k + 127) << 23 : 1u << (k + 149));
}

// floor(log2(a)) of a finite a > 0 (std::ilogb).
TK_HD inline int ilogb_finite(float a) {
  const uint32_t b = float_bits(a) & 0x7fffffffu;
  const int biased = static_cast<int>(b >> 23);
  if (biased != 0) return biased - 127;
  return -149 + 31 - leading_zeros(b);  // subnormal: the top set bit of the fraction
}

TK_HD inline bool finite(float v) { return (float_bits(v) & 0x7f800000u) != 0x7f800000u; }

// The weighted squared error of n values coded as `codes` under `scale`, summed in order.
TK_HD_INLINE double coded_error(const float* x, const float* w, int64_t n, const float* table, float scale,
                                const uint8_t* codes) {
  double err = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(table[codes[i]] * scale);
    err += static_cast<double>(w[i]) * d * d;
  }
  return err;
}

namespace mx {

constexpr int64_t kBlock = 32;
constexpr uint8_t kNanScale = 0xff;

// An MX element type: a float format, or MXINT8 (value = code / 64).
struct Element {
  FloatFormat format;
  bool int8;
  int emax;   // exponent of the element's largest normal power of two
  float max;  // largest element magnitude
};

// The 32 values scaled by 2^-e, coded; 2^-e and the products are exact in f32 for every
// value that does not round to zero.
template <typename Encode>
TK_HD_INLINE void encode_elements(const Element& f, const float* x, int e, uint8_t* codes, Encode&& encode) {
  float v[kBlock];
  const float inv = pow2f(-e);
  for (int64_t i = 0; i < kBlock; ++i) v[i] = x[i] * inv;
  if (!f.int8) {
    encode(v, kBlock, codes);
    return;
  }
  for (int64_t i = 0; i < kBlock; ++i) {
    const float s = round_even(v[i] * 64.0f);
    codes[i] = static_cast<uint8_t>(static_cast<int8_t>(s < -127.0f ? -127.0f : (s > 127.0f ? 127.0f : s)));
  }
}

// One block's codes; returns its E8M0 scale code. `table` holds each code's value.
template <typename Encode>
TK_HD_INLINE uint8_t encode_block(const Element& f, const float* table, const float* x, const float* w, bool ceil,
                                  bool search, uint8_t* codes, Encode&& encode) {
  float amax = 0;
  bool all_finite = true;
  for (int64_t i = 0; i < kBlock; ++i) {
    all_finite = all_finite && finite(x[i]);
    amax = max_magnitude(amax, x[i]);
  }
  if (!all_finite) {
    for (int64_t i = 0; i < kBlock; ++i) codes[i] = 0;
    return kNanScale;
  }
  int e = -127;
  if (amax > 0) e = ilogb_finite(amax) - f.emax;
  if (ceil && amax > 0) {
    while (e < 127 && amax * pow2f(-e) > f.max) ++e;
  }
  e = e < -127 ? -127 : (e > 127 ? 127 : e);
  encode_elements(f, x, e, codes, encode);
  if (search && amax > 0) {
    double best = coded_error(x, w, kBlock, table, pow2f(e), codes);
    const int base = e;
    uint8_t trial[kBlock];
    const int cands[2] = {base - 1, base + 1};
    for (const int cand : cands) {
      if (cand < -127 || cand > 127) continue;
      encode_elements(f, x, cand, trial, encode);
      const double err = coded_error(x, w, kBlock, table, pow2f(cand), trial);
      if (err < best) {
        best = err;
        e = cand;
        for (int64_t i = 0; i < kBlock; ++i) codes[i] = trial[i];
      }
    }
  }
  return static_cast<uint8_t>(e + 127);
}

}  // namespace mx

namespace nvfp4 {

constexpr int64_t kBlock = 16;

// The E2M1 codes of 16 values under the block scale `scale` (0: all zero).
template <typename Encode>
TK_HD_INLINE void encode_elements(const float* x, float scale, uint8_t* codes, Encode&& encode) {
  float v[kBlock];
  const float inv = scale == 0 ? 0.0f : 1.0f / scale;
  for (int64_t i = 0; i < kBlock; ++i) v[i] = x[i] * inv;
  encode(v, kBlock, codes);
}

// One block's codes under tensor scale t; returns its E4M3 scale code: the rounded
// amax / (6 t) and, unless `fast`, whichever of it and its neighbours errs least.
// fp4 and fp8 hold each code's value.
template <typename Encode>
TK_HD_INLINE uint8_t encode_block(const FloatFormat& e4m3, const float* fp4, const float* fp8, const float* x,
                                  const float* w, float t, bool fast, uint8_t* codes, Encode&& encode) {
  float amax = 0;
  for (int64_t i = 0; i < kBlock; ++i) amax = max_magnitude(amax, x[i]);
  const auto code = static_cast<uint8_t>(float_format_encode(e4m3, amax / 6.0f / t, true));
  encode_elements(x, fp8[code] * t, codes, encode);
  if (fast || amax == 0) return code;
  uint8_t best = code;
  double best_err = coded_error(x, w, kBlock, fp4, fp8[code] * t, codes);
  uint8_t trial[kBlock];
  const int neighbours[2] = {code - 1, code + 1};
  for (const int c : neighbours) {
    if (c < 0 || c > 0x7e) continue;  // positive codes only, 0x7f is NaN
    encode_elements(x, fp8[c] * t, trial, encode);
    const double err = coded_error(x, w, kBlock, fp4, fp8[c] * t, trial);
    if (err < best_err) {
      best_err = err;
      best = static_cast<uint8_t>(c);
      for (int64_t i = 0; i < kBlock; ++i) codes[i] = trial[i];
    }
  }
  return best;
}

}  // namespace nvfp4

namespace fp8 {

// Scale candidates amax / max_elem * 2^(-k/4), k = 0..kCandidates - 1: the factors are
// computed once on the host (std::exp2) and passed to the device.
constexpr int kCandidates = 5;

// x / s as x * (1 / s), one rounding per value.
TK_HD_INLINE float inverse(float s) { return s == 0 ? 0.0f : 1.0f / s; }

// The weighted squared error of one row of n values coded under scale s, code by code:
// the same sum as coding the row and then summing coded_error.
TK_HD inline double row_error(const FloatFormat& f, const float* table, const float* x, const float* w, int64_t n,
                              float s) {
  const float inv = inverse(s);
  double err = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto c = static_cast<uint8_t>(float_format_encode(f, x[i] * inv, true));
    const double d = static_cast<double>(x[i]) - static_cast<double>(table[c] * s);
    err += static_cast<double>(w[i]) * d * d;
  }
  return err;
}

// The scale of n values x: amax / max_elem (1 for all zeros) with `fast`, else the
// candidate base * factor[k] (k = 0: base) of least error, the first of equals, where
// errors(candidates, err) fills err[k] for every candidate.
template <typename Errors>
TK_HD inline float fit_scale(const float* x, int64_t n, float max_elem, const float* factor, bool fast,
                             Errors&& errors) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = max_magnitude(amax, x[i]);
  if (amax == 0) return 1.0f;
  const float base = amax / max_elem;
  if (fast) return base;
  float candidates[kCandidates];
  double err[kCandidates];
  for (int k = 0; k < kCandidates; ++k) candidates[k] = k == 0 ? base : base * factor[k];
  errors(candidates, err);
  int best = 0;
  for (int k = 1; k < kCandidates; ++k) best = err[k] < err[best] ? k : best;
  return candidates[best];
}

}  // namespace fp8

}  // namespace tk::quant::detail
