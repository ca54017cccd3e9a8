// iq4xs: its layout (4.25 bits per weight, 6-bit sub-block scales under an f16 scale),
// the round trip, its error against iq4nl's (the same levels, an f16 scale per 32
// values) and how its search weighs the importance.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "test_util.h"
#include "quant_test_util.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/scheme.h"

namespace tk::quant {
namespace {

using test::heavy_tailed;
using test::round_trip;
using test::sqnr;

TEST(Iq4xs, LayoutIsIq4xs) {
  const auto s = make_scheme("iq4xs");
  EXPECT_EQ(s->name(), "iq4xs");
  EXPECT_FALSE(s->takes_group_size());
  EXPECT_FALSE(s->gpu_path(QuantOptions{}));  // CPU only: --device cuda refuses it by name
  EXPECT_EQ(s->row_block(1536, {}), 256);
  EXPECT_DOUBLE_EQ(s->bits_per_weight(384, 1536, {}), 4.25);  // 136 bytes per 256 values
  const auto x = test::normal_floats(3 * 512, 1);
  const Quantized q = s->quantize(x.data(), Shape{3, 512}, {});
  EXPECT_EQ(q.params.at("group_size"), "256");
  EXPECT_EQ(q.params.at("padded_cols"), "512");
  EXPECT_EQ(q.parts.at("codes").shape(), (Shape{3, 256}));
  EXPECT_EQ(q.parts.at("sub_scales").shape(), (Shape{3, 12}));  // 16 scales of 6 bits
  EXPECT_EQ(q.parts.at("d").dtype(), DType::kF16);
  EXPECT_EQ(q.parts.at("d").shape(), (Shape{3, 2}));
  EXPECT_EQ(q.stored_bytes(), 3u * 2 * 136);
  QuantOptions g32;
  g32.group_size = 32;
  EXPECT_EQ(test::kind_of([&] { s->quantize(x.data(), Shape{3, 512}, g32); }), ErrorKind::kUsage);
}

// Each stored value is (d * (ls - 32)) * level: with the parts read back by hand, the
// decoder's values bit for bit, padded rows included.
TEST(Iq4xs, DecodesAsTheFormulaSays) {
  static const float kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  const auto s = make_scheme("iq4xs");
  const Shape shape{3, 300};  // padded to 512
  const auto x = test::normal_floats(900, 2);
  const Quantized q = s->quantize(x.data(), shape, {});
  std::vector<float> y(900), y_ref(900);
  s->dequantize(q, y.data());
  s->dequantize_reference(q, y_ref.data());
  ASSERT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0);
  std::vector<uint8_t> codes(512), ls(16);
  for (int64_t r = 0; r < 3; ++r) {
    detail::unpack_bits(q.parts.at("codes").data() + r * 256, 512, 4, codes.data(), true);
    detail::unpack_bits(q.parts.at("sub_scales").data() + r * 12, 16, 6, ls.data(), true);
    for (int64_t c = 0; c < 300; ++c) {
      const float d = detail::load_scale(q.parts.at("d"), static_cast<uint64_t>(r * 2 + c / 256));
      const float dl = d * static_cast<float>(static_cast<int>(ls[c / 32]) - 32);
      const float want = dl * kLevels[codes[c]];
      ASSERT_EQ(std::memcmp(&want, &y[r * 300 + c], 4), 0) << r << "," << c;
    }
  }
}

// Stated bound: at 4.25 bits per weight iq4xs stays within 0.1 dB of iq4nl's SQNR at 4.5
// (its 6-bit scales cost little against f16 ones), and the search does not lose to --fast.
TEST(Iq4xs, ErrorWithinBoundOfIq4nl) {
  const auto xs = make_scheme("iq4xs"), nl = make_scheme("iq4nl");
  QuantOptions fast;
  fast.fast = true;
  const Shape shape{64, 1024};
  for (const auto& x : {test::normal_floats(64 * 1024, 3), heavy_tailed(64 * 1024, 4)}) {
    const double e_xs = sqnr(x, round_trip(*xs, x, shape), 1024);
    const double e_nl = sqnr(x, round_trip(*nl, x, shape), 1024);
    const double e_fast = sqnr(x, round_trip(*xs, x, shape, fast), 1024);
    std::printf("[ iq4xs    ] SQNR %.2f dB (fast %.2f), iq4nl %.2f dB\n", e_xs, e_fast, e_nl);
    EXPECT_GT(e_xs, e_nl - 0.1) << e_xs << " against iq4nl " << e_nl;
    EXPECT_GE(e_xs, e_fast);
    EXPECT_GT(e_xs, 19.0);
  }
}

// Zeros: an all-zero super-block and an all-zero sub-block among others decode to zero
// (IQ4_NL's levels hold no 0: the sub-block's integer scale must be 0).
TEST(Iq4xs, ZerosStayZero) {
  const auto s = make_scheme("iq4xs");
  auto x = test::normal_floats(2 * 512, 5);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // row 0, super-block 1
  std::fill(x.begin() + 512 + 64, x.begin() + 512 + 96, 0.0f);  // row 1, sub-block 2
  const std::vector<float> y = round_trip(*s, x, Shape{2, 512});
  for (int i = 256; i < 512; ++i) ASSERT_EQ(y[i], 0.0f) << i;
  for (int i = 512 + 64; i < 512 + 96; ++i) ASSERT_EQ(y[i], 0.0f) << i;
  EXPECT_NE(y[512 + 63], 0.0f);
}

// With importance on some columns, the search moves error off them: their weighted error
// falls against the unweighted search, and the total unweighted error rises a little.
TEST(Iq4xs, WeightedSearchHonoursImportance) {
  const auto s = make_scheme("iq4xs");
  const int64_t rows = 32, cols = 512;
  const auto x = heavy_tailed(static_cast<size_t>(rows * cols), 6);
  std::vector<float> w(cols, 1.0f);
  for (int64_t c = 0; c < cols; c += 7) w[c] = 100.0f;
  QuantOptions o;
  o.importance = w.data();
  const std::vector<float> plain = round_trip(*s, x, Shape{rows, cols});
  const std::vector<float> weighted = round_trip(*s, x, Shape{rows, cols}, o);
  const auto n = static_cast<int64_t>(x.size());
  const double plain_w = measure_error(x.data(), plain.data(), n, cols, w.data()).weighted_sse;
  const double weighted_w = measure_error(x.data(), weighted.data(), n, cols, w.data()).weighted_sse;
  EXPECT_LT(weighted_w, 0.95 * plain_w);
  EXPECT_LE(sqnr(x, weighted, cols), sqnr(x, plain, cols));
  // Columns of weight 0 are free: the rest's error only falls.
  std::vector<float> half(cols, 1.0f);
  for (int64_t c = cols / 2; c < cols; ++c) half[c] = 0.0f;
  o.importance = half.data();
  const std::vector<float> y = round_trip(*s, x, Shape{rows, cols}, o);
  EXPECT_LE(measure_error(x.data(), y.data(), n, cols, half.data()).weighted_sse,
            measure_error(x.data(), plain.data(), n, cols, half.data()).weighted_sse);
}

}  // namespace
}  // namespace tk::quant
