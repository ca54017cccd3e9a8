// Trial-quantization, code, packing and decoding kernels: a scalar reference and an
// AVX2/BMI2 version of each, equal bit for bit (see quant_internal.h for the rules).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tk/core/dtype_array.h"
#include "tk/core/float_format.h"
#include "tk/core/float_kernels.h"
#include "tk/quant/quant_internal.h"

#include "tk/core/isa.h"
#if TK_X86
#include <immintrin.h>
#endif

namespace tk::quant::detail {
namespace {

constexpr int64_t kChunk = 256;

#if TK_X86
TK_BEGIN_AVX2
inline __m256 round_even(__m256 v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// The same order as the scalar reduce8: (a_j + a_j+4), then pairs two apart, then the
// last two.
inline double reduce8(__m256 v) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return static_cast<double>(_mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1))));
}

TrialSums trial_symmetric_avx2(const float* x, const float* w, int64_t n, float iscale, float lo, float hi) {
  TrialSums out;
  const __m256 vs = _mm256_set1_ps(iscale), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  for (int64_t c = 0; c < n; c += kChunk) {
    __m256 lx = _mm256_setzero_ps(), l2 = _mm256_setzero_ps();
    const int64_t end = std::min(n, c + kChunk);
    for (int64_t i = c; i < end; i += 8) {
      const __m256 vx = _mm256_loadu_ps(x + i);
      const __m256 l = _mm256_min_ps(_mm256_max_ps(round_even(_mm256_mul_ps(vs, vx)), vlo), vhi);
      const __m256 t = _mm256_mul_ps(_mm256_loadu_ps(w + i), l);
      lx = _mm256_add_ps(lx, _mm256_mul_ps(t, vx));
      l2 = _mm256_add_ps(l2, _mm256_mul_ps(t, l));
    }
    out.lx += reduce8(lx);
    out.l2 += reduce8(l2);
  }
  return out;
}

TrialSums trial_asymmetric_avx2(const float* x, const float* w, int64_t n, float iscale, float min, float hi) {
  TrialSums out;
  const __m256 vs = _mm256_set1_ps(iscale), vmin = _mm256_set1_ps(min), vhi = _mm256_set1_ps(hi);
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t c = 0; c < n; c += kChunk) {
    __m256 lx = zero, l2 = zero, l1 = zero;
    const int64_t end = std::min(n, c + kChunk);
    for (int64_t i = c; i < end; i += 8) {
      const __m256 vx = _mm256_loadu_ps(x + i);
      const __m256 r = round_even(_mm256_mul_ps(vs, _mm256_sub_ps(vx, vmin)));
      const __m256 l = _mm256_min_ps(_mm256_max_ps(r, zero), vhi);
      const __m256 t = _mm256_mul_ps(_mm256_loadu_ps(w + i), l);
      lx = _mm256_add_ps(lx, _mm256_mul_ps(t, vx));
      l2 = _mm256_add_ps(l2, _mm256_mul_ps(t, l));
      l1 = _mm256_add_ps(l1, t);
    }
    out.lx += reduce8(lx);
    out.l2 += reduce8(l2);
    out.l += reduce8(l1);
  }
  return out;
}

GroupStats group_stats_avx2(const float* x, const float* w, int64_t n) {
  GroupStats s;
  __m256 vmax = _mm256_set1_ps(x[0]), vmin = vmax;
  for (int64_t c = 0; c < n; c += kChunk) {
    __m256 sw = _mm256_setzero_ps(), swx = sw, swx2 = sw;
    const int64_t end = std::min(n, c + kChunk);
    for (int64_t i = c; i < end; i += 8) {
      const __m256 vx = _mm256_loadu_ps(x + i), vw = _mm256_loadu_ps(w + i);
      const __m256 t = _mm256_mul_ps(vw, vx);
      sw = _mm256_add_ps(sw, vw);
      swx = _mm256_add_ps(swx, t);
      swx2 = _mm256_add_ps(swx2, _mm256_mul_ps(t, vx));
      vmax = _mm256_max_ps(vmax, vx);
      vmin = _mm256_min_ps(vmin, vx);
    }
    s.sw += reduce8(sw);
    s.swx += reduce8(swx);
    s.swx2 += reduce8(swx2);
  }
  // Max and min of finite values do not depend on the order (a tie between +0 and -0
  // is settled below by the scalar scan's rule: the first one seen).
  alignas(32) float a[8], b[8];
  _mm256_store_ps(a, vmax);
  _mm256_store_ps(b, vmin);
  s.max = a[0];
  s.min = b[0];
  for (int j = 1; j < 8; ++j) {
    s.max = std::max(s.max, a[j]);
    s.min = std::min(s.min, b[j]);
  }
  return s;
}

// The batch kernels put 8 candidate scales in the lanes of a vector instead of 8
// elements, so a short group (16 or 32 values) needs no horizontal reduction per
// candidate. Each lane still forms the reference's partial sums (element i into partial
// i % 8, in element order) and combines them in reduce8's order, so the sums are the
// same bits.
struct Sums8 {
  __m256 lx, l2, l;
};
inline Sums8 add(const Sums8& a, const Sums8& b) {
  return {_mm256_add_ps(a.lx, b.lx), _mm256_add_ps(a.l2, b.l2), _mm256_add_ps(a.l, b.l)};
}

// Partial sum j of the chunk [j0 - j, end): elements j0, j0 + 8, ...
// kUnit: every weight is 1, so w * l is l itself and the product is left out.
template <bool kAsym, bool kUnit>
inline Sums8 partial8(const float* x, const float* w, int64_t j0, int64_t end, __m256 vs, __m256 vmin, __m256 vlo,
                      __m256 vhi) {
  Sums8 s{_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t i = j0; i < end; i += 8) {
    const __m256 vx = _mm256_broadcast_ss(x + i);
    const __m256 a = kAsym ? _mm256_sub_ps(vx, vmin) : vx;
    const __m256 l = _mm256_min_ps(_mm256_max_ps(round_even(_mm256_mul_ps(vs, a)), vlo), vhi);
    const __m256 t = kUnit ? l : _mm256_mul_ps(_mm256_broadcast_ss(w + i), l);
    s.lx = _mm256_add_ps(s.lx, _mm256_mul_ps(t, vx));
    s.l2 = _mm256_add_ps(s.l2, _mm256_mul_ps(t, l));
    if constexpr (kAsym) s.l = _mm256_add_ps(s.l, t);
  }
  return s;
}

template <bool kAsym, bool kUnit>
inline Sums8 chunk8(const float* x, const float* w, int64_t c, int64_t end, __m256 vs, __m256 vmin, __m256 vlo,
                    __m256 vhi) {
  auto p = [&](int j) { return partial8<kAsym, kUnit>(x, w, c + j, end, vs, vmin, vlo, vhi); };
  const Sums8 even = add(add(p(0), p(4)), add(p(2), p(6)));
  const Sums8 odd = add(add(p(1), p(5)), add(p(3), p(7)));
  return add(even, odd);
}

template <bool kAsym>
void trial_batch_avx2(const float* x, const float* w, int64_t n, const float* iscales, const float* mins, int count,
                      float lo, float hi, TrialSums* out) {
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  // A plain loop: std::all_of, instantiated outside this region, could not inline a
  // predicate compiled for AVX2 and would call it once per weight.
  bool unit = true;
  for (int64_t i = 0; i < n; ++i) unit &= w[i] == 1.0f;
  for (int k0 = 0; k0 < count; k0 += 8) {
    const int len = std::min(8, count - k0);
    // A whole batch of eight loads its scales directly; a copy loop of unknown length (and,
    // below, an accumulation of unknown length) is what generic tuning left as a loop.
    __m256 vs = _mm256_setzero_ps(), vmin = _mm256_setzero_ps();
    if (len == 8) {
      vs = _mm256_loadu_ps(iscales + k0);
      if constexpr (kAsym) vmin = _mm256_loadu_ps(mins + k0);
    } else {
      alignas(32) float s[8] = {}, m[8] = {};
      for (int j = 0; j < len; ++j) {
        s[j] = iscales[k0 + j];
        if constexpr (kAsym) m[j] = mins[k0 + j];
      }
      vs = _mm256_load_ps(s);
      vmin = _mm256_load_ps(m);
    }
    TrialSums* acc = out + k0;
    for (int j = 0; j < len; ++j) acc[j] = TrialSums{};
    for (int64_t c = 0; c < n; c += kChunk) {
      const int64_t end = std::min(n, c + kChunk);
      const Sums8 r = unit ? chunk8<kAsym, true>(x, w, c, end, vs, vmin, vlo, vhi)
                           : chunk8<kAsym, false>(x, w, c, end, vs, vmin, vlo, vhi);
      alignas(32) float lx[8], l2[8], l1[8];
      _mm256_store_ps(lx, r.lx);
      _mm256_store_ps(l2, r.l2);
      _mm256_store_ps(l1, r.l);
      auto accumulate = [&](int upto) {
        for (int j = 0; j < upto; ++j) {
          acc[j].lx += static_cast<double>(lx[j]);
          acc[j].l2 += static_cast<double>(l2[j]);
          if constexpr (kAsym) acc[j].l += static_cast<double>(l1[j]);
        }
      };
      if (len == 8) accumulate(8);
      else accumulate(len);
    }
  }
}

// The lanes kernels: lane g is group g, so partial j of the reference (values j, j + 8,
// ...) is one vector accumulated over those values, and the eight partials combine in
// reduce8's order. The reference's partials start from +0; these start from their first
// term, which differs only in the sign of a zero partial: that cannot change a nonzero
// total, and a zero total is stored as 0.0 + total, +0 either way.
// kN: the group length when known at compile time (the K-quant sub-blocks: loops
// unrolled), 0 when not.
template <bool kAsym, bool kUnit, int kN>
inline Sums8 lanes_partial(const float* xt, const float* wt, int64_t j, int64_t n, __m256 vs, __m256 vmin,
                           __m256 vlo, __m256 vhi) {
  const auto term = [&](int64_t i) {
    const __m256 vx = _mm256_loadu_ps(xt + i * kLanes);
    const __m256 a = kAsym ? _mm256_sub_ps(vx, vmin) : vx;
    const __m256 l = _mm256_min_ps(_mm256_max_ps(round_even(_mm256_mul_ps(vs, a)), vlo), vhi);
    const __m256 t = kUnit ? l : _mm256_mul_ps(_mm256_loadu_ps(wt + i * kLanes), l);
    return Sums8{_mm256_mul_ps(t, vx), _mm256_mul_ps(t, l), kAsym ? t : _mm256_setzero_ps()};
  };
  Sums8 s = term(j);
  const int64_t end = kN > 0 ? kN : n;
  for (int64_t i = j + 8; i < end; i += 8) s = add(s, term(i));
  return s;
}

template <bool kAsym, bool kUnit, int kN>
inline Sums8 lanes_sums(const float* xt, const float* wt, int64_t n, __m256 vs, __m256 vmin, __m256 vlo, __m256 vhi) {
  auto p = [&](int j) { return lanes_partial<kAsym, kUnit, kN>(xt, wt, j, n, vs, vmin, vlo, vhi); };
  const Sums8 even = add(add(p(0), p(4)), add(p(2), p(6)));
  const Sums8 odd = add(add(p(1), p(5)), add(p(3), p(7)));
  return add(even, odd);
}

// As the reference: the float total added to a double 0 (which turns -0 into +0).
inline void store_lanes(__m256 v, double* out) {
  const __m256d zero = _mm256_setzero_pd();
  _mm256_store_pd(out, _mm256_add_pd(zero, _mm256_cvtps_pd(_mm256_castps256_ps128(v))));
  _mm256_store_pd(out + 4, _mm256_add_pd(zero, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
}

// One instantiation per weighting and group length, each small enough that the sums
// inline into it (one function for all of them did not, and paid a call per trial).
template <bool kAsym, bool kUnit, int kN>
void trial_lanes_avx2(const float* xt, const float* wt, int64_t n, const float* iscales, const float* mins, float lo,
                      float hi, LaneSums& out) {
  const __m256 vs = _mm256_loadu_ps(iscales), vmin = kAsym ? _mm256_loadu_ps(mins) : _mm256_setzero_ps();
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const Sums8 r = lanes_sums<kAsym, kUnit, kN>(xt, wt, n, vs, vmin, vlo, vhi);
  store_lanes(r.lx, out.lx);
  store_lanes(r.l2, out.l2);
  if constexpr (kAsym) {
    store_lanes(r.l, out.l);
  } else {
    std::fill(out.l, out.l + kLanes, 0.0);
  }
}

template <bool kAsym>
void trial_lanes_avx2(const float* xt, const float* wt, int64_t n, const float* iscales, const float* mins, float lo,
                      float hi, LaneSums& out) {
  const auto run = [&](auto length) {
    constexpr int kN = decltype(length)::value;
    if (wt) {
      trial_lanes_avx2<kAsym, false, kN>(xt, wt, n, iscales, mins, lo, hi, out);
    } else {
      trial_lanes_avx2<kAsym, true, kN>(xt, wt, n, iscales, mins, lo, hi, out);
    }
  };
  if (n == 16) {
    run(std::integral_constant<int, 16>{});
  } else if (n == 32) {
    run(std::integral_constant<int, 32>{});
  } else {
    run(std::integral_constant<int, 0>{});
  }
}

void group_stats_lanes_avx2(const float* xt, const float* wt, int64_t n, GroupStats* out) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 vmax = _mm256_loadu_ps(xt), vmin = vmax;
  __m256 best = _mm256_setzero_ps(), best_abs = best;
  __m256 p_sw[8], p_swx[8], p_swx2[8];
  for (int j = 0; j < 8; ++j) {
    __m256 sw = _mm256_setzero_ps(), swx = sw, swx2 = sw;
    for (int64_t i = j; i < n; i += 8) {
      const __m256 vx = _mm256_loadu_ps(xt + i * kLanes);
      const __m256 vw = wt ? _mm256_loadu_ps(wt + i * kLanes) : one;
      const __m256 t = _mm256_mul_ps(vw, vx);
      sw = _mm256_add_ps(sw, vw);
      swx = _mm256_add_ps(swx, t);
      swx2 = _mm256_add_ps(swx2, _mm256_mul_ps(t, vx));
    }
    p_sw[j] = sw;
    p_swx[j] = swx;
    p_swx2[j] = swx2;
  }
  // Max, min and the first value of largest magnitude in value order, as the scalar scans.
  for (int64_t i = 0; i < n; ++i) {
    const __m256 vx = _mm256_loadu_ps(xt + i * kLanes);
    vmax = _mm256_max_ps(vmax, vx);
    vmin = _mm256_min_ps(vmin, vx);
    const __m256 a = _mm256_andnot_ps(sign, vx);
    const __m256 larger = _mm256_cmp_ps(a, best_abs, _CMP_GT_OQ);
    best_abs = _mm256_blendv_ps(best_abs, a, larger);
    best = _mm256_blendv_ps(best, vx, larger);
  }
  auto reduce = [](const __m256* p) {
    return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(p[0], p[4]), _mm256_add_ps(p[2], p[6])),
                         _mm256_add_ps(_mm256_add_ps(p[1], p[5]), _mm256_add_ps(p[3], p[7])));
  };
  alignas(32) float sw[8], swx[8], swx2[8], mx[8], mn[8], am[8];
  _mm256_store_ps(sw, reduce(p_sw));
  _mm256_store_ps(swx, reduce(p_swx));
  _mm256_store_ps(swx2, reduce(p_swx2));
  _mm256_store_ps(mx, vmax);
  _mm256_store_ps(mn, vmin);
  _mm256_store_ps(am, best);
  for (int g = 0; g < kLanes; ++g) {
    GroupStats& s = out[g];
    s = GroupStats{};
    s.sw = 0.0 + static_cast<double>(sw[g]);
    s.swx = 0.0 + static_cast<double>(swx[g]);
    s.swx2 = 0.0 + static_cast<double>(swx2[g]);
    s.max = mx[g];
    s.min = mn[g];
    s.amax_signed = am[g];
  }
}
TK_END_TARGET
#endif

// Call fn(std::integral_constant<int, B>) for B = bits (1..8), so that the byte moves
// of a bit width have a constant size and compile to single loads and stores.
template <typename Fn> void with_bits(int bits, Fn&& fn) {
  switch (bits) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 3: return fn(std::integral_constant<int, 3>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    case 5: return fn(std::integral_constant<int, 5>{});
    case 6: return fn(std::integral_constant<int, 6>{});
    case 7: return fn(std::integral_constant<int, 7>{});
    default: return fn(std::integral_constant<int, 8>{});
  }
}

#if TK_X86
TK_BEGIN_AVX2
// The 8 codes from code index i of a packed stream of n codes, one per byte (the byte
// moves have constant sizes; 8 bytes are read where the stream allows).
template <int kBits> inline uint64_t load_codes8(const uint8_t* packed, int64_t i, int64_t n, uint64_t mask) {
  uint64_t p = 0;
  const int64_t offset = i / 8 * kBits;
  if (offset + 8 <= n / 8 * kBits) {
    std::memcpy(&p, packed + offset, 8);
  } else {
    std::memcpy(&p, packed + offset, kBits);
  }
  return kBits == 8 ? p : _pdep_u64(p, mask);
}
TK_END_TARGET
#endif

constexpr uint64_t repeat_mask(int bits) {
  const uint64_t m = (bits == 8) ? 0xffu : ((1u << bits) - 1);
  uint64_t out = 0;
  for (int j = 0; j < 8; ++j) out |= m << (8 * j);
  return out;
}


#if TK_X86
TK_BEGIN_AVX2
// The 8 codes of a piece of a packed LSB-first stream (its kBits bytes at p), one per
// 32-bit lane, without leaving the vector unit: the piece is broadcast to every lane,
// each lane shifts its code down to bit 0 and masks it. Up to 4 bits the whole piece
// fits in one 32-bit lane; wider codes first gather, by a byte shuffle, the two bytes
// that hold each lane's code. Reads 4 (kBits <= 4) or 8 bytes from p.
template <int kBits> inline __m256i load_piece(const uint8_t* p) {
  constexpr int b = kBits;
  if constexpr (b == 8) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  } else {
    const __m256i mask = _mm256_set1_epi32((1 << b) - 1);
    if constexpr (b <= 4) {
      int32_t w;
      std::memcpy(&w, p, 4);
      const __m256i shifts = _mm256_setr_epi32(0, b, 2 * b, 3 * b, 4 * b, 5 * b, 6 * b, 7 * b);
      return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w), shifts), mask);
    } else {
      int64_t w;
      std::memcpy(&w, p, 8);
      // Lane j takes bytes j*b/8 and the next into its low half (0x80: zero).
      auto pair = [](int j) { return (j * b / 8) | (j * b / 8 + 1) << 8 | 0x80 << 16 | 0x80 << 24; };
      const __m256i bytes = _mm256_setr_epi32(pair(0), pair(1), pair(2), pair(3), pair(4), pair(5), pair(6), pair(7));
      const __m256i shifts = _mm256_setr_epi32(0, b % 8, 2 * b % 8, 3 * b % 8, 4 * b % 8, 5 * b % 8, 6 * b % 8,
                                               7 * b % 8);
      return _mm256_and_si256(_mm256_srlv_epi32(_mm256_shuffle_epi8(_mm256_set1_epi64x(w), bytes), shifts), mask);
    }
  }
}
constexpr int piece_read_bytes(int bits) { return bits <= 4 ? 4 : 8; }

// y[i] = float(code_i - offset) * d + m for the `len` codes (a multiple of 8) whose
// stream starts at `in`: the reference's operations, one rounding each, in its order.
// kSafe: every piece may read piece_read_bytes past its start; otherwise each piece is
// copied into a padded buffer first (the last pieces of a stream). kStream: store with
// non-temporal hints, in 16-byte halves (y must be 16-byte aligned).
template <int kBits, bool kOffset, bool kSafe, bool kStream>
inline void decode_run(const uint8_t* in, int64_t len, __m256i voff, __m256 vd, __m256 vm, float* y) {
  const uint8_t* p = in;  // advanced by its piece each step: no index arithmetic left in the loop
  for (int64_t i = 0; i < len; i += 8, p += kBits) {
    __m256i c;
    if constexpr (kSafe) {
      c = load_piece<kBits>(p);
    } else {
      uint8_t padded[8] = {};
      std::memcpy(padded, p, kBits);
      c = load_piece<kBits>(padded);
    }
    if constexpr (kOffset) c = _mm256_sub_epi32(c, voff);
    const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(c), vd), vm);
    if constexpr (kStream) {
      _mm_stream_ps(y + i, _mm256_castps256_ps128(v));
      _mm_stream_ps(y + i + 4, _mm256_extractf128_ps(v, 1));
    } else {
      _mm256_storeu_ps(y + i, v);
    }
  }
}

// decode_packed_affine, one group at a time with its scale and offset broadcast once
// (the common group sizes 16 and 32 as constants, so their runs unroll). The groups
// whose last piece would read past the stream take the padded path. kStream: see
// decode_run. kMin: m is given (else every group's minimum is 0, the reference's `+ 0.0f`,
// kept out of the loop as a constant: generic tuning left the test and the load in it).
template <int kBits, bool kOffset, bool kStream, bool kMin>
void decode_affine_avx2(const uint8_t* packed, int64_t n, int offset, int64_t group, const float* d, const float* m,
                        float* y) {
  const int64_t stream_bytes = n / 8 * kBits;
  // Codes [0, safe) lie in pieces whose full read stays inside the stream.
  const int64_t over = piece_read_bytes(kBits) - kBits;
  const int64_t safe = stream_bytes >= over ? std::min(n, (stream_bytes - over) / kBits * 8) : 0;
  const __m256i voff = _mm256_set1_epi32(offset);
  auto groups = [&](auto fixed) {
    constexpr int64_t kFixed = decltype(fixed)::value;
    const int64_t g = kFixed > 0 ? kFixed : group;
    int64_t g0 = 0, gi = 0;
    for (; g0 + g <= safe; g0 += g, ++gi) {
      decode_run<kBits, kOffset, true, kStream>(packed + g0 / 8 * kBits, g, voff, _mm256_set1_ps(d[gi]),
                                                kMin ? _mm256_set1_ps(m[gi]) : _mm256_setzero_ps(), y + g0);
    }
    for (; g0 < n; g0 += g, ++gi) {
      decode_run<kBits, kOffset, false, kStream>(packed + g0 / 8 * kBits, g, voff, _mm256_set1_ps(d[gi]),
                                                 kMin ? _mm256_set1_ps(m[gi]) : _mm256_setzero_ps(), y + g0);
    }
  };
  if (group == 16) groups(std::integral_constant<int64_t, 16>{});
  else if (group == 32) groups(std::integral_constant<int64_t, 32>{});
  else groups(std::integral_constant<int64_t, 0>{});
}
// 8 x 8 blocks: rows are 8 values of each group, transposed in registers.
void to_lanes_avx2(const float* x, int64_t n, float* xt) {
  for (int64_t i = 0; i < n; i += 8) {
    __m256 r[8];
    for (int g = 0; g < kLanes; ++g) r[g] = _mm256_loadu_ps(x + g * n + i);
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    float* out = xt + i * kLanes;
    _mm256_storeu_ps(out + 0 * kLanes, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(out + 1 * kLanes, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(out + 2 * kLanes, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(out + 3 * kLanes, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(out + 4 * kLanes, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(out + 5 * kLanes, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(out + 6 * kLanes, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(out + 7 * kLanes, _mm256_permute2f128_ps(u3, u7, 0x31));
  }
}

// The codes of the whole 8-value pieces of x; returns how many values it coded.
int64_t codes_symmetric_avx2(const float* x, int64_t n, float inv, float lo, float hi, int offset, uint8_t* codes) {
  const __m256 vs = _mm256_set1_ps(inv), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const __m256i voff = _mm256_set1_epi32(offset);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 l = _mm256_min_ps(_mm256_max_ps(round_even(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs)), vlo), vhi);
    const __m256i q = _mm256_add_epi32(_mm256_cvttps_epi32(l), voff);
    const __m128i q16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i), _mm_packus_epi16(q16, q16));
  }
  return i;
}

int64_t codes_asymmetric_avx2(const float* x, int64_t n, float inv, float min, float hi, uint8_t* codes) {
  const __m256 vs = _mm256_set1_ps(inv), vmin = _mm256_set1_ps(min), vhi = _mm256_set1_ps(hi);
  const __m256 zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 r = round_even(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmin), vs));
    const __m256i q = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(r, zero), vhi));
    const __m128i q16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i), _mm_packus_epi16(q16, q16));
  }
  return i;
}

// The loops below are function templates with their stream as parameters, not bodies of
// the with_bits lambdas: a lambda that captures by reference reloads n and the pointers
// after every byte store (a store through uint8_t* may alias the captures) whenever the
// compiler does not inline it, as generic tuning did not (13 instructions for 8 codes
// where the inlined native build took 5).
template <int kBits> void pack_codes8(const uint8_t* codes, int64_t n, uint8_t* out) {
  const uint64_t mask = repeat_mask(kBits);
  for (int64_t i = 0; i < n; i += 8) {
    uint64_t v;
    std::memcpy(&v, codes + i, 8);
    const uint64_t p = _pext_u64(v, mask);
    std::memcpy(out + i / 8 * kBits, &p, kBits);
  }
}

template <int kBits> void unpack_codes8(const uint8_t* in, int64_t n, uint8_t* codes) {
  const uint64_t mask = repeat_mask(kBits);
  for (int64_t i = 0; i < n; i += 8) {
    const uint64_t v = load_codes8<kBits>(in, i, n, mask);
    std::memcpy(codes + i, &v, 8);
  }
}

void pack_bits_bmi2(const uint8_t* codes, int64_t n, int bits, uint8_t* out) {
  with_bits(bits, [&](auto b) { pack_codes8<decltype(b)::value>(codes, n, out); });
}

void unpack_bits_bmi2(const uint8_t* in, int64_t n, int bits, uint8_t* codes) {
  with_bits(bits, [&](auto b) { unpack_codes8<decltype(b)::value>(in, n, codes); });
}

void decode_packed_affine_avx2(const uint8_t* packed, int64_t n, int bits, int offset, int64_t group, const float* d,
                               const float* m, float* y, bool stream) {
  // Streaming stores write whole lines without reading them first (no read for
  // ownership); they need 16-byte aligned rows.
  const bool nontemporal = stream && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  with_bits(bits, [&](auto b) {
    constexpr int kBits = decltype(b)::value;
    auto run = [&](auto stream_stores, auto has_min) {
      constexpr bool kStream = decltype(stream_stores)::value, kMin = decltype(has_min)::value;
      if (offset != 0) decode_affine_avx2<kBits, true, kStream, kMin>(packed, n, offset, group, d, m, y);
      else decode_affine_avx2<kBits, false, kStream, kMin>(packed, n, 0, group, d, m, y);
    };
    using Yes = std::true_type;
    using No = std::false_type;
    if (nontemporal) {
      if (m) run(Yes{}, Yes{});
      else run(Yes{}, No{});
      _mm_sfence();
    } else {
      if (m) run(No{}, Yes{});
      else run(No{}, No{});
    }
  });
}

void expand_sub_scales_avx2(const uint8_t* q, int64_t supers, int subs, int bias, const float* d, bool negate,
                            float* out) {
  const __m256i vbias = _mm256_set1_epi32(bias);
  const __m256 sign = _mm256_set1_ps(negate ? -0.0f : 0.0f);
  for (int64_t s = 0; s < supers; ++s) {
    const __m256 vd = _mm256_set1_ps(d[s]);
    for (int i = 0; i < subs; i += 8) {
      const int64_t k = s * subs + i;
      const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + k)));
      const __m256 v = _mm256_cvtepi32_ps(_mm256_sub_epi32(c, vbias));
      _mm256_storeu_ps(out + k, _mm256_xor_ps(_mm256_mul_ps(vd, v), sign));
    }
  }
}

template <int kBits>
void decode_table8(const uint8_t* packed, int64_t n, const float* table, int64_t group, const float* scales,
                   float* y) {
  const uint64_t mask = repeat_mask(kBits);
  // Up to 16 entries: two in-register permutes and a blend instead of a gather.
  const __m256 lo = _mm256_loadu_ps(table), hi = _mm256_loadu_ps(table + 8);
  for (int64_t g0 = 0, gi = 0; g0 < n; g0 += group, ++gi) {
    const __m256 vs = _mm256_set1_ps(scales[gi]);
    for (int64_t i = g0; i < g0 + group; i += 8) {
      const __m128i c = _mm_cvtsi64_si128(static_cast<long long>(load_codes8<kBits>(packed, i, n, mask)));
      const __m256i idx = _mm256_cvtepu8_epi32(c);
      __m256 v;
      if constexpr (kBits <= 4) {
        const __m256 high = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));  // bit 3 -> sign bit
        v = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx), high);
      } else {
        v = _mm256_i32gather_ps(table, idx, 4);
      }
      _mm256_storeu_ps(y + i, _mm256_mul_ps(v, vs));
    }
  }
}

void decode_packed_table_avx2(const uint8_t* packed, int64_t n, int bits, const float* table, int64_t group,
                              const float* scales, float* y) {
  with_bits(bits, [&](auto b) { decode_table8<decltype(b)::value>(packed, n, table, group, scales, y); });
}
TK_END_TARGET
#endif

}  // namespace

TrialSums trial_symmetric(const float* x, const float* w, int64_t n, float iscale, float lo, float hi,
                          bool reference) {
#if TK_X86
  if (!reference && use_avx2()) return trial_symmetric_avx2(x, w, n, iscale, lo, hi);
#endif
  return trial_symmetric_ref(x, w, n, iscale, lo, hi);
}

TrialSums trial_asymmetric(const float* x, const float* w, int64_t n, float iscale, float min, float hi,
                           bool reference) {
#if TK_X86
  if (!reference && use_avx2()) return trial_asymmetric_avx2(x, w, n, iscale, min, hi);
#endif
  return trial_asymmetric_ref(x, w, n, iscale, min, hi);
}

void trial_symmetric_batch(const float* x, const float* w, int64_t n, const float* iscales, int count, float lo,
                           float hi, TrialSums* out, bool reference) {
#if TK_X86
  if (!reference && use_avx2()) {
    trial_batch_avx2<false>(x, w, n, iscales, nullptr, count, lo, hi, out);
    return;
  }
#endif
  for (int k = 0; k < count; ++k) out[k] = trial_symmetric_ref(x, w, n, iscales[k], lo, hi);
}

void trial_asymmetric_batch(const float* x, const float* w, int64_t n, const float* iscales, const float* mins,
                            int count, float hi, TrialSums* out, bool reference) {
#if TK_X86
  if (!reference && use_avx2()) {
    trial_batch_avx2<true>(x, w, n, iscales, mins, count, 0.0f, hi, out);
    return;
  }
#endif
  for (int k = 0; k < count; ++k) out[k] = trial_asymmetric_ref(x, w, n, iscales[k], mins[k], hi);
}

void to_lanes(const float* x, int64_t n, float* xt) {
#if TK_X86
  if (use_avx2()) return to_lanes_avx2(x, n, xt);
#endif
  for (int g = 0; g < kLanes; ++g) {
    for (int64_t i = 0; i < n; ++i) xt[i * kLanes + g] = x[g * n + i];
  }
}

namespace {

// Group g of eight in lanes, back in a row of its own (for the reference versions).
void from_lanes(const float* xt, int64_t n, int g, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] = xt[i * kLanes + g];
}

const float* unit_weights() {
  static const std::vector<float> ones(static_cast<size_t>(kChunk), 1.0f);
  return ones.data();
}

// The reference of a lanes trial: each lane's group taken out of the lanes and tried by
// the one-group reference `trial(x, w, lane)`.
template <typename Trial>
void lanes_reference(const float* xt, const float* wt, int64_t n, LaneSums& out, Trial&& trial) {
  float x[kChunk], w[kChunk];
  for (int g = 0; g < kLanes; ++g) {
    from_lanes(xt, n, g, x);
    if (wt) from_lanes(wt, n, g, w);
    const TrialSums t = trial(x, wt ? w : unit_weights(), g);
    out.lx[g] = t.lx;
    out.l2[g] = t.l2;
    out.l[g] = t.l;
  }
}

}  // namespace

void trial_symmetric_lanes(const float* xt, const float* wt, int64_t n, const float* iscales, float lo, float hi,
                           LaneSums& out, bool reference) {
#if TK_X86
  if (!reference && use_avx2()) {
    trial_lanes_avx2<false>(xt, wt, n, iscales, nullptr, lo, hi, out);
    return;
  }
#endif
  lanes_reference(xt, wt, n, out, [&](const float* x, const float* w, int g) {
    TrialSums t = trial_symmetric_ref(x, w, n, iscales[g], lo, hi);
    t.l = 0;
    return t;
  });
}

void trial_asymmetric_lanes(const float* xt, const float* wt, int64_t n, const float* iscales, const float* mins,
                            float hi, LaneSums& out, bool reference) {
#if TK_X86
  if (!reference && use_avx2()) {
    trial_lanes_avx2<true>(xt, wt, n, iscales, mins, 0.0f, hi, out);
    return;
  }
#endif
  lanes_reference(xt, wt, n, out, [&](const float* x, const float* w, int g) {
    return trial_asymmetric_ref(x, w, n, iscales[g], mins[g], hi);
  });
}

void group_stats_lanes(const float* xt, const float* wt, int64_t n, GroupStats* out, bool reference) {
#if TK_X86
  if (!reference && use_avx2()) {
    group_stats_lanes_avx2(xt, wt, n, out);
    for (int g = 0; g < kLanes; ++g) {
      if (out[g].max == 0) out[g].max = 0.0f;
      if (out[g].min == 0) out[g].min = 0.0f;
    }
    return;
  }
#endif
  float x[kChunk], w[kChunk];
  for (int g = 0; g < kLanes; ++g) {
    from_lanes(xt, n, g, x);
    if (wt) from_lanes(wt, n, g, w);
    out[g] = group_stats(x, wt ? w : unit_weights(), n, true);
  }
}

GroupStats group_stats(const float* x, const float* w, int64_t n, bool reference) {
  GroupStats s;
#if TK_X86
  if (!reference && use_avx2()) s = group_stats_avx2(x, w, n);
  else
#endif
    s = group_stats_ref(x, w, n);
  return normalised_stats(s, x, n);
}

void codes_symmetric(const float* x, int64_t n, float inv, float lo, float hi, int offset, uint8_t* codes,
                     bool reference) {
  int64_t i = 0;
#if TK_X86
  if (!reference && use_avx2()) i = codes_symmetric_avx2(x, n, inv, lo, hi, offset, codes);
#endif
  for (; i < n; ++i) codes[i] = code_symmetric(x[i], inv, lo, hi, offset);
}

void codes_asymmetric(const float* x, int64_t n, float inv, float min, float hi, uint8_t* codes,
                      bool reference) {
  int64_t i = 0;
#if TK_X86
  if (!reference && use_avx2()) i = codes_asymmetric_avx2(x, n, inv, min, hi, codes);
#endif
  for (; i < n; ++i) codes[i] = code_asymmetric(x[i], inv, min, hi);
}

void pack_bits(const uint8_t* codes, int64_t n, int bits, uint8_t* out, bool reference) {
  if (bits == 8) {
    std::memcpy(out, codes, static_cast<size_t>(n));
    return;
  }
#if TK_X86
  if (!reference && use_avx2()) return pack_bits_bmi2(codes, n, bits, out);
#endif
  tk::detail::pack_codes(codes, bits, static_cast<uint64_t>(n), out);
}

void unpack_bits(const uint8_t* in, int64_t n, int bits, uint8_t* codes, bool reference) {
  if (bits == 8) {
    std::memcpy(codes, in, static_cast<size_t>(n));
    return;
  }
#if TK_X86
  if (!reference && use_avx2()) return unpack_bits_bmi2(in, n, bits, codes);
#endif
  tk::detail::unpack_codes(in, bits, 0, static_cast<uint64_t>(n), codes);
}

void decode_packed_affine(const uint8_t* packed, int64_t n, int bits, int offset, int64_t group, const float* d,
                          const float* m, float* y, bool stream, bool reference) {
#if TK_X86
  if (!reference && use_avx2()) return decode_packed_affine_avx2(packed, n, bits, offset, group, d, m, y, stream);
#endif
  uint8_t codes[kChunk];
  for (int64_t g0 = 0; g0 < n; g0 += group) {
    const float dg = d[g0 / group], mg = m ? m[g0 / group] : 0.0f;
    for (int64_t c = g0; c < g0 + group; c += kChunk) {
      const int64_t len = std::min(kChunk, g0 + group - c);
      unpack_bits(packed + c / 8 * bits, len, bits, codes, true);
      for (int64_t i = 0; i < len; ++i) y[c + i] = static_cast<float>(static_cast<int>(codes[i]) - offset) * dg + mg;
    }
  }
}

bool prefer_streaming_stores(uint64_t bytes) {
  // A fixed size rather than the reported cache: the C library reports a whole EPYC
  // socket's L3 (256 MiB) while a core uses its CCX's (32 MiB on Zen 3), shared with
  // other work. Measured on Zen 3: streaming stores decode 16 to 64 MiB outputs 1.3 to
  // 1.6x faster, while an 8 MiB output still gains from staying in cache.
  constexpr uint64_t kStreamingBytes = uint64_t{16} << 20;
  return bytes >= kStreamingBytes;
}

void expand_sub_scales(const uint8_t* q, int64_t supers, int subs, int bias, const float* d, bool negate, float* out,
                       bool reference) {
  int64_t s = 0;
#if TK_X86
  if (!reference && subs % 8 == 0 && use_avx2()) {
    expand_sub_scales_avx2(q, supers, subs, bias, d, negate, out);
    return;
  }
#endif
  for (; s < supers; ++s) {
    for (int i = 0; i < subs; ++i) {
      const int64_t k = s * subs + i;
      const float v = d[s] * static_cast<float>(static_cast<int>(q[k]) - bias);
      out[k] = negate ? -v : v;
    }
  }
}

void decode_packed_table(const uint8_t* packed, int64_t n, int bits, const float* table, int64_t group,
                         const float* scales, float* y, bool reference) {
#if TK_X86
  if (!reference && use_avx2()) return decode_packed_table_avx2(packed, n, bits, table, group, scales, y);
#endif
  uint8_t codes[kChunk];
  for (int64_t g0 = 0; g0 < n; g0 += group) {
    const float sg = scales[g0 / group];
    for (int64_t c = g0; c < g0 + group; c += kChunk) {
      const int64_t len = std::min(kChunk, g0 + group - c);
      unpack_bits(packed + c / 8 * bits, len, bits, codes, true);
      for (int64_t i = 0; i < len; ++i) y[c + i] = table[codes[i]] * sg;
    }
  }
}

void encode_minifloat(DType dtype, const float* v, int64_t n, uint8_t* codes, bool reference) {
  const tk::detail::FloatFormat& f = tk::detail::float_format(dtype);
  if (!reference) {
    tk::detail::float_format_encode_f32_array(f, v, codes, static_cast<size_t>(n), true);
    return;
  }
  for (int64_t i = 0; i < n; ++i) codes[i] = static_cast<uint8_t>(tk::detail::float_format_encode(f, v[i], true));
}

}  // namespace tk::quant::detail
