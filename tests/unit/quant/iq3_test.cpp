// iq3xxs and iq3s: their layouts (98 and 110 bytes per 256 values), decoding as ggml's
// formula says (read back by hand from the parts), the ggml twin's blocks decoding to the
// same values, the grid search, the error on heavy-tailed values against a stated
// figure, and the importance.
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "test_util.h"
#include "tk/io/ggml_iq_grids.h"
#include "tk/io/gguf_types.h"
#include "tk/quant/gguf_blocks.h"
#include "tk/quant/iq3_lattice.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/scheme.h"

namespace tk::quant {
namespace {

std::vector<float> round_trip(const Scheme& s, const std::vector<float>& x, const Shape& shape,
                              const QuantOptions& o = {}) {
  std::vector<float> y(x.size());
  s.dequantize(s.quantize(x.data(), shape, o), y.data());
  return y;
}

double sqnr(const std::vector<float>& x, const std::vector<float>& y, int64_t cols) {
  return measure_error(x.data(), y.data(), static_cast<int64_t>(x.size()), cols, nullptr).sqnr_db;
}

std::vector<float> heavy_tailed(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::student_t_distribution<float> t(4.0f);
  std::vector<float> x(n);
  for (float& v : x) v = t(rng) * 0.02f;
  return x;
}

TEST(Iq3, Layouts) {
  for (const bool xxs : {true, false}) {
    const auto s = make_scheme(xxs ? "iq3xxs" : "iq3s");
    EXPECT_EQ(s->name(), xxs ? "iq3xxs" : "iq3s");
    EXPECT_FALSE(s->takes_group_size());
    EXPECT_FALSE(s->gpu_path(QuantOptions{}));
    EXPECT_DOUBLE_EQ(s->bits_per_weight(384, 1536, {}), xxs ? 3.0625 : 3.4375);
    const auto x = test::normal_floats(3 * 512, 1);
    const Quantized q = s->quantize(x.data(), Shape{3, 512}, {});
    EXPECT_EQ(q.params.at("padded_cols"), "512");
    EXPECT_EQ(q.parts.at("grid").shape(), (Shape{3, 128}));
    EXPECT_EQ(q.parts.at("signs").shape(), (Shape{3, xxs ? 56 : 64}));
    EXPECT_EQ(q.parts.count("grid_high"), xxs ? 0u : 1u);
    EXPECT_EQ(q.parts.at("sub_scales").shape(), (Shape{3, 8}));
    EXPECT_EQ(q.parts.at("d").shape(), (Shape{3, 2}));
    EXPECT_EQ(q.stored_bytes(), 3u * 2 * (xxs ? 98 : 110));
    QuantOptions g32;
    g32.group_size = 32;
    EXPECT_EQ(test::kind_of([&] { s->quantize(x.data(), Shape{3, 512}, g32); }), ErrorKind::kUsage);
  }
}

// y = db * grid[p][j], negated by its sign bit, with the parts read back by hand: the
// decoder's values bit for bit, padded rows included; and IQ3_XXS's eighth sign bit is
// the parity of the seven stored.
TEST(Iq3, DecodesAsTheFormulaSays) {
  for (const bool xxs : {true, false}) {
    const auto s = make_scheme(xxs ? "iq3xxs" : "iq3s");
    const Shape shape{3, 300};  // padded to 512
    const auto x = test::normal_floats(900, 2);
    const Quantized q = s->quantize(x.data(), shape, {});
    std::vector<float> y(900), y_ref(900);
    s->dequantize(q, y.data());
    s->dequantize_reference(q, y_ref.data());
    ASSERT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0);
    std::vector<uint8_t> high(128), signs(64), ls(16);
    for (int64_t r = 0; r < 3; ++r) {
      const uint8_t* grid = q.parts.at("grid").data() + r * 128;
      if (!xxs) detail::unpack_bits(q.parts.at("grid_high").data() + r * 16, 128, 1, high.data(), true);
      if (xxs) {
        detail::unpack_bits(q.parts.at("signs").data() + r * 56, 64, 7, signs.data(), true);
        for (uint8_t& b : signs) b = static_cast<uint8_t>(b | (std::popcount(unsigned{b}) % 2) << 7);
      } else {
        std::memcpy(signs.data(), q.parts.at("signs").data() + r * 64, 64);
      }
      detail::unpack_bits(q.parts.at("sub_scales").data() + r * 8, 16, 4, ls.data(), true);
      for (int64_t c = 0; c < 300; ++c) {
        const float d = detail::load_scale(q.parts.at("d"), static_cast<uint64_t>(r * 2 + c / 256));
        const int l = ls[c / 32];
        const float db = xxs ? d * (0.5f + static_cast<float>(l)) * 0.5f : d * static_cast<float>(1 + 2 * l);
        const uint32_t word = xxs ? io::kIq3xxsGrid[grid[c / 4]] : io::kIq3sGrid[grid[c / 4] | high[c / 4] << 8];
        const float v = db * static_cast<float>((word >> (8 * (c % 4))) & 0xFF);
        const float want = (signs[c / 8] >> (c % 8)) & 1 ? -v : v;
        ASSERT_EQ(std::memcmp(&want, &y[r * 300 + c], 4), 0) << xxs << " " << r << "," << c;
      }
    }
  }
}

// The ggml twin's blocks decode (io's IQ3 decoders, ggml's formula) to tensorkit's values.
TEST(Iq3, TwinBlocksDecodeToTheSameValues) {
  for (const bool xxs : {true, false}) {
    const auto s = make_scheme(xxs ? "iq3xxs" : "iq3s");
    const auto x = heavy_tailed(4 * 768, 3);
    const Quantized q = s->quantize(x.data(), Shape{4, 768}, {});
    const io::GgmlType type = xxs ? io::GgmlType::kIQ3_XXS : io::GgmlType::kIQ3_S;
    ASSERT_EQ(ggml_type_for(q), type);
    const std::vector<uint8_t> blocks = ggml_blocks(q, type);
    ASSERT_EQ(blocks.size(), 4u * 3 * (xxs ? 98 : 110));
    std::vector<float> y(x.size()), z(x.size());
    s->dequantize(q, y.data());
    io::gguf_dequantize(type, blocks, z);
    EXPECT_EQ(std::memcmp(y.data(), z.data(), y.size() * sizeof(float)), 0) << xxs;
  }
}

// Each grid point, scaled, is its own nearest point; a target between points gets a grid
// point at least as good as every point next to the rounded one.
TEST(Iq3, LatticeFindsGridPoints) {
  for (const iq3::Lattice* lattice : {&iq3::iq3xxs_lattice(), &iq3::iq3s_lattice()}) {
    const float w[4] = {1, 1, 1, 1};
    for (int p = 0; p < lattice->points(); ++p) {
      float m[4];
      for (int j = 0; j < 4; ++j) m[j] = lattice->value(p, j) * 0.01f;
      ASSERT_EQ(lattice->nearest(m, w, 0.01f, 100.0f), p);
    }
  }
}

// Stated figures on heavy-tailed values (Student's t, 4 degrees of freedom), 64 x 1536:
// iq3xxs above 14 dB, iq3s above 16 dB (SmolLM2's ffn_down: see docs/QUANT.md), --fast
// within 1 dB below, all-zero blocks exactly zero.
TEST(Iq3, ErrorWithinStatedBound) {
  const int64_t rows = 64, cols = 1536;
  auto x = heavy_tailed(static_cast<size_t>(rows * cols), 4);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);
  for (const bool xxs : {true, false}) {
    const auto s = make_scheme(xxs ? "iq3xxs" : "iq3s");
    const std::vector<float> y = round_trip(*s, x, Shape{rows, cols});
    QuantOptions fast;
    fast.fast = true;
    const std::vector<float> yf = round_trip(*s, x, Shape{rows, cols}, fast);
    const double e = sqnr(x, y, cols), ef = sqnr(x, yf, cols);
    EXPECT_GT(e, xxs ? 14.0 : 16.0) << xxs;
    EXPECT_LE(ef, e + 1e-9) << xxs;
    EXPECT_GT(ef, e - 1.0) << xxs;
    for (int i = 256; i < 512; ++i) ASSERT_EQ(y[static_cast<size_t>(i)], 0.0f) << i;
  }
}

// With importance on some columns, their weighted error falls against the plain search.
TEST(Iq3, WeightedSearchHonoursImportance) {
  const int64_t rows = 32, cols = 512;
  const auto x = heavy_tailed(static_cast<size_t>(rows * cols), 6);
  std::vector<float> w(cols, 1.0f);
  for (int64_t c = 0; c < cols; c += 7) w[c] = 100.0f;
  QuantOptions o;
  o.importance = w.data();
  for (const bool xxs : {true, false}) {
    const auto s = make_scheme(xxs ? "iq3xxs" : "iq3s");
    const std::vector<float> plain = round_trip(*s, x, Shape{rows, cols});
    const std::vector<float> weighted = round_trip(*s, x, Shape{rows, cols}, o);
    const auto n = static_cast<int64_t>(x.size());
    EXPECT_LT(measure_error(x.data(), weighted.data(), n, cols, w.data()).weighted_sse,
              0.9 * measure_error(x.data(), plain.data(), n, cols, w.data()).weighted_sse)
        << xxs;
  }
}

}  // namespace
}  // namespace tk::quant
