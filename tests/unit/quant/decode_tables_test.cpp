// The table and minifloat decoders give the scalar reference's values bit for bit: every
// code under ordinary, signed, zero, subnormal, huge, Inf and NaN scales, unaligned
// codebook streams, and every scheme that decodes through them end to end.
#include "tk/quant/decode_tables.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tk/core/float_format.h"
#include "tk/core/isa.h"
#include "tk/quant/codebook.h"
#include "tk/quant/codebook_internal.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/scheme.h"

namespace tk::quant {
namespace {

using detail::CodeTable;

// `any_nan`: any two NaNs count as equal. A NaN entry times a NaN scale is NaN with the
// sign and payload of whichever operand the compiler put first, which C++ leaves open
// (in the reference as in the fast path); every other product has one answer.
::testing::AssertionResult same_bits(const std::vector<float>& a, const std::vector<float>& b,
                                     bool any_nan = false) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t x = 0, y = 0;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    if (x != y && !(any_nan && std::isnan(a[i]) && std::isnan(b[i]))) {
      char text[64];
      std::snprintf(text, sizeof text, "0x%08x vs 0x%08x", x, y);
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << b[i] << " (" << text
                                           << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> format_table(DType dtype) {
  std::vector<float> t(256);
  for (int c = 0; c < 256; ++c) t[c] = static_cast<float>(static_cast<int8_t>(c)) / 64.0f;
  if (dtype == DType::kI8) return t;
  const auto& f = tk::detail::float_format(dtype);
  for (int c = 0; c < 256; ++c) {
    t[c] = static_cast<float>(tk::detail::float_format_decode(f, c & ((1 << f.bits) - 1)));
  }
  return t;
}

// Scales that stress folding a power of two into them.
std::vector<float> hard_scales() {
  const float inf = std::numeric_limits<float>::infinity();
  return {1.0f,   0.013f,   -2.5f,    0.0f,    -0.0f,    std::ldexp(1.0f, -127), 1e-40f, 3e38f, -3e38f,
          1e-30f, inf,      -inf,     NAN,     -NAN,     std::ldexp(1.0f, 127),  7e-39f, 1.5e-44f, 250.0f};
}

// Every code of `bits`, once per scale, packed LSB first; groups of 8 or 32.
void expect_all_codes_match(const CodeTable& t, int bits, int64_t group) {
  const std::vector<float> scales = hard_scales();
  const int64_t per_scale = 256;
  const int64_t n = per_scale * static_cast<int64_t>(scales.size());
  std::vector<uint8_t> codes(static_cast<size_t>(n));
  std::mt19937 rng(7);
  for (int64_t i = 0; i < n; ++i) codes[i] = static_cast<uint8_t>((i % 256 + rng() % 3) & ((1 << bits) - 1));
  std::vector<uint8_t> packed(static_cast<size_t>(n * bits / 8));
  detail::pack_bits(codes.data(), n, bits, packed.data(), true);
  std::vector<float> group_scale(static_cast<size_t>(n / group));
  for (size_t g = 0; g < group_scale.size(); ++g) group_scale[g] = scales[(g * group / per_scale) % scales.size()];
  std::vector<float> fast(static_cast<size_t>(n)), ref(static_cast<size_t>(n));
  t.decode_scaled(packed.data(), n, group, group_scale.data(), fast.data(), false);
  t.decode_scaled(packed.data(), n, group, group_scale.data(), ref.data(), true);
  EXPECT_TRUE(same_bits(fast, ref, true)) << "bits " << bits << ", group " << group;
}

struct Format {
  DType dtype;
  int bits;
  CodeTable::Plan plan;  // where the processor runs the AVX2 path
};

TEST(DecodeTables, EveryCodeAndScaleMatchesReference) {
  const Format formats[] = {
      {DType::kF8E4M3, 8, CodeTable::Plan::kMinifloat}, {DType::kF8E5M2, 8, CodeTable::Plan::kMinifloat},
      {DType::kF6E2M3, 6, CodeTable::Plan::kMinifloat}, {DType::kF6E3M2, 6, CodeTable::Plan::kMinifloat},
      {DType::kF4, 4, CodeTable::Plan::kPermute},       {DType::kI8, 8, CodeTable::Plan::kInt8},
  };
  for (const Format& f : formats) {
    const std::vector<float> table = format_table(f.dtype);
    const CodeTable t(f.bits, table.data(), f.dtype);
    if (tk::isa_supported(tk::Isa::kAvx2)) {
      EXPECT_EQ(t.plan(), f.plan) << dtype_name(f.dtype);
    }
    for (int64_t group : {8, 16, 24, 32, 256}) expect_all_codes_match(t, f.bits, group);
  }
}

TEST(DecodeTables, PlainTablesMatchReference) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (int bits : {4, 6, 8}) {
    std::vector<float> table(static_cast<size_t>(1) << bits);
    for (auto& v : table) v = g(rng);
    table[1] = NAN;
    const CodeTable t(bits, table.data());
    for (int64_t group : {8, 64}) expect_all_codes_match(t, bits, group);
  }
}

// A table that only looks like a format must not get the arithmetic plan.
TEST(DecodeTables, WrongTableFallsBackToLookups) {
  std::vector<float> table = format_table(DType::kF8E4M3);
  table[0x41] = 3.0f;
  const CodeTable t(8, table.data(), DType::kF8E4M3);
  EXPECT_NE(t.plan(), CodeTable::Plan::kMinifloat);
  expect_all_codes_match(t, 8, 32);
}

TEST(DecodeTables, E8m0MatchesLdexp) {
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
  std::vector<float> out(256), want(256);
  detail::decode_e8m0(codes.data(), 256, out.data());
  for (int c = 0; c < 256; ++c) want[c] = c == 0xff ? NAN : std::ldexp(1.0f, c - 127);
  EXPECT_TRUE(same_bits(out, want));
}

TEST(DecodeTables, LevelsFromAnyOffsetMatchUnpackedCodes) {
  std::mt19937 rng(11);
  for (int bits = 1; bits <= 8; ++bits) {
    const uint64_t total = 1000;
    std::vector<uint16_t> codes(total);
    for (auto& c : codes) c = static_cast<uint16_t>(rng() & ((1u << bits) - 1));
    std::vector<uint8_t> packed(cbdetail::packed_bytes(total, bits), 0);
    cbdetail::pack_codes(codes.data(), total, bits, packed.data());
    std::vector<float> levels(static_cast<size_t>(1) << bits);
    for (size_t j = 0; j < levels.size(); ++j) levels[j] = static_cast<float>(j) * 0.25f - 1.0f;
    for (uint64_t first : {0, 1, 3, 7, 8, 13, 960, 990}) {
      for (uint64_t count : {0, 1, 8, 9, 17, 40}) {
        if (first + count > total) continue;
        std::vector<float> fast(count), want(count);
        codebook_decode(packed.data(), packed.size(), bits, first, count, levels.data(), fast.data());
        for (uint64_t i = 0; i < count; ++i) want[i] = levels[codes[first + i]];
        EXPECT_TRUE(same_bits(fast, want)) << "bits " << bits << ", first " << first << ", count " << count;
      }
    }
  }
}

// Long runs (enough codes for the f16 byte-plane path of 4..7 bits) from odd offsets and
// with odd lengths, over levels that are arbitrary f16 values (signs, subnormals, zeros,
// infinities), and over levels of which one is no f16 value (the path must step aside).
TEST(DecodeTables, LongRunsOfF16LevelsMatchUnpackedCodes) {
  std::mt19937 rng(13);
  for (int bits = 4; bits <= 8; ++bits) {
    const uint64_t total = (uint64_t{40} << bits) + 37;
    std::vector<uint16_t> codes(total);
    for (auto& c : codes) c = static_cast<uint16_t>(rng() & ((1u << bits) - 1));
    std::vector<uint8_t> packed(cbdetail::packed_bytes(total, bits), 0);
    cbdetail::pack_codes(codes.data(), total, bits, packed.data());
    std::vector<float> levels(size_t{1} << bits);
    for (auto& v : levels) {
      uint16_t h = static_cast<uint16_t>(rng());
      if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) h &= 0xfc00;  // NaN -> infinity
      v = f16_to_f32(h);
    }
    for (bool exact : {true, false}) {
      if (!exact) levels[levels.size() / 2] = 0.1f;  // not an f16 value
      for (uint64_t first : {uint64_t{0}, uint64_t{3}, uint64_t{8}, uint64_t{29}}) {
        for (uint64_t count : {total - first, total - first - 5, (uint64_t{16} << bits) + 31}) {
          std::vector<float> fast(count), want(count);
          codebook_decode(packed.data(), packed.size(), bits, first, count, levels.data(), fast.data());
          for (uint64_t i = 0; i < count; ++i) want[i] = levels[codes[first + i]];
          EXPECT_TRUE(same_bits(fast, want)) << "bits " << bits << ", first " << first << ", count " << count
                                             << (exact ? "" : ", one level not f16");
        }
      }
    }
  }
}

// Every dimension and code width, from odd offsets and with odd counts, so the runs end
// in the partial windows and the value-by-value last codewords.
TEST(DecodeTables, VectorsFromAnyOffsetMatchCodewords) {
  std::mt19937 rng(12);
  for (int dim = 1; dim <= 16; ++dim) {
    for (int bits : {1, 2, 3, 4, 7, 8, 9, 12, 14}) {
      const uint64_t total = 300;
      std::vector<uint16_t> codes(total);
      for (auto& c : codes) c = static_cast<uint16_t>(rng() & ((1u << bits) - 1));
      std::vector<uint8_t> packed(cbdetail::packed_bytes(total, bits), 0);
      cbdetail::pack_codes(codes.data(), total, bits, packed.data());
      // The contract's eight floats of padding past the book.
      std::vector<float> book((size_t{1} << bits) * dim + 8);
      // Books of f16 values (as stored) for some widths, so the f16 paths run too.
      const bool f16_book = bits % 2 == 0;
      for (size_t j = 0; j < book.size(); ++j) {
        book[j] = static_cast<float>(j % 1000) * 0.37f - 100.0f;
        if (f16_book) book[j] = f16_to_f32(f32_to_f16(book[j]));
      }
      const float scale = 0.3f;
      for (uint64_t first : {0, 1, 5, 8, 77, 250}) {
        for (uint64_t count : {0, 1, 3, 4, 9, 50, 200}) {
          if (first + count > total) continue;
          // A guard past the run: the decoder must not write beyond count * dim.
          std::vector<float> fast(count * dim + 8, -7.0f), want(count * dim + 8, -7.0f);
          if (!detail::decode_vectors(packed.data(), packed.size(), bits, first, count, book.data(), dim, scale,
                                      fast.data())) {
            GTEST_SKIP() << "no vector path active (TK_ISA or the processor)";
          }
          for (uint64_t v = 0; v < count; ++v) {
            for (int d = 0; d < dim; ++d) want[v * dim + d] = book[codes[first + v] * dim + d] * scale;
          }
          EXPECT_TRUE(same_bits(fast, want)) << "dim " << dim << ", bits " << bits << ", first " << first
                                             << ", count " << count;
        }
      }
    }
  }
}

// Wide-ranging finite data: zeros, tiny and large magnitudes, a few rows of each kind.
std::vector<float> awkward_matrix(int64_t rows, int64_t cols) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float row_scale = std::ldexp(1.0f, static_cast<int>(r % 7) * 9 - 30);
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = (c % 11 == 0) ? 0.0f : g(rng) * row_scale;
  }
  return x;
}

struct SchemeCase {
  std::string spec;
  QuantOptions options;
};

TEST(DecodeTables, SchemesDequantizeAsTheirReference) {
  std::vector<SchemeCase> cases;
  auto add = [&](std::string spec, auto&& set) {
    QuantOptions o;
    o.fast = true;
    set(o);
    cases.push_back({std::move(spec), o});
  };
  auto none = [](QuantOptions&) {};
  add("nf4", none);
  add("nf4", [](QuantOptions& o) { o.double_quant = true; });
  add("nf4", [](QuantOptions& o) { o.scale_dtype = DType::kF32; o.group_size = 24; });
  for (const char* s : {"fp8_e4m3", "fp8_e5m2"}) {
    add(s, none);
    add(s, [](QuantOptions& o) { o.granularity = Granularity::kChannel; });
  }
  for (const char* s : {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "mxint8", "nvfp4"}) {
    add(s, none);
  }
  for (int bits = 2; bits <= 8; ++bits) {
    const std::string s = "kmeans:" + std::to_string(bits);
    add(s, none);
    add(s, [](QuantOptions& o) { o.granularity = Granularity::kChannel; o.outlier_fraction = 0.01; });
    add(s, [](QuantOptions& o) { o.granularity = Granularity::kGroup; o.group_size = 40; });
  }
  for (const char* s : {"vq:4:8", "vq:2:4", "vq:3:5", "vq:8:6", "vq:1:3", "vq:5:4", "vq:6:6", "vq:7:5", "vq:12:4",
                        "vq:16:3", "vq:3:9"}) {
    add(s, none);
    add(s, [](QuantOptions& o) { o.granularity = Granularity::kChannel; });
  }

  for (const Shape& shape : {Shape{14, 256}, Shape{9, 77}}) {
    const std::vector<float> x = awkward_matrix(shape[0], shape[1]);
    for (const SchemeCase& c : cases) {
      SCOPED_TRACE(c.spec + " " + std::to_string(shape[1]) + " cols");
      const auto scheme = make_scheme(c.spec);
      const Quantized q = scheme->quantize(x.data(), shape, c.options);
      std::vector<float> fast(x.size()), ref(x.size());
      scheme->dequantize(q, fast.data());
      scheme->dequantize_reference(q, ref.data());
      EXPECT_TRUE(same_bits(fast, ref));
    }
  }
}

}  // namespace
}  // namespace tk::quant
