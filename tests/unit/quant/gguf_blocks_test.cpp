// gguf_blocks: every scheme with a ggml twin, repacked, decodes through ggml's block
// layouts to tensorkit's own values bit for bit (zeros aside, whose sign the header
// says may differ where ggml's formula gives -0 and tensorkit's +0 or the reverse).
// The ggml side is decoded twice: by the reference below, written from gguf-py's
// dequantize_blocks (gguf/quants.py) with its float operations in its order, and by
// io::gguf_dequantize.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/core/dtype.h"
#include "tk/io/gguf_types.h"
#include "tk/quant/gguf_blocks.h"
#include "tk/quant/view.h"

namespace tk::quant {
namespace {

using io::GgmlType;

// ---- ggml's decoding, from gguf-py ----

float f16_at(const uint8_t* p) { return f16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8)); }
int nibble(const uint8_t* qs, int j) { return qs[j % 16] >> (j / 16 * 4) & 0xf; }           // 32-value blocks
int crumb(const uint8_t* qs, int i) { return qs[i / 128 * 32 + i % 32] >> (i % 128 / 32 * 2) & 3; }
int k_nibble(const uint8_t* qs, int i) { return qs[i / 64 * 32 + i % 32] >> (i % 64 / 32 * 4) & 0xf; }
int plane_bit(const uint8_t* h, int i) { return h[i % 32] >> (i / 32) & 1; }

void k4_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xf) | (s[j - 4] >> 6) << 4;
    m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
  }
}

// One block of `type` at x into y (the block's values).
void reference_block(GgmlType type, const uint8_t* x, float* y) {
  static const int kMxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  switch (type) {
    case GgmlType::kQ8_0:
      for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(x[2 + j])) * f16_at(x);
      return;
    case GgmlType::kQ4_0:
      for (int j = 0; j < 32; ++j) y[j] = f16_at(x) * static_cast<float>(nibble(x + 2, j) - 8);
      return;
    case GgmlType::kIQ4_NL: {
      static const int kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
      for (int j = 0; j < 32; ++j) y[j] = f16_at(x) * static_cast<float>(kValues[nibble(x + 2, j)]);
      return;
    }
    case GgmlType::kIQ4_XS: {
      static const int kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
      const int high = x[2] | x[3] << 8;  // scales_h, little-endian
      for (int i = 0; i < 256; ++i) {
        const int ib = i / 32;
        const int ls = (x[4 + ib / 2] >> (ib % 2 * 4) & 0xf) | (high >> (2 * ib) & 3) << 4;
        const float dl = f16_at(x) * static_cast<float>(ls - 32);
        y[i] = dl * static_cast<float>(kValues[nibble(x + 8 + 16 * ib, i % 32)]);
      }
      return;
    }
    case GgmlType::kQ4_1:
      for (int j = 0; j < 32; ++j) y[j] = f16_at(x) * static_cast<float>(nibble(x + 4, j)) + f16_at(x + 2);
      return;
    case GgmlType::kQ5_0:
      for (int j = 0; j < 32; ++j) {
        const int q = nibble(x + 6, j) | (x[2 + j / 8] >> (j % 8) & 1) << 4;
        y[j] = f16_at(x) * static_cast<float>(q - 16);
      }
      return;
    case GgmlType::kQ5_1:
      for (int j = 0; j < 32; ++j) {
        const int q = nibble(x + 8, j) | (x[4 + j / 8] >> (j % 8) & 1) << 4;
        y[j] = f16_at(x) * static_cast<float>(q) + f16_at(x + 2);
      }
      return;
    case GgmlType::kTQ2_0:
      for (int i = 0; i < 256; ++i) y[i] = f16_at(x + 64) * static_cast<float>(crumb(x, i) - 1);
      return;
    case GgmlType::kQ2_K:
      for (int i = 0; i < 256; ++i) {
        const float dl = f16_at(x + 80) * static_cast<float>(x[i / 16] & 0xf);
        const float ml = f16_at(x + 82) * static_cast<float>(x[i / 16] >> 4);
        y[i] = dl * static_cast<float>(crumb(x + 16, i)) - ml;
      }
      return;
    case GgmlType::kQ3_K:
      for (int i = 0; i < 256; ++i) {
        const int s = i / 16;
        const int sc = (x[96 + s % 8] >> (s / 8 * 4) & 0xf) | (x[104 + s % 4] >> (s / 4 * 2) & 3) << 4;
        const float dl = f16_at(x + 108) * static_cast<float>(sc - 32);
        y[i] = dl * static_cast<float>(crumb(x + 32, i) - ((plane_bit(x, i) ^ 1) << 2));
      }
      return;
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: {
      const bool five = type == GgmlType::kQ5_K;
      for (int i = 0; i < 256; ++i) {
        int sc = 0, m = 0;
        k4_scale_min(x + 4, i / 32, sc, m);
        const float d = f16_at(x) * static_cast<float>(sc), dm = f16_at(x + 2) * static_cast<float>(m);
        const int q = five ? k_nibble(x + 48, i) | plane_bit(x + 16, i) << 4 : k_nibble(x + 16, i);
        y[i] = d * static_cast<float>(q) - dm;
      }
      return;
    }
    case GgmlType::kQ6_K:
      for (int i = 0; i < 256; ++i) {
        const int h = i / 128, k = i % 128;
        const int lo = x[h * 64 + k % 64] >> (k / 64 * 4) & 0xf, hi = x[128 + h * 32 + k % 32] >> (k / 32 * 2) & 3;
        const float d = f16_at(x + 208) * static_cast<float>(static_cast<int8_t>(x[192 + i / 16]));
        y[i] = d * static_cast<float>((lo | hi << 4) - 32);
      }
      return;
    case GgmlType::kMXFP4: {
      const uint32_t bits = x[0] < 2 ? uint32_t{0x00200000} << x[0] : uint32_t{x[0] - 1u} << 23;
      float d;
      std::memcpy(&d, &bits, 4);
      for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(kMxfp4[nibble(x + 1, j)]);
      return;
    }
    default: FAIL() << "no reference decoder";
  }
}

std::vector<float> reference_decode(GgmlType type, const std::vector<uint8_t>& bytes, size_t n) {
  const io::GgmlTypeTraits& t = io::ggml_traits(type);
  std::vector<float> y(n);
  for (size_t b = 0; b < n / t.block; ++b) {
    reference_block(type, bytes.data() + b * t.type_bytes, y.data() + b * t.block);
  }
  return y;
}

// ---- comparison ----

// Values compared, identical in all 32 bits, and differing only in the sign of a zero.
struct Tally {
  uint64_t values = 0, identical = 0, zero_sign = 0;
};

void compare(const std::vector<float>& want, const std::vector<float>& got, const std::string& label, Tally& tally) {
  ASSERT_EQ(want.size(), got.size()) << label;
  int reported = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &want[i], 4);
    std::memcpy(&b, &got[i], 4);
    ++tally.values;
    if (a == b) {
      ++tally.identical;
    } else if (want[i] == 0 && got[i] == 0) {
      ++tally.zero_sign;
    } else if (reported++ < 5) {
      ADD_FAILURE() << label << " value " << i << ": tensorkit " << want[i] << ", ggml " << got[i];
    }
  }
}

// Types whose formula gives tensorkit's zeros too (an offset subtracted or added last).
bool zero_signs_agree(GgmlType type) {
  return type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1 || type == GgmlType::kQ2_K || type == GgmlType::kQ4_K ||
         type == GgmlType::kQ5_K || type == GgmlType::kIQ4_NL ||  // iq4nl: the same product d * level
         type == GgmlType::kIQ4_XS;                                // and (d * l) * level
}

// ---- test data ----

// Gaussian values with a few outliers (x100), one all-zero 256-value stretch per row
// where the row holds two, a constant 32-value run, and a row of tiny values.
std::vector<float> test_values(const Shape& shape, uint64_t seed) {
  const auto n = shape_numel(shape);
  std::vector<float> x = test::normal_floats(n, seed);
  const size_t cols = shape.empty() ? 1 : static_cast<size_t>(shape.back());
  for (size_t i = 0; i < n; i += 97) x[i] *= 100.0f;
  for (size_t r = 0; r * cols < n; ++r) {
    float* row = x.data() + r * cols;
    if (cols >= 512) std::fill(row + 256, row + 512, 0.0f);
    if (cols >= 64) std::fill(row + 32, row + 64, r % 2 == 0 ? 0.75f : -3.0f);
    if (r == 1) {
      for (size_t c = 0; c < cols; ++c) row[c] *= 1e-6f;
    }
  }
  return x;
}

const Shape kShapes[] = {{4, 256}, {3, 512}, {1024}, {2, 3, 768}, {2, 0}};
const GgmlType kTwinTypes[] = {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                               GgmlType::kQ5_1, GgmlType::kTQ2_0, GgmlType::kQ2_K, GgmlType::kQ3_K,
                               GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kMXFP4,
                               GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

// q repacked as `type`, decoded both ways, against tensorkit's dequantize (optimised
// and reference, through the view when q has one).
void check_blocks(const Scheme& s, const Quantized& q, GgmlType type, const std::string& label, Tally& tally) {
  ASSERT_EQ(ggml_type_for(q), type) << label;
  const std::vector<uint8_t> bytes = ggml_blocks(q, type);
  const size_t n = shape_numel(q.shape);
  ASSERT_EQ(bytes.size(), io::ggml_storage_bytes(type, n)) << label;
  std::vector<float> want(n), want_ref(n);
  dequantize_view(s, q, want.data());
  dequantize_view(s, q, want_ref.data(), true);
  ASSERT_EQ(std::memcmp(want.data(), want_ref.data(), n * sizeof(float)), 0) << label;
  compare(want, reference_decode(type, bytes, n), label + " (reference)", tally);
  std::vector<float> got(n);
  io::gguf_dequantize(type, bytes, got);
  Tally io_tally;
  compare(want, got, label + " (gguf_dequantize)", io_tally);
}

TEST(GgufBlocks, EveryTwinDecodesToTensorkitsValues) {
  uint64_t total = 0, total_zero = 0;
  for (GgmlType type : kTwinTypes) {
    const std::optional<GgufTwin> twin = tensorkit_twin(type);
    ASSERT_TRUE(twin.has_value()) << io::ggml_traits(type).name;
    const auto s = make_scheme(twin->scheme);
    std::vector<QuantOptions> variants(3, twin->options);
    variants[1].fast = true;
    variants[2].reference = true;
    if (type == GgmlType::kMXFP4) {
      variants[1].scale_rule = ScaleRule::kCeil;
      variants[2].scale_rule = ScaleRule::kSearch;
    }
    Tally tally;
    uint64_t seed = 1;
    for (const Shape& shape : kShapes) {
      const std::vector<float> x = test_values(shape, seed++);
      for (size_t v = 0; v < variants.size(); ++v) {
        const std::string label = std::string(io::ggml_traits(type).name) + " " + shape_to_string(shape) + " #" +
                                  std::to_string(v);
        check_blocks(*s, s->quantize(x.data(), shape, variants[v]), type, label, tally);
      }
    }
    const std::vector<float> zeros(512, 0.0f);
    check_blocks(*s, s->quantize(zeros.data(), Shape{2, 256}, twin->options), type, "all zero", tally);
    // A tensor quantized under a wider view keeps ggml's blocks in memory order.
    const std::vector<float> x = test_values(Shape{4, 256}, 99);
    const Quantized viewed = quantize_view(*s, x.data(), Shape{4, 256}, 1024, twin->options);
    check_blocks(*s, viewed, type, std::string(io::ggml_traits(type).name) + " view", tally);
    if (zero_signs_agree(type)) {
      EXPECT_EQ(tally.zero_sign, 0u) << io::ggml_traits(type).name;
    }
    EXPECT_EQ(tally.identical + tally.zero_sign, tally.values);
    std::printf("[ gguf     ] %-6s %8llu values compared, %8llu identical, %6llu zeros of the other sign\n",
                io::ggml_traits(type).name, static_cast<unsigned long long>(tally.values),
                static_cast<unsigned long long>(tally.identical), static_cast<unsigned long long>(tally.zero_sign));
    total += tally.values;
    total_zero += tally.zero_sign;
  }
  std::printf("[ gguf     ] all    %8llu values compared, %6llu zeros of the other sign\n",
              static_cast<unsigned long long>(total), static_cast<unsigned long long>(total_zero));
}

TEST(GgufBlocks, TwinsAreTheSchemesDefaults) {
  EXPECT_EQ(tensorkit_twin(GgmlType::kQ4_K)->scheme, "q4k");
  EXPECT_EQ(tensorkit_twin(GgmlType::kMXFP4)->scheme, "mxfp4");
  EXPECT_EQ(tensorkit_twin(GgmlType::kIQ4_NL)->scheme, "iq4nl");
  EXPECT_EQ(tensorkit_twin(GgmlType::kIQ4_XS)->scheme, "iq4xs");
  EXPECT_EQ(tensorkit_twin(GgmlType::kIQ3_XXS)->scheme, "iq3xxs");
  EXPECT_EQ(tensorkit_twin(GgmlType::kIQ3_S)->scheme, "iq3s");
  EXPECT_EQ(tensorkit_twin(GgmlType::kIQ2_XXS)->scheme, "iq2xxs");
  EXPECT_EQ(tensorkit_twin(GgmlType::kIQ2_XS)->scheme, "iq2xs");
  EXPECT_EQ(tensorkit_twin(GgmlType::kIQ2_S)->scheme, "iq2s");
  const GgufTwin q8 = *tensorkit_twin(GgmlType::kQ8_0);
  EXPECT_EQ(q8.scheme, "int8");
  EXPECT_EQ(q8.options.group_size, 32);
  EXPECT_TRUE(q8.options.symmetric);
  EXPECT_EQ(q8.options.scale_dtype, DType::kF16);
  EXPECT_FALSE(tensorkit_twin(GgmlType::kQ4_1)->options.symmetric);
  EXPECT_EQ(tensorkit_twin(GgmlType::kTQ2_0)->options.group_size, 256);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_1, GgmlType::kQ8_K,
                        GgmlType::kTQ1_0, GgmlType::kIQ1_S}) {
    EXPECT_FALSE(tensorkit_twin(type).has_value()) << io::ggml_traits(type).name;
  }
}

std::optional<GgmlType> type_for(const std::string& scheme, const Shape& shape, QuantOptions o = {}) {
  const std::vector<float> x = test_values(shape, 7);
  return ggml_type_for(make_scheme(scheme)->quantize(x.data(), shape, o));
}

TEST(GgufBlocks, OtherOptionsHaveNoTwin) {
  QuantOptions g64;
  g64.group_size = 64;
  EXPECT_EQ(type_for("int4", {4, 256}, g64), std::nullopt);
  QuantOptions bf16;
  bf16.scale_dtype = DType::kBF16;
  EXPECT_EQ(type_for("int4", {4, 256}, bf16), std::nullopt);
  QuantOptions f32;
  f32.scale_dtype = DType::kF32;
  EXPECT_EQ(type_for("int8", {4, 256}, f32), std::nullopt);
  QuantOptions channel;
  channel.granularity = Granularity::kChannel;
  EXPECT_EQ(type_for("int4", {4, 32}, channel), std::nullopt);
  QuantOptions asym;
  asym.symmetric = false;
  EXPECT_EQ(type_for("int8", {4, 256}, asym), std::nullopt);
  EXPECT_EQ(type_for("int2", {4, 256}), std::nullopt);  // group 32: TQ2_0 has 256
  EXPECT_EQ(type_for("int3", {4, 256}), std::nullopt);
  EXPECT_EQ(type_for("nf4", {4, 256}), std::nullopt);
  EXPECT_EQ(type_for("q8k", {4, 256}), std::nullopt);
  EXPECT_EQ(type_for("nvfp4", {4, 256}), std::nullopt);
  EXPECT_EQ(type_for("mxfp8_e4m3", {4, 256}), std::nullopt);
  // Padded rows: 40 values padded to 64, 300 to 512; a 0-d tensor is one padded row.
  EXPECT_EQ(type_for("int4", {4, 40}), std::nullopt);
  EXPECT_EQ(type_for("q4k", {2, 300}), std::nullopt);
  EXPECT_EQ(type_for("iq4xs", {2, 384}), std::nullopt);
  EXPECT_EQ(type_for("mxfp4", {3, 48}), std::nullopt);
  EXPECT_EQ(type_for("int8", {}), std::nullopt);
  // Whole blocks under a view of 512 columns, but rows of 128 are not whole super-blocks.
  const std::vector<float> x = test_values(Shape{4, 128}, 8);
  const auto q4k = make_scheme("q4k");
  EXPECT_EQ(ggml_type_for(quantize_view(*q4k, x.data(), Shape{4, 128}, 512, {})), std::nullopt);
}

TEST(GgufBlocks, NonFiniteMxBlockHasNoTwin) {
  std::vector<float> x = test_values(Shape{2, 64}, 9);
  x[70] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(ggml_type_for(make_scheme("mxfp4")->quantize(x.data(), Shape{2, 64}, {})), std::nullopt);
}

TEST(GgufBlocks, WrongTypeIsUsageAndBadPartsInvalidInput) {
  const std::vector<float> x = test_values(Shape{2, 256}, 10);
  Quantized q = make_scheme("q4k")->quantize(x.data(), Shape{2, 256}, {});
  EXPECT_EQ(test::kind_of([&] { ggml_blocks(q, GgmlType::kQ5_K); }), ErrorKind::kUsage);
  EXPECT_EQ(test::kind_of([&] { ggml_blocks(q, GgmlType::kF32); }), ErrorKind::kUsage);
  q.parts["sub_mins"] = Tensor::zeros(DType::kU8, {2, 5});
  EXPECT_EQ(test::kind_of([&] { ggml_blocks(q, GgmlType::kQ4_K); }), ErrorKind::kInvalidInput);
  q.parts.erase("dmin");
  EXPECT_EQ(ggml_type_for(q), std::nullopt);
}

}  // namespace
}  // namespace tk::quant
