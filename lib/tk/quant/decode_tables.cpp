// Table and minifloat decoders (see decode_tables.h for the contract and the plans).
#include "tk/quant/decode_tables.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "tk/core/dtype_array.h"
#include "tk/core/float_format.h"
#include "tk/core/float_kernels.h"
#include "tk/core/isa.h"
#include "tk/quant/codebook_internal.h"
#include "tk/quant/quant_internal.h"
#if TK_X86
#include <immintrin.h>
#endif

namespace tk::quant::detail {
namespace {

bool same_bits(float a, float b) {
  uint32_t x = 0, y = 0;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

bool is_power_of_two(float v) {
  int e = 0;
  return v > 0 && std::isfinite(v) && std::frexp(v, &e) == 0.5f;
}

#if TK_X86
TK_BEGIN_AVX2

// The group's scale with the plan's factor folded in, if that gives the same products:
// factor is a power of two, so s * factor is exact unless it overflows or (factor < 1)
// lands below the normal range, where it may lose bits (NaN and Inf scales give the
// same NaN and Inf products). No division: this runs once per group of 16 or 32.
inline bool fold_factor(float s, float factor, float* folded) {
  *folded = s * factor;
  if (!std::isfinite(s)) return true;
  if (factor >= 1.0f) return std::isfinite(*folded);
  return s == 0.0f || std::fabs(*folded) >= std::numeric_limits<float>::min();
}

// The reference formula for one stretch of codes (a group the fast path leaves).
void decode_scalar(const uint8_t* packed, int64_t first, int64_t count, int bits, const float* table, float s,
                   float* y) {
  for (int64_t i = first; i < first + count; ++i) {
    uint8_t code = 0;
    tk::detail::unpack_codes(packed, bits, static_cast<uint64_t>(i), 1, &code);
    y[i] = table[code] * s;
  }
}

constexpr uint64_t kNibbles = 0x0F0F0F0F0F0F0F0FULL;
constexpr uint64_t kSixBits = 0x3F3F3F3F3F3F3F3FULL;

// Eight codes < 16 through a 16-entry table held in two registers.
inline __m256 lookup16(__m256 lo, __m256 hi, uint64_t codes) {
  const __m256i idx = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(codes)));
  const __m256 high = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));  // bit 3 -> sign bit
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx), high);
}

// Four-bit codes: the 16 entries times the group's scale once per group, then permutes.
void decode4_permute(const uint8_t* packed, int64_t n, const float* table, int64_t group, const float* scales,
                     float* y) {
  const __m256 lo = _mm256_loadu_ps(table), hi = _mm256_loadu_ps(table + 8);
  if (group == 16) {  // NVFP4: one step a group, so scaling the output is as cheap as the table
    for (int64_t i = 0, gi = 0; i < n; i += 16, ++gi) {
      const __m256 s = _mm256_broadcast_ss(scales + gi);
      uint64_t p = 0;
      std::memcpy(&p, packed + i / 2, 8);
      _mm256_storeu_ps(y + i, _mm256_mul_ps(lookup16(lo, hi, _pdep_u64(p, kNibbles)), s));
      _mm256_storeu_ps(y + i + 8, _mm256_mul_ps(lookup16(lo, hi, _pdep_u64(p >> 32, kNibbles)), s));
    }
    return;
  }
  if (group == 32) {  // MXFP4: the table scaled once a block, two steps without a loop
    for (int64_t i = 0, gi = 0; i < n; i += 32, ++gi) {
      const __m256 s = _mm256_broadcast_ss(scales + gi);
      const __m256 slo = _mm256_mul_ps(lo, s), shi = _mm256_mul_ps(hi, s);
      uint64_t p[2];
      std::memcpy(p, packed + i / 2, 16);
      _mm256_storeu_ps(y + i, lookup16(slo, shi, _pdep_u64(p[0], kNibbles)));
      _mm256_storeu_ps(y + i + 8, lookup16(slo, shi, _pdep_u64(p[0] >> 32, kNibbles)));
      _mm256_storeu_ps(y + i + 16, lookup16(slo, shi, _pdep_u64(p[1], kNibbles)));
      _mm256_storeu_ps(y + i + 24, lookup16(slo, shi, _pdep_u64(p[1] >> 32, kNibbles)));
    }
    return;
  }
  for (int64_t g0 = 0, gi = 0; g0 < n; g0 += group, ++gi) {
    const __m256 s = _mm256_set1_ps(scales[gi]);
    const __m256 slo = _mm256_mul_ps(lo, s), shi = _mm256_mul_ps(hi, s);
    const int64_t end = g0 + group;
    int64_t i = g0;
    for (; i + 16 <= end; i += 16) {
      uint64_t p = 0;
      std::memcpy(&p, packed + i / 2, 8);
      _mm256_storeu_ps(y + i, lookup16(slo, shi, _pdep_u64(p, kNibbles)));
      _mm256_storeu_ps(y + i + 8, lookup16(slo, shi, _pdep_u64(p >> 32, kNibbles)));
    }
    if (i < end) {
      uint32_t p = 0;
      std::memcpy(&p, packed + i / 2, 4);
      _mm256_storeu_ps(y + i, lookup16(slo, shi, _pdep_u64(p, kNibbles)));
    }
  }
}

// Up to 8 bytes of a stream that ends at `end`, without reading past it.
inline uint64_t load_bytes(const uint8_t* p, const uint8_t* end, int want) {
  uint64_t v = 0;
  std::memcpy(&v, p, end - p >= 8 ? 8 : static_cast<size_t>(want));
  return v;
}

// Sixteen codes at code index i (a multiple of 8) as 16-bit lanes.
template <int kBits> inline __m256i load16_codes(const uint8_t* packed, const uint8_t* end, int64_t i) {
  if constexpr (kBits == 8) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + i)));
  } else {
    const uint8_t* p = packed + i / 8 * 6;
    if (end - p >= 16) {
      // Both halves get the 12 bytes; each 16-bit lane takes the two bytes its code
      // starts in, a multiply moves the code to bits 10..15 and a shift brings it down.
      const __m256i bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 1, 2, 2, 3, 3, 4, 3, 4, 4, 5, 5, 6,  //
                                              6, 7, 6, 7, 7, 8, 8, 9, 9, 10, 9, 10, 10, 11, 11, 12);
      const __m256i to_top = _mm256_setr_epi16(1024, 16, 64, 256, 1024, 16, 64, 256,  //
                                               1024, 16, 64, 256, 1024, 16, 64, 256);
      return _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(bytes, spread), to_top), 10);
    }
    const uint64_t a = _pdep_u64(load_bytes(p, end, 6), kSixBits);
    const uint64_t b = _pdep_u64(load_bytes(p + 6, end, 6), kSixBits);
    return _mm256_cvtepu8_epi16(_mm_set_epi64x(static_cast<long long>(b), static_cast<long long>(a)));
  }
}
template <int kBits> inline __m128i load8_codes(const uint8_t* packed, const uint8_t* end, int64_t i) {
  if constexpr (kBits == 8) {
    uint64_t v = 0;
    std::memcpy(&v, packed + i, 8);
    return _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(v)));
  } else {
    const uint64_t a = _pdep_u64(load_bytes(packed + i / 8 * 6, end, 6), kSixBits);
    return _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(a)));
  }
}

// Minifloat codes: the code's magnitude bits moved into an f16's exponent and mantissa
// and its sign into the f16's sign, converted by F16C; the plan's power of two is folded
// into the scale.
struct MinifloatPlan {
  __m256i mag_mask, sign_mask, special_mask, special_value;
  __m128i mag_shift, sign_shift;
  bool has_special;
};

inline __m256i to_f16(const MinifloatPlan& m, __m256i c) {
  return _mm256_or_si256(_mm256_sll_epi16(_mm256_and_si256(c, m.mag_mask), m.mag_shift),
                         _mm256_sll_epi16(_mm256_and_si256(c, m.sign_mask), m.sign_shift));
}

inline bool any_special(const MinifloatPlan& m, __m256i c) {
  if (!m.has_special) return false;
  const __m256i hit = _mm256_cmpeq_epi16(_mm256_and_si256(c, m.special_mask), m.special_value);
  return !_mm256_testz_si256(hit, hit);
}

// Sixteen codes at i under scale s (folded: vs).
template <int kBits>
inline void decode16_minifloat(const MinifloatPlan& m, const uint8_t* packed, const uint8_t* end, int64_t i,
                               const float* table, float s, __m256 vs, float* y) {
  const __m256i c = load16_codes<kBits>(packed, end, i);
  if (any_special(m, c)) {
    decode_scalar(packed, i, 16, kBits, table, s, y);
    return;
  }
  const __m256i h = to_f16(m, c);
  _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), vs));
  _mm256_storeu_ps(y + i + 8, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), vs));
}

template <int kBits>
void decode_minifloat(const MinifloatPlan& m, const uint8_t* packed, int64_t n, const float* table, float factor,
                      int64_t group, const float* scales, float* y) {
  const uint8_t* end = packed + n / 8 * kBits;
  if (group == 32) {  // MX blocks: two steps a block without an inner loop
    for (int64_t g0 = 0, gi = 0; g0 < n; g0 += 32, ++gi) {
      float folded = 0;
      if (!fold_factor(scales[gi], factor, &folded)) {
        decode_scalar(packed, g0, 32, kBits, table, scales[gi], y);
        continue;
      }
      const __m256 vs = _mm256_set1_ps(folded);
      decode16_minifloat<kBits>(m, packed, end, g0, table, scales[gi], vs, y);
      decode16_minifloat<kBits>(m, packed, end, g0 + 16, table, scales[gi], vs, y);
    }
    return;
  }
  for (int64_t g0 = 0, gi = 0; g0 < n; g0 += group, ++gi) {
    float folded = 0;
    if (!fold_factor(scales[gi], factor, &folded)) {
      decode_scalar(packed, g0, group, kBits, table, scales[gi], y);
      continue;
    }
    const __m256 vs = _mm256_set1_ps(folded);
    const int64_t stop = g0 + group;
    int64_t i = g0;
    for (; i + 16 <= stop; i += 16) decode16_minifloat<kBits>(m, packed, end, i, table, scales[gi], vs, y);
    if (i < stop) {
      // The upper lanes zero: never special, as special_value is not 0.
      const __m256i c8 = _mm256_inserti128_si256(_mm256_setzero_si256(), load8_codes<kBits>(packed, end, i), 0);
      if (any_special(m, c8)) {
        decode_scalar(packed, i, 8, kBits, table, scales[gi], y);
        continue;
      }
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(to_f16(m, c8))), vs));
    }
  }
}

// Int8 codes times a power of two (MXINT8), folded into the scale.
void decode_int8(const uint8_t* packed, int64_t n, const float* table, float factor, int64_t group,
                 const float* scales, float* y) {
  for (int64_t g0 = 0, gi = 0; g0 < n; g0 += group, ++gi) {
    float folded = 0;
    if (!fold_factor(scales[gi], factor, &folded)) {
      decode_scalar(packed, g0, group, 8, table, scales[gi], y);
      continue;
    }
    const __m256 s = _mm256_set1_ps(folded);
    for (int64_t i = g0; i < g0 + group; i += 8) {
      uint64_t v = 0;
      std::memcpy(&v, packed + i, 8);
      const __m256i c = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(static_cast<long long>(v)));
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(c), s));
    }
  }
}

// The pdep mask that spreads eight `bits`-wide codes (bits < 8) over the byte lanes.
inline uint64_t byte_lanes_mask(int bits) {
  uint64_t mask = 0;
  for (int j = 0; j < 8; ++j) mask |= ((uint64_t{1} << bits) - 1) << (8 * j);
  return mask;
}

// Codes index .. index + 7 of an LSB-first `bits`-wide stream, one per byte lane of *c:
// eight codes span at most 8 * 7 bits plus the starting bit's offset, one 64-bit window.
// False when that window would read past the stream's end (the caller then goes code
// by code).
inline bool eight_codes(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t index, uint64_t mask,
                        uint64_t* c) {
  const uint64_t bit = index * static_cast<uint64_t>(bits);
  if ((bit >> 3) + 8 > code_bytes) return false;
  uint64_t window = 0;
  std::memcpy(&window, codes + (bit >> 3), 8);
  *c = _pdep_u64(window >> (bit & 7), mask);
  return true;
}

// Codes index .. index + 31 of such a stream, one per byte lane of *idx (four
// eight_codes windows); false when the last window would read past the stream's end.
inline bool thirty_two_codes(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t index, uint64_t mask,
                             __m256i* idx) {
  uint64_t c[4];
  for (int q = 0; q < 4; ++q)
    if (!eight_codes(codes, code_bytes, bits, index + 8 * q, mask, &c[q])) return false;
  *idx = _mm256_setr_epi64x(static_cast<long long>(c[0]), static_cast<long long>(c[1]), static_cast<long long>(c[2]),
                            static_cast<long long>(c[3]));
  return true;
}

// Thirty-two codes of kBits (4..8) starting at a whole byte p, one per byte lane as
// thirty_two_codes gives them, without scalar windows: each 128-bit lane takes eight
// codes (kBits bytes), vpshufb puts the two bytes holding each code in a 16-bit lane,
// and a multiply-high by 2^(16 - shift) shifts it down (a code at shift 0 is taken
// from the high byte, shift 8). Reads p[0 .. 3 kBits + 16).
template <int kBits> struct UnpackConstants {
  __m256i shuffle, multiplier, mask;
  UnpackConstants() {
    alignas(32) uint8_t sh[32];
    alignas(32) uint16_t mul[16];
    for (int j = 0; j < 16; ++j) {
      const int bit = kBits * (j % 8), byte = bit >> 3, shift = bit & 7;
      sh[2 * j] = shift == 0 ? 0x80 : static_cast<uint8_t>(byte);
      sh[2 * j + 1] = static_cast<uint8_t>(shift == 0 ? byte : byte + 1);
      mul[j] = static_cast<uint16_t>(1u << (shift == 0 ? 8 : 16 - shift));
    }
    shuffle = _mm256_load_si256(reinterpret_cast<const __m256i*>(sh));
    multiplier = _mm256_load_si256(reinterpret_cast<const __m256i*>(mul));
    mask = _mm256_set1_epi16(static_cast<short>((1 << kBits) - 1));
  }
};

// Whether codes index .. index + 31 of a `bits`-wide stream of code_bytes can go through
// thirty_two_aligned: index starts a byte, and the reads stay inside the stream.
inline bool unpacks_aligned(uint64_t index, int bits, uint64_t code_bytes) {
  return index % 8 == 0 && index / 8 * bits + 3 * bits + 16 <= code_bytes;
}

// Codes index .. index + 31 (unpacks_aligned holds).
template <int kBits>
inline __m256i thirty_two_aligned(const UnpackConstants<kBits>& k, const uint8_t* codes, uint64_t index) {
  const uint8_t* p = codes + index / 8 * kBits;
  auto sixteen = [&](const uint8_t* q) {
    const __m256i v = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(q + kBits), reinterpret_cast<const __m128i*>(q));
    return _mm256_and_si256(_mm256_mulhi_epu16(_mm256_shuffle_epi8(v, k.shuffle), k.multiplier), k.mask);
  };
  // packus interleaves the halves: codes 0-7, 16-23 | 8-15, 24-31; vpermq restores order.
  return _mm256_permute4x64_epi64(_mm256_packus_epi16(sixteen(p), sixteen(p + 2 * kBits)), 0xd8);
}

// v as an f16 in *h; false when v is not exactly an f16 value (F16C would not give its
// bits back), so a byte-plane table of it would decode other values.
inline bool exact_f16(float v, uint16_t* h) {
  *h = static_cast<uint16_t>(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
  return same_bits(_cvtsh_ss(*h), v);
}

// A 16-entry vpshufb table in both 128-bit lanes.
inline __m256i lane_table(const uint8_t* bytes16) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes16)));
}

// Unpack codes first .. first + count - 1 of an LSB-first `bits`-wide stream (bits 1..16,
// count <= kChunk) into idx: 8 codes a 64-bit window for up to 7 bits (56 bits plus the
// start's offset), 4 for 9..16 (at most 63 bits), plain bytes for 8. Past the last whole
// window, codes are read one at a time. Returns nothing; idx[0 .. count) is filled.
constexpr uint64_t kChunk = 64;
// From 6 bits on, scalar table loads beat the in-register permutes (8 lookups and 6
// blends per 8 codes at 6 bits).
constexpr int kLoadsFromBits = 6;
static_assert(kLoadsFromBits <= 6, "the permute path holds at most 32 levels");

void unpack_chunk(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                  uint16_t* idx) {
  uint64_t i = 0;
  if (bits == 8) {
    for (; i + 8 <= count; i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(idx + i),
                       _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + first + i))));
    }
  } else if (bits < 8) {
    const uint64_t mask = byte_lanes_mask(bits);
    for (uint64_t c = 0; i + 8 <= count && eight_codes(codes, code_bytes, bits, first + i, mask, &c); i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(idx + i),
                       _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(c))));
    }
  } else {
    uint64_t mask = 0;
    for (uint64_t j = 0; j < 4; ++j) mask |= ((uint64_t{1} << bits) - 1) << (16 * j);
    for (; i + 4 <= count; i += 4) {
      const uint64_t bit = (first + i) * static_cast<uint64_t>(bits);
      if ((bit >> 3) + 8 > code_bytes) break;
      uint64_t window = 0;
      std::memcpy(&window, codes + (bit >> 3), 8);
      const uint64_t c = _pdep_u64(window >> (bit & 7), mask);
      std::memcpy(idx + i, &c, 8);
    }
  }
  for (; i < count; ++i) idx[i] = static_cast<uint16_t>(cbdetail::unpack_code(codes, code_bytes, bits, first + i));
}

// The four entries picked by the bytes of c: byte moves and shifts within 32 bits take
// fewer instructions than picking bytes out of a 64-bit register.
inline __m128 lookup_four(const float* table, uint32_t c) {
  return _mm_set_ps(table[c >> 24], table[(c >> 16) & 0xff], table[(c >> 8) & 0xff], table[c & 0xff]);
}

// Eight table entries picked by the eight byte lanes of c, as one register. Scalar loads
// from the L1-resident table: on Zen 3 they beat a gather by about 2x, and the codes
// come from a register, so no load waits on the stores before it.
inline __m256 lookup_bytes(const float* table, uint64_t c) {
  return _mm256_set_m128(lookup_four(table, static_cast<uint32_t>(c >> 32)), lookup_four(table, static_cast<uint32_t>(c)));
}

// n (a multiple of 16) byte codes through the levels, sixteen a step: independent
// chains of loads and inserts.
inline void bytes_through_loads(const uint8_t* bytes, uint64_t n, const float* levels, float* out) {
  for (uint64_t i = 0; i < n; i += 16) {
    uint32_t c[4];
    std::memcpy(c, bytes + i, 16);
    _mm256_storeu_ps(out + i, _mm256_set_m128(lookup_four(levels, c[1]), lookup_four(levels, c[0])));
    _mm256_storeu_ps(out + i + 8, _mm256_set_m128(lookup_four(levels, c[3]), lookup_four(levels, c[2])));
  }
}

// Levels of kLoadsFromBits..8 bits through scalar loads: 8-bit codes sixteen a step;
// byte-aligned runs of 7-bit codes unpacked to bytes first, 256 at a time (the
// pdep windows cost more than the vector unpack: 11.8 against 10.4 GB/s on the 16-row
// block, and the 7-bit byte planes, 16 tables, gave no more than the windows); other
// codes eight a step from pdep windows.
void decode_levels_loads(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                         const float* levels, float* out) {
  uint64_t i = 0;
  if (bits == 8) {
    bytes_through_loads(codes + first, count & ~uint64_t{15}, levels, out);
    i = count & ~uint64_t{15};
  } else if (bits == 7) {
    // Runs of 256 codes unpacked to bytes in vector registers, then looked up as bytes.
    const UnpackConstants<7> unpack;
    alignas(32) uint8_t run[256];
    for (; i + 256 <= count && unpacks_aligned(first + i + 224, 7, code_bytes); i += 256) {
      for (int k = 0; k < 256; k += 32)
        _mm256_store_si256(reinterpret_cast<__m256i*>(run + k), thirty_two_aligned<7>(unpack, codes, first + i + k));
      bytes_through_loads(run, 256, levels, out + i);
    }
  }
  if (bits != 8) {
    const uint64_t mask = byte_lanes_mask(bits);
    for (uint64_t c = 0; i + 8 <= count && eight_codes(codes, code_bytes, bits, first + i, mask, &c); i += 8)
      _mm256_storeu_ps(out + i, lookup_bytes(levels, c));
  }
  for (; i < count; ++i) out[i] = levels[cbdetail::unpack_code(codes, code_bytes, bits, first + i)];
}

// Levels that are all f16 values (a k-means codebook is stored as f16) and codes of 4..6
// bits decode 32 at a time through byte lookups: vpshufb picks one of 16 bytes per lane,
// so each byte of the f16 levels is a plane of 16-entry slices. Slice k of a plane holds
// that byte of levels 16k..16k+15 XORed with slice k-1's; looking code c up in slice k
// at index c - 16k gives zero where that index is negative (vpshufb zeroes lanes whose
// index has bit 7 set), so the XOR over all slices leaves exactly slice c >> 4's byte.
// Two planes, then F16C widens the values to f32. At 6 bits that is 8 lookups and 6
// XORs per 32 codes against 32 scalar loads and 24 inserts; at 7 bits the 16 tables
// no longer fit the 16 registers (no faster than scalar loads of unpacked bytes, above),
// and at 8 bits (16 slices, bit 7 in use) the scalar loads win.
constexpr int kBytePlaneMaxBits = 6;

struct BytePlanes {
  int slices = 0;
  __m256i lo[1 << (kBytePlaneMaxBits - 4)];
  __m256i hi[1 << (kBytePlaneMaxBits - 4)];
};

// False where some level is not exactly an f16 value (F16C would not give its bits back).
bool make_byte_planes(const float* levels, int bits, BytePlanes* planes) {
  const int n = 1 << bits;
  uint16_t h[1 << kBytePlaneMaxBits];
  for (int j = 0; j < n; ++j)
    if (!exact_f16(levels[j], &h[j])) return false;
  planes->slices = n / 16;
  for (int k = 0; k < planes->slices; ++k) {
    uint8_t lo[16], hi[16];
    for (int j = 0; j < 16; ++j) {
      const uint16_t v = static_cast<uint16_t>(h[16 * k + j] ^ (k > 0 ? h[16 * (k - 1) + j] : 0));
      lo[j] = static_cast<uint8_t>(v & 0xff);
      hi[j] = static_cast<uint8_t>(v >> 8);
    }
    planes->lo[k] = lane_table(lo);
    planes->hi[k] = lane_table(hi);
  }
  return true;
}

// Both planes' bytes for 32 codes, slice by slice: one index per slice serves both
// planes, and the two running XORs are all that stays live besides the codes.
template <int kSlices>
inline void planes_lookup(const BytePlanes& planes, __m256i codes, __m256i* lo, __m256i* hi) {
  const __m256i sixteen = _mm256_set1_epi8(16);
  __m256i l = _mm256_shuffle_epi8(planes.lo[0], codes), h = _mm256_shuffle_epi8(planes.hi[0], codes);
  for (int k = 1; k < kSlices; ++k) {
    codes = _mm256_sub_epi8(codes, sixteen);
    l = _mm256_xor_si256(l, _mm256_shuffle_epi8(planes.lo[k], codes));
    h = _mm256_xor_si256(h, _mm256_shuffle_epi8(planes.hi[k], codes));
  }
  *lo = l;
  *hi = h;
}

// The unrolled body for one width; returns how many codes it decoded (a multiple of 32,
// stopping where the last 64-bit window would read past the stream).
template <int kBits>
[[gnu::noinline]] uint64_t decode_byte_planes(const uint8_t* codes, uint64_t code_bytes, uint64_t first, uint64_t count,
                            const BytePlanes& planes, float* out) {
  constexpr int kSlices = 1 << (kBits - 4);
  const uint64_t mask = byte_lanes_mask(kBits);
  // Byte-aligned runs unpack in vector registers while 3 kBits + 16 bytes remain.
  const UnpackConstants<kBits> unpack;
  uint64_t i = 0;
  for (__m256i idx; i + 32 <= count; i += 32) {
    if (unpacks_aligned(first + i, kBits, code_bytes)) {
      idx = thirty_two_aligned<kBits>(unpack, codes, first + i);
    } else if (!thirty_two_codes(codes, code_bytes, kBits, first + i, mask, &idx)) {
      break;
    }
    __m256i lo, hi;
    planes_lookup<kSlices>(planes, idx, &lo, &hi);
    // Per 128-bit lane, unpacklo holds codes 0-7 (16-23) and unpackhi codes 8-15 (24-31).
    const __m256i a = _mm256_unpacklo_epi8(lo, hi), b = _mm256_unpackhi_epi8(lo, hi);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm256_castsi256_si128(a)));
    _mm256_storeu_ps(out + i + 8, _mm256_cvtph_ps(_mm256_castsi256_si128(b)));
    _mm256_storeu_ps(out + i + 16, _mm256_cvtph_ps(_mm256_extracti128_si256(a, 1)));
    _mm256_storeu_ps(out + i + 24, _mm256_cvtph_ps(_mm256_extracti128_si256(b, 1)));
  }
  return i;
}

// Codes of 4..6 bits through the byte planes, when there are enough of them to repay
// the tables (16 per level) and the levels are f16 values. Returns how many codes it
// decoded (the caller finishes the rest), 0 where it does not apply.
uint64_t decode_levels_planes(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                              const float* levels, float* out) {
  if (bits < 4 || bits > kBytePlaneMaxBits || count < (uint64_t{16} << bits)) return 0;
  BytePlanes planes;
  if (!make_byte_planes(levels, bits, &planes)) return 0;
  switch (bits) {
    case 4: return decode_byte_planes<4>(codes, code_bytes, first, count, planes, out);
    case 5: return decode_byte_planes<5>(codes, code_bytes, first, count, planes, out);
    default: return decode_byte_planes<6>(codes, code_bytes, first, count, planes, out);
  }
}

// Vector codes of kDim values: each codeword times the scale, stored as one register
// of kWidth >= kDim floats that the next code's store partly overwrites (so the book
// needs kWidth - kDim readable floats past its end); the last codes of the run, whose
// register would reach past out's end, go value by value.
template <int kDim>
void decode_vectors_dim(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                        const float* book, float scale, float* out) {
  constexpr uint64_t kWidth = kDim <= 2 ? kDim : kDim <= 4 ? 4 : (kDim + 7) / 8 * 8;
  const uint64_t total = count * kDim;
  const __m256 s = _mm256_set1_ps(scale);
  const __m128 s4 = _mm256_castps256_ps128(s);
  uint16_t idx[kChunk];
  for (uint64_t i = 0; i < count; i += kChunk) {
    const uint64_t n = std::min(kChunk, count - i);
    unpack_chunk(codes, code_bytes, bits, first + i, n, idx);
    uint64_t j = 0;
    if constexpr (kDim == 2) {  // four codewords a register: one multiply and one store
      for (; j + 4 <= n && (i + j + 4) * 2 <= total; j += 4) {
        double w[4];
        for (int k = 0; k < 4; ++k) std::memcpy(&w[k], book + static_cast<uint64_t>(idx[j + k]) * 2, 8);
        const __m256 v = _mm256_castpd_ps(_mm256_set_pd(w[3], w[2], w[1], w[0]));
        _mm256_storeu_ps(out + (i + j) * 2, _mm256_mul_ps(v, s));
      }
    } else if constexpr (kDim == 4) {  // two codewords a register
      for (; j + 2 <= n; j += 2) {
        const __m256 v = _mm256_loadu2_m128(book + static_cast<uint64_t>(idx[j + 1]) * 4,
                                            book + static_cast<uint64_t>(idx[j]) * 4);
        _mm256_storeu_ps(out + (i + j) * 4, _mm256_mul_ps(v, s));
      }
    }
    for (; j < n; ++j) {
      const float* cw = book + static_cast<uint64_t>(idx[j]) * kDim;
      float* dst = out + (i + j) * kDim;
      if ((i + j) * kDim + kWidth > total) {
        for (int d = 0; d < kDim; ++d) dst[d] = cw[d] * scale;
        continue;
      }
      if constexpr (kDim == 1) {
        dst[0] = cw[0] * scale;
      } else if constexpr (kDim == 2) {
        const __m128 v = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(cw)));
        _mm_store_sd(reinterpret_cast<double*>(dst), _mm_castps_pd(_mm_mul_ps(v, s4)));
      } else if constexpr (kWidth == 4) {
        _mm_storeu_ps(dst, _mm_mul_ps(_mm_loadu_ps(cw), s4));
      } else {
        for (uint64_t d = 0; d < kWidth; d += 8) _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_loadu_ps(cw + d), s));
      }
    }
  }
}

// Two-value codewords of f16 values from a book of at most 16, 32 codes a step: each of
// the four bytes of a codeword is a 16-entry vpshufb table, the planes are interleaved
// back into f16 pairs and widened by F16C, then scaled (as the reference: book value
// times scale, one rounding). Returns how many codes it decoded (the caller finishes
// the run), 0 where some book value is not exactly an f16 value.
uint64_t decode_pairs_by_planes(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first,
                                uint64_t count, const float* book, float scale, float* out) {
  uint8_t plane[4][16] = {};
  for (int c = 0; c < (1 << bits); ++c) {
    for (int d = 0; d < 2; ++d) {
      uint16_t h = 0;
      if (!exact_f16(book[2 * c + d], &h)) return 0;
      plane[2 * d][c] = static_cast<uint8_t>(h & 0xff);
      plane[2 * d + 1][c] = static_cast<uint8_t>(h >> 8);
    }
  }
  __m256i p[4];
  for (int k = 0; k < 4; ++k) p[k] = lane_table(plane[k]);
  const __m256 s = _mm256_set1_ps(scale);
  const uint64_t mask = byte_lanes_mask(bits);
  uint64_t i = 0;
  for (__m256i idx; i + 32 <= count && thirty_two_codes(codes, code_bytes, bits, first + i, mask, &idx); i += 32) {
    // Per 128-bit lane (codes 0-15, 16-31): first values of codes 0-7 / 8-15, then seconds.
    const __m256i b0 = _mm256_shuffle_epi8(p[0], idx), b1 = _mm256_shuffle_epi8(p[1], idx);
    const __m256i b2 = _mm256_shuffle_epi8(p[2], idx), b3 = _mm256_shuffle_epi8(p[3], idx);
    const __m256i first_lo = _mm256_unpacklo_epi8(b0, b1), first_hi = _mm256_unpackhi_epi8(b0, b1);
    const __m256i second_lo = _mm256_unpacklo_epi8(b2, b3), second_hi = _mm256_unpackhi_epi8(b2, b3);
    // Four codes (eight f16) per 128-bit half: codes 0-3, 4-7, 8-11, 12-15 (+16 above).
    const __m256i quad[4] = {_mm256_unpacklo_epi16(first_lo, second_lo), _mm256_unpackhi_epi16(first_lo, second_lo),
                             _mm256_unpacklo_epi16(first_hi, second_hi), _mm256_unpackhi_epi16(first_hi, second_hi)};
    float* dst = out + 2 * i;
    for (int k = 0; k < 4; ++k) {
      _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(quad[k])), s));
      _mm256_storeu_ps(dst + 32 + 8 * k, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(quad[k], 1)), s));
    }
  }
  return i;
}

template <int... kDims>
bool decode_vectors_any(std::integer_sequence<int, kDims...>, const uint8_t* codes, uint64_t code_bytes, int bits,
                        uint64_t first, uint64_t count, const float* book, int dim, float scale, float* out) {
  return ((dim == kDims + 1 &&
           (decode_vectors_dim<kDims + 1>(codes, code_bytes, bits, first, count, book, scale, out), true)) ||
          ...);
}

// The AVX2 body of decode_levels.
void decode_levels_avx2(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                        const float* levels, float* out) {
  const uint64_t planed = decode_levels_planes(codes, code_bytes, bits, first, count, levels, out);
  first += planed, count -= planed, out += planed;
  if (bits >= kLoadsFromBits) {
    decode_levels_loads(codes, code_bytes, bits, first, count, levels, out);
    return;
  }
  uint64_t i = 0;
  float padded[32] = {};
  std::copy(levels, levels + (1 << bits), padded);
  __m256 t[4];
  for (int k = 0; k < 4; ++k) t[k] = _mm256_loadu_ps(padded + 8 * k);
  const __m256 lo = t[0], hi = t[1];
  if (bits == 4 && first % 2 == 0) {  // byte-aligned nibbles: 16 codes a load, no shifts
    const uint8_t* p = codes + first / 2;
    for (; i + 16 <= count && first / 2 + i / 2 + 8 <= code_bytes; i += 16) {
      uint64_t w = 0;
      std::memcpy(&w, p + i / 2, 8);
      _mm256_storeu_ps(out + i, lookup16(lo, hi, _pdep_u64(w, kNibbles)));
      _mm256_storeu_ps(out + i + 8, lookup16(lo, hi, _pdep_u64(w >> 32, kNibbles)));
    }
  }
  const uint64_t mask = byte_lanes_mask(bits);
  for (uint64_t c = 0; i + 8 <= count && eight_codes(codes, code_bytes, bits, first + i, mask, &c); i += 8) {
    __m256 v;
    if (bits <= 3) {
      v = _mm256_permutevar8x32_ps(lo, _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(c))));
    } else if (bits == 4) {
      v = lookup16(lo, hi, c);
    } else {
      // 32 levels: 16-entry lookups chosen between on bit 4.
      const __m256i idx = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(c)));
      const __m256 bit4 = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 27));
      v = _mm256_blendv_ps(lookup16(t[0], t[1], c), lookup16(t[2], t[3], c), bit4);
    }
    _mm256_storeu_ps(out + i, v);
  }
  for (; i < count; ++i) out[i] = levels[cbdetail::unpack_code(codes, code_bytes, bits, first + i)];
}

// The AVX2 body of decode_vectors, for 1 <= dim <= 16.
void decode_vectors_avx2(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                         const float* book, int dim, float scale, float* out) {
  if (dim == 2 && bits <= 4) {
    const uint64_t done = decode_pairs_by_planes(codes, code_bytes, bits, first, count, book, scale, out);
    first += done, count -= done, out += 2 * done;
  }
  decode_vectors_any(std::make_integer_sequence<int, 16>(), codes, code_bytes, bits, first, count, book, dim, scale,
                     out);
}

// The AVX2 body of CodeTable::decode_scaled for the plans with a kernel of their own;
// false for the others.
bool decode_planned_avx2(CodeTable::Plan plan, int bits, const float* table, float factor, uint16_t mag_mask,
                         uint16_t sign_mask, uint16_t special_mask, uint16_t special_value, uint16_t mag_shift,
                         uint16_t sign_shift, const uint8_t* packed, int64_t n, int64_t group, const float* scales,
                         float* y) {
  switch (plan) {
    case CodeTable::Plan::kPermute: decode4_permute(packed, n, table, group, scales, y); return true;
    case CodeTable::Plan::kInt8: decode_int8(packed, n, table, factor, group, scales, y); return true;
    case CodeTable::Plan::kMinifloat: {
      MinifloatPlan m;
      m.mag_mask = _mm256_set1_epi16(static_cast<short>(mag_mask));
      m.sign_mask = _mm256_set1_epi16(static_cast<short>(sign_mask));
      m.special_mask = _mm256_set1_epi16(static_cast<short>(special_mask));
      m.special_value = _mm256_set1_epi16(static_cast<short>(special_value));
      m.mag_shift = _mm_cvtsi32_si128(mag_shift);
      m.sign_shift = _mm_cvtsi32_si128(sign_shift);
      m.has_special = special_mask != 0;
      if (bits == 8) {
        decode_minifloat<8>(m, packed, n, table, factor, group, scales, y);
      } else {
        decode_minifloat<6>(m, packed, n, table, factor, group, scales, y);
      }
      return true;
    }
    default: return false;
  }
}

TK_END_TARGET
#endif  // TK_X86

}  // namespace

CodeTable::CodeTable(int bits, const float* table, DType format)
    : bits_(bits), table_(static_cast<size_t>(std::max(16, 1 << bits)), 0.0f) {
  std::copy(table, table + (1 << bits), table_.begin());
  // The plans are for the AVX2 kernels; built whenever the processor has them, so that a
  // table made on one path decodes on any.
  if (!isa_supported(Isa::kAvx2)) return;
  plan_ = bits == 4 ? Plan::kPermute : Plan::kGather;
  if (bits != 8 && bits != 6) return;
  if (format == DType::kI8 && bits == 8) {
    factor_ = table_[1];
    if (!is_power_of_two(factor_)) return;
    for (int c = 0; c < 256; ++c) {
      if (!same_bits(static_cast<float>(static_cast<int8_t>(c)) * factor_, table_[c])) return;
    }
    plan_ = Plan::kInt8;
    return;
  }
  if (format != DType::kF8E4M3 && format != DType::kF8E5M2 && format != DType::kF6E2M3 &&
      format != DType::kF6E3M2) {
    return;
  }
  const tk::detail::FloatFormat& f = tk::detail::float_format(format);
  const int exponent_bits = f.bits - 1 - f.mantissa_bits;
  if (f.bits != bits || !f.is_signed || f.fnuz || exponent_bits > 5) return;
  mag_mask_ = static_cast<uint16_t>((1u << (bits - 1)) - 1);
  mag_shift_ = static_cast<uint16_t>(10 - f.mantissa_bits);
  sign_mask_ = static_cast<uint16_t>(1u << (bits - 1));
  sign_shift_ = static_cast<uint16_t>(16 - bits);
  if (f.ieee_specials) {  // all-ones exponent: Inf and NaN
    special_mask_ = static_cast<uint16_t>(((1u << exponent_bits) - 1) << f.mantissa_bits);
    special_value_ = special_mask_;
  } else if (f.nan_magnitude != 0) {
    special_mask_ = mag_mask_;
    special_value_ = static_cast<uint16_t>(f.nan_magnitude);
  }
  factor_ = std::ldexp(1.0f, 15 - f.bias);
  for (int c = 0; c < (1 << bits); ++c) {
    if (special_mask_ != 0 && (c & special_mask_) == special_value_) continue;
    const auto h = static_cast<uint16_t>(((c & mag_mask_) << mag_shift_) | ((c & sign_mask_) << sign_shift_));
    float widened = 0;
    tk::detail::f16_to_f32_array_portable(&h, &widened, 1);
    if (!same_bits(widened * factor_, table_[c])) return;
  }
  plan_ = Plan::kMinifloat;
}

void CodeTable::decode_scaled(const uint8_t* packed, int64_t n, int64_t group, const float* scales, float* y,
                              bool reference) const {
#if TK_X86
  if (!reference && use_avx2() &&
      decode_planned_avx2(plan_, bits_, table_.data(), factor_, mag_mask_, sign_mask_, special_mask_, special_value_,
                          mag_shift_, sign_shift_, packed, n, group, scales, y)) {
    return;
  }
#endif
  decode_packed_table(packed, n, bits_, table_.data(), group, scales, y, reference);
}

bool decode_levels(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                   const float* levels, float* out) {
#if TK_X86
  if (use_avx2()) {
    decode_levels_avx2(codes, code_bytes, bits, first, count, levels, out);
    return true;
  }
#endif
  return false;
}

bool decode_vectors(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                    const float* book, int dim, float scale, float* out) {
#if TK_X86
  if (dim >= 1 && dim <= 16 && use_avx2()) {
    decode_vectors_avx2(codes, code_bytes, bits, first, count, book, dim, scale, out);
    return true;
  }
#endif
  return false;
}

void decode_e8m0(const uint8_t* codes, int64_t n, float* out) {
  const float* table = tk::detail::minifloat_table(DType::kF8E8M0);  // core's E8M0 decoding
  for (int64_t i = 0; i < n; ++i) out[i] = table[codes[i]];
}

}  // namespace tk::quant::detail
