// Array conversions: packed sub-byte layout, cast_array semantics, and the fast paths
// (F16C, vectorised loops, OpenMP blocks) against the scalar reference functions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/core/dtype_array.h"
#include "tk/core/error.h"
#include "tk/core/float_kernels.h"

namespace tk {
namespace {

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();

// Random f32 bit patterns mixed with the cases that break careless kernels: NaNs with
// payloads, Inf, zeros, f32 and f16 subnormals, F16/BF16 ties and overflow boundaries.
std::vector<float> hard_f32_inputs(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  const uint32_t specials[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fbfffffu,
                               0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x33000000u, 0x33000001u,
                               0x477ff000u, 0x477fefffu, 0x477fe000u, 0x38800000u, 0x387fe000u, 0x3f808000u,
                               0x3f818000u, 0x7f7fffffu, 0x7f7f8000u, 0xff7f7fffu, 0x3c00d000u, 0x3c001000u};
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = rng();
    switch (i % 4) {
      case 0: break;                                                   // any pattern
      case 1: bits = specials[rng() % std::size(specials)]; break;
      case 2: bits = (bits & 0x8fffffffu) | 0x30000000u; break;        // around the f16 range
      case 3: bits = (bits & 0xffff0000u) | (rng() % 2 ? 0x8000u : 0x1000u); break;  // ties
    }
    std::memcpy(&v[i], &bits, 4);
  }
  return v;
}

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }

TEST(FastPaths, F32ToF16MatchesReference) {
  const std::vector<float> in = hard_f32_inputs(300001, 1);
  std::vector<uint16_t> fast(in.size()), portable(in.size()), via_cast(in.size());
  detail::f32_to_f16_array(in.data(), fast.data(), in.size());
  detail::f32_to_f16_array_portable(in.data(), portable.data(), in.size());
  cast_array(DType::kF32, in.data(), DType::kF16, via_cast.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t ref = f32_to_f16(in[i]);
    ASSERT_EQ(fast[i], ref) << "i=" << i << " bits 0x" << std::hex << bits_of(in[i]);
    ASSERT_EQ(portable[i], ref) << "i=" << i << " bits 0x" << std::hex << bits_of(in[i]);
    ASSERT_EQ(via_cast[i], ref) << "i=" << i;
  }
}

TEST(FastPaths, F32ToBF16MatchesReference) {
  const std::vector<float> in = hard_f32_inputs(300001, 2);
  std::vector<uint16_t> fast(in.size()), via_cast(in.size());
  detail::f32_to_bf16_array(in.data(), fast.data(), in.size());
  cast_array(DType::kF32, in.data(), DType::kBF16, via_cast.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t ref = f32_to_bf16(in[i]);
    ASSERT_EQ(fast[i], ref) << "i=" << i << " bits 0x" << std::hex << bits_of(in[i]);
    ASSERT_EQ(via_cast[i], ref) << "i=" << i;
  }
}

TEST(FastPaths, HalfToF32MatchesReferenceForEveryCode) {
  // Every code, repeated past the parallel threshold, starting at an odd offset.
  std::vector<uint16_t> codes(detail::kParallelThreshold + 7);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint16_t>(i * 40503u);
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    std::vector<float> fast(codes.size() - 3), portable(codes.size());
    convert_to_f32(dtype, codes.data(), 3, fast.size(), fast.data());
    if (dtype == DType::kF16) detail::f16_to_f32_array_portable(codes.data(), portable.data(), codes.size());
    for (size_t i = 0; i < fast.size(); ++i) {
      const uint16_t c = codes[i + 3];
      const float ref = dtype == DType::kF16 ? f16_to_f32(c) : bf16_to_f32(c);
      ASSERT_EQ(bits_of(fast[i]), bits_of(ref)) << dtype_name(dtype) << " code 0x" << std::hex << c;
      if (dtype == DType::kF16) {
        ASSERT_EQ(bits_of(portable[i + 3]), bits_of(ref)) << "code 0x" << std::hex << c;
      }
    }
  }
}

TEST(FastPaths, MinifloatArrayEncodeMatchesScalar) {
  std::vector<float> in = hard_f32_inputs(100000, 6);
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) in.push_back(std::ldexp(static_cast<float>(rng() % 4096) / 64.0f, -20 + i % 40));
  in.resize(in.size() / 8 * 8);
  for (DType to : {DType::kF8E4M3, DType::kF8E5M2, DType::kF8E8M0, DType::kF4, DType::kF6E2M3, DType::kF6E3M2,
                   DType::kF8E4M3FNUZ, DType::kF8E5M2FNUZ}) {
    for (bool saturate : {false, true}) {
      std::vector<uint8_t> packed(dtype_storage_bytes(to, in.size()));
      cast_array(DType::kF32, in.data(), to, packed.data(), in.size(), {.saturate = saturate});
      const int bits = dtype_bits(to);
      for (size_t i = 0; i < in.size(); ++i) {
        const size_t bit = i * bits;
        uint32_t code = packed[bit / 8] >> (bit % 8);
        if (bit % 8 + bits > 8) code |= packed[bit / 8 + 1] << (8 - bit % 8);
        code &= (1u << bits) - 1;
        ASSERT_EQ(code, minifloat_from_f64(to, in[i], saturate))
            << dtype_name(to) << " saturate=" << saturate << " input bits 0x" << std::hex << bits_of(in[i]);
      }
    }
  }
}

TEST(FastPaths, SaturatingHalfCasts) {
  const float in[] = {1e6f, -1e6f, 65520.0f, kInfF, -kInfF, kNaNF, 1.0f, 3.4e38f};
  uint16_t f16[8], bf16[8];
  cast_array(DType::kF32, in, DType::kF16, f16, 8, {.saturate = true});
  cast_array(DType::kF32, in, DType::kBF16, bf16, 8, {.saturate = true});
  const uint16_t want_f16[] = {0x7bff, 0xfbff, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x3c00, 0x7bff};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f16[i], want_f16[i]) << i;
  EXPECT_EQ(bf16[7], 0x7f7f);
  EXPECT_EQ(bf16[3], 0x7f80);
  const double big[] = {1e300, -1e300, kInfF};
  cast_array(DType::kF64, big, DType::kBF16, bf16, 3, {.saturate = true});
  EXPECT_EQ(bf16[0], 0x7f7f);
  EXPECT_EQ(bf16[1], 0xff7f);
  EXPECT_EQ(bf16[2], 0x7f80);
  float f32[3];
  cast_array(DType::kF64, big, DType::kF32, f32, 3, {.saturate = true});
  EXPECT_EQ(f32[0], std::numeric_limits<float>::max());
  EXPECT_EQ(f32[1], -std::numeric_limits<float>::max());
  EXPECT_EQ(f32[2], kInfF);
  cast_array(DType::kF64, big, DType::kF32, f32, 3);
  EXPECT_EQ(f32[0], kInfF);
}

TEST(FastPaths, ParallelBlocksEqualSmallCalls) {
  // A large F32 -> F8_E4M3 / F4 cast runs on OpenMP blocks; casting the same data in
  // small pieces (single-threaded) must give the same bytes.
  const std::vector<float> in = hard_f32_inputs(detail::kParallelThreshold + 5004, 3);
  for (DType to : {DType::kF8E4M3, DType::kF4, DType::kF6E3M2, DType::kI8}) {
    const size_t bytes = dtype_storage_bytes(to, in.size());
    std::vector<uint8_t> whole(bytes), pieces(bytes);
    cast_array(DType::kF32, in.data(), to, whole.data(), in.size());
    const size_t piece = 40000;  // multiple of 8: pieces start on byte boundaries
    for (size_t b = 0; b < in.size(); b += piece)
      cast_array(DType::kF32, in.data() + b, to, pieces.data() + dtype_storage_bytes(to, b),
                 std::min(piece, in.size() - b));
    EXPECT_EQ(whole, pieces) << dtype_name(to);
  }
}

TEST(Packed, F4LayoutIsLowNibbleFirst) {
  const float in[] = {0.5f, -6.0f, 1.0f, 3.0f};
  uint8_t out[2];
  cast_array(DType::kF32, in, DType::kF4, out, 4);
  EXPECT_EQ(out[0], 0xf1);  // element 0 (0x1) low, element 1 (0xf) high
  EXPECT_EQ(out[1], 0x52);
  float back[3];
  convert_to_f32(DType::kF4, out, 1, 3, back);  // odd offset
  EXPECT_EQ(back[0], -6.0f);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_EQ(back[2], 3.0f);
}

TEST(Packed, F6BitStreamAcrossBytes) {
  // Codes 1, 2, 3, 4 of E2M3 packed at bits 0, 6, 12, 18.
  const uint8_t codes[] = {0x01, 0x02, 0x03, 0x04};
  uint32_t stream = 0;
  for (int i = 0; i < 4; ++i) stream |= static_cast<uint32_t>(codes[i]) << (6 * i);
  const uint8_t packed[3] = {static_cast<uint8_t>(stream), static_cast<uint8_t>(stream >> 8),
                             static_cast<uint8_t>(stream >> 16)};
  float out[4];
  convert_to_f32(DType::kF6E2M3, packed, 0, 4, out);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], minifloat_to_f32(DType::kF6E2M3, codes[i])) << i;
  for (uint64_t first = 1; first < 4; ++first) {
    double one;
    convert_to_f64(DType::kF6E2M3, packed, first, 1, &one);
    EXPECT_EQ(one, minifloat_to_f32(DType::kF6E2M3, codes[first])) << first;
  }
  uint8_t repacked[3];
  cast_array(DType::kF32, out, DType::kF6E2M3, repacked, 4);
  EXPECT_EQ(std::memcmp(repacked, packed, 3), 0);
}

TEST(Packed, RoundTripEveryCodeAtEveryOffset) {
  std::mt19937 rng(4);
  for (DType dtype : {DType::kF4, DType::kF6E2M3, DType::kF6E3M2}) {
    const int bits = dtype_bits(dtype);
    const size_t n = 1000;
    std::vector<uint8_t> codes(n);
    for (auto& c : codes) c = static_cast<uint8_t>(rng() & ((1u << bits) - 1));
    // Pack by hand, decode with offsets, re-encode: the codes come back (no code is NaN
    // in these types, and -0 stays -0).
    std::vector<uint8_t> packed(dtype_storage_bytes(dtype, n), 0);
    for (size_t i = 0; i < n; ++i) {
      const size_t bit = i * bits;
      packed[bit / 8] |= static_cast<uint8_t>(codes[i] << (bit % 8));
      if (bit % 8 + bits > 8) packed[bit / 8 + 1] |= static_cast<uint8_t>(codes[i] >> (8 - bit % 8));
    }
    for (uint64_t first : {0, 1, 3, 5, 7}) {
      std::vector<float> values(n - first);
      convert_to_f32(dtype, packed.data(), first, values.size(), values.data());
      for (size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(bits_of(values[i]), bits_of(minifloat_to_f32(dtype, codes[first + i])));
    }
    std::vector<float> all(n);
    convert_to_f32(dtype, packed.data(), 0, n, all.data());
    std::vector<uint8_t> again(packed.size());
    cast_array(DType::kF32, all.data(), dtype, again.data(), n);
    EXPECT_EQ(again, packed) << dtype_name(dtype);
  }
}

TEST(Packed, PartialLastByteIsZeroPadded) {
  const float in[] = {1.0f, 1.0f, 1.0f};
  uint8_t out[3] = {0xff, 0xff, 0xff};
  cast_array(DType::kF32, in, DType::kF6E2M3, out, 3);  // 18 bits -> 3 bytes
  EXPECT_EQ(out[2] >> 2, 0);
  uint8_t copy[3] = {0xff, 0xff, 0xff};
  cast_array(DType::kF6E2M3, out, DType::kF6E2M3, copy, 3);
  EXPECT_EQ(std::memcmp(copy, out, 3), 0);
}

TEST(CastArray, FloatToIntegerRoundsAndClamps) {
  const double in[] = {2.5, 3.5, -2.5, -0.6, 1e10, -1e10, kNaNF, kInfF, -kInfF, 127.4, 127.5};
  int8_t i8[11];
  cast_array(DType::kF64, in, DType::kI8, i8, 11);
  const int8_t want_i8[] = {2, 4, -2, -1, 127, -128, 0, 127, -128, 127, 127};
  for (int i = 0; i < 11; ++i) EXPECT_EQ(i8[i], want_i8[i]) << i;
  uint8_t u8[11];
  cast_array(DType::kF64, in, DType::kU8, u8, 11);
  const uint8_t want_u8[] = {2, 4, 0, 0, 255, 0, 0, 255, 0, 127, 128};
  for (int i = 0; i < 11; ++i) EXPECT_EQ(u8[i], want_u8[i]) << i;
  const float big[] = {1e30f, -1e30f, 9.3e18f, 1.8e19f};
  int64_t i64[4];
  uint64_t u64[4];
  cast_array(DType::kF32, big, DType::kI64, i64, 4);
  cast_array(DType::kF32, big, DType::kU64, u64, 4);
  EXPECT_EQ(i64[0], INT64_MAX);
  EXPECT_EQ(i64[1], INT64_MIN);
  EXPECT_EQ(i64[2], INT64_MAX);
  EXPECT_EQ(u64[0], UINT64_MAX);
  EXPECT_EQ(u64[1], 0u);
  EXPECT_EQ(u64[3], static_cast<uint64_t>(1.8e19f));
}

TEST(CastArray, IntegerToIntegerClamps) {
  const int64_t in[] = {-1, 0, 255, 256, INT64_MIN, INT64_MAX, 70000};
  uint8_t u8[7];
  int16_t i16[7];
  uint64_t u64[7];
  cast_array(DType::kI64, in, DType::kU8, u8, 7);
  cast_array(DType::kI64, in, DType::kI16, i16, 7);
  cast_array(DType::kI64, in, DType::kU64, u64, 7);
  const uint8_t want_u8[] = {0, 0, 255, 255, 0, 255, 255};
  const int16_t want_i16[] = {-1, 0, 255, 256, INT16_MIN, INT16_MAX, INT16_MAX};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(u8[i], want_u8[i]) << i;
    EXPECT_EQ(i16[i], want_i16[i]) << i;
  }
  EXPECT_EQ(u64[0], 0u);
  EXPECT_EQ(u64[5], static_cast<uint64_t>(INT64_MAX));
  const uint64_t huge[] = {UINT64_MAX};
  int64_t back;
  cast_array(DType::kU64, huge, DType::kI64, &back, 1);
  EXPECT_EQ(back, INT64_MAX);
}

TEST(CastArray, BoolTargetsAndSources) {
  const float in[] = {0.0f, -0.0f, 0.25f, -3.0f, kNaNF, kInfF};
  uint8_t b[6];
  cast_array(DType::kF32, in, DType::kBool, b, 6);
  const uint8_t want[] = {0, 0, 1, 1, 1, 1};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(b[i], want[i]) << i;
  const int32_t ints[] = {0, 5, -7};
  cast_array(DType::kI32, ints, DType::kBool, b, 3);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(b[2], 1);
  const uint8_t bools[] = {0, 1, 2};
  float f[3];
  int32_t i[3];
  cast_array(DType::kBool, bools, DType::kF32, f, 3);
  cast_array(DType::kBool, bools, DType::kI32, i, 3);
  EXPECT_EQ(f[2], 1.0f);
  EXPECT_EQ(i[2], 1);
  EXPECT_EQ(f[0], 0.0f);
}

TEST(CastArray, ComplexTakesRealPartOrGetsZeroImaginary) {
  const float c[] = {1.5f, 2.0f, 0.0f, -4.0f, 0.0f, 0.0f};
  double d[3];
  cast_array(DType::kC64, c, DType::kF64, d, 3);
  EXPECT_EQ(d[0], 1.5);
  EXPECT_EQ(d[1], 0.0);
  uint16_t h[3];
  cast_array(DType::kC64, c, DType::kF16, h, 3);
  EXPECT_EQ(h[0], f32_to_f16(1.5f));
  uint8_t b[3];
  cast_array(DType::kC64, c, DType::kBool, b, 3);
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[1], 1);  // imaginary part only
  EXPECT_EQ(b[2], 0);
  const double real[] = {0.1, -2.0};
  float out[4];
  cast_array(DType::kF64, real, DType::kC64, out, 2);
  EXPECT_EQ(out[0], 0.1f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], -2.0f);
  EXPECT_EQ(out[3], 0.0f);
  const int16_t small[] = {-3};
  cast_array(DType::kI16, small, DType::kC64, out, 1);
  EXPECT_EQ(out[0], -3.0f);
}

TEST(CastArray, RepresentativePairsRoundOnce) {
  // F16 -> BF16 goes through an exact f32, so it rounds once: 1 + 2^-8 + 2^-10 (f16 0x3c05)
  // is above the BF16 tie at 1 + 2^-8.
  const uint16_t h[] = {0x3c05, 0x3c04, 0x7c00, 0x0001};
  uint16_t bf[4];
  cast_array(DType::kF16, h, DType::kBF16, bf, 4);
  EXPECT_EQ(bf[0], 0x3f81);
  EXPECT_EQ(bf[1], 0x3f80);  // exact tie: even
  EXPECT_EQ(bf[2], 0x7f80);
  EXPECT_EQ(bf[3], f32_to_bf16(std::ldexp(1.0f, -24)));
  // BF16 -> F8_E4M3 and back.
  const uint16_t b2[] = {0x3f80, 0x43e0, 0x4400};  // 1, 448, 512
  uint8_t f8[3];
  cast_array(DType::kBF16, b2, DType::kF8E4M3, f8, 3);
  EXPECT_EQ(f8[0], 0x38);
  EXPECT_EQ(f8[1], 0x7e);
  EXPECT_EQ(f8[2], 0x7f);
  cast_array(DType::kBF16, b2, DType::kF8E4M3, f8, 3, {.saturate = true});
  EXPECT_EQ(f8[2], 0x7e);
  // Integers to minifloats and floats to F64.
  const int32_t ints[] = {9, -1000, 3};
  uint8_t e5m2[3];
  cast_array(DType::kI32, ints, DType::kF8E5M2, e5m2, 3);
  EXPECT_EQ(e5m2[0], minifloat_from_f64(DType::kF8E5M2, 9.0, false));
  EXPECT_EQ(e5m2[1], minifloat_from_f64(DType::kF8E5M2, -1000.0, false));
  double d[3];
  cast_array(DType::kF8E5M2, e5m2, DType::kF64, d, 3);
  EXPECT_EQ(d[0], 8.0);  // 9 is a tie between 8 and 10: even mantissa, 8
  EXPECT_EQ(d[1], -1024.0);
  EXPECT_EQ(d[2], 3.0);
  const uint64_t wide[] = {(uint64_t{1} << 53) + 1};
  double wd;
  cast_array(DType::kU64, wide, DType::kF64, &wd, 1);
  EXPECT_EQ(wd, 9007199254740992.0);
  const int64_t i64[] = {16777217};
  float wf;
  cast_array(DType::kI64, i64, DType::kF32, &wf, 1);
  EXPECT_EQ(wf, 16777216.0f);
}

TEST(CastArray, SameTypeCopiesAndUnalignedPointersWork) {
  std::vector<uint8_t> src(4 * 100 + 1), dst(2 * 100 + 1);
  std::mt19937 rng(5);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  float aligned[100];
  std::memcpy(aligned, src.data() + 1, sizeof aligned);
  cast_array(DType::kF32, src.data() + 1, DType::kBF16, dst.data() + 1, 100);
  for (int i = 0; i < 100; ++i) {
    uint16_t got;
    std::memcpy(&got, dst.data() + 1 + 2 * i, 2);
    ASSERT_EQ(got, f32_to_bf16(aligned[i])) << i;
  }
  std::vector<uint8_t> copy(src.size());
  cast_array(DType::kI32, src.data(), DType::kI32, copy.data(), 100);
  EXPECT_EQ(std::memcmp(copy.data(), src.data(), 400), 0);
  cast_array(DType::kF32, src.data(), DType::kF64, copy.data(), 0);  // no-op
}

TEST(CastArray, ConvertRangeOverflowThrows) {
  float out = 0.0f;
  try {
    convert_to_f32(DType::kF32, &out, UINT64_MAX, 2, &out);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  }
  EXPECT_THROW(cast_array(DType::kU64, &out, DType::kF32, &out, uint64_t{1} << 61), Error);
}

TEST(CastLosses, CountsRoundedClampedAndOverflowedValues) {
  const std::vector<float> in = {0.4f, 1.5f, -2.0f, 300.0f, -1e4f, kNaNF, 460.0f, 1e6f, kInfF};
  const uint64_t n = in.size();
  std::vector<uint8_t> i8(n), f8(n), sat(n);
  cast_array(DType::kF32, in.data(), DType::kI8, i8.data(), n);
  CastLosses to_int = cast_losses(DType::kF32, in.data(), DType::kI8, i8.data(), n);
  EXPECT_EQ(to_int.rounded, 2u);  // 0.4 and 1.5
  EXPECT_EQ(to_int.clamped, 6u);  // 300, -1e4, NaN, 460, 1e6, Inf
  EXPECT_EQ(to_int.overflowed, 0u);
  cast_array(DType::kF32, in.data(), DType::kF8E4M3, f8.data(), n);
  CastLosses to_f8 = cast_losses(DType::kF32, in.data(), DType::kF8E4M3, f8.data(), n);
  EXPECT_EQ(to_f8.overflowed, 2u);  // -1e4 and 1e6; 460 rounds to 448, Inf was never finite
  EXPECT_EQ(to_f8.rounded + to_f8.clamped, 0u);
  cast_array(DType::kF32, in.data(), DType::kF8E4M3, sat.data(), n, CastOptions{true});
  EXPECT_FALSE(cast_losses(DType::kF32, in.data(), DType::kF8E4M3, sat.data(), n).any());
  std::vector<uint8_t> big(4 * 5000);
  std::vector<float> many(5000, 1e5f);  // more than one block
  cast_array(DType::kF32, many.data(), DType::kF16, big.data(), many.size());
  EXPECT_EQ(cast_losses(DType::kF32, many.data(), DType::kF16, big.data(), many.size()).overflowed, 5000u);
  EXPECT_FALSE(cast_losses(DType::kI32, many.data(), DType::kI8, big.data(), 10).any());  // not a float source
}

}  // namespace
}  // namespace tk
