// iq2xxs, iq2xs, iq2s, iq3xxs and iq3s: their layouts (66 to 110 bytes per 256 values),
// decoding as ggml's formula says (read back by hand from the parts, with ggml's grids),
// the ggml twin's blocks decoding to the same values, the grid search, the error on
// heavy-tailed values against stated figures, and the importance.
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "test_util.h"
#include "quant_test_util.h"
#include "tk/io/ggml_iq_grids.h"
#include "tk/io/gguf_types.h"
#include "tk/quant/gguf_blocks.h"
#include "tk/quant/iq_lattice.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/scheme.h"

namespace tk::quant {
namespace {

using test::heavy_tailed;
using test::round_trip;
using test::sqnr;

struct Case {
  const char* scheme;
  io::GgmlType type;
  int block_bytes;
  int dims;         // values per point
  int high_bits;    // bits of a point's index above its low byte
  int sign_bits;    // stored per 8 values
  int scale_group;  // values per l
  double min_sqnr;  // on heavy-tailed values, 64 x 1536
};

constexpr Case kCases[] = {
    {"iq2xxs", io::GgmlType::kIQ2_XXS, 66, 8, 0, 7, 32, 8.5},
    {"iq2xs", io::GgmlType::kIQ2_XS, 74, 8, 1, 7, 16, 9.5},
    {"iq2s", io::GgmlType::kIQ2_S, 82, 8, 2, 8, 16, 10.5},
    {"iq3xxs", io::GgmlType::kIQ3_XXS, 98, 4, 0, 7, 32, 14.0},
    {"iq3s", io::GgmlType::kIQ3_S, 110, 4, 1, 8, 32, 16.0},
};

// ggml's value j of point p and the scale-group scale db, computed here from ggml's
// tables and formulas.
float grid_value(const Case& c, int p, int j) {
  uint64_t word = 0;
  switch (c.type) {
    case io::GgmlType::kIQ2_XXS: word = io::kIq2xxsGrid[p]; break;
    case io::GgmlType::kIQ2_XS: word = io::kIq2xsGrid[p]; break;
    case io::GgmlType::kIQ2_S: word = io::kIq2sGrid[p]; break;
    case io::GgmlType::kIQ3_XXS: word = io::kIq3xxsGrid[p]; break;
    default: word = io::kIq3sGrid[p]; break;
  }
  return static_cast<float>((word >> (8 * j)) & 0xFF);
}
float group_scale(const Case& c, float d, int l) {
  if (c.type == io::GgmlType::kIQ3_S) return d * static_cast<float>(1 + 2 * l);
  if (c.type == io::GgmlType::kIQ3_XXS) return d * (0.5f + static_cast<float>(l)) * 0.5f;
  return d * (0.5f + static_cast<float>(l)) * 0.25f;
}

TEST(IqGrid, Layouts) {
  for (const Case& c : kCases) {
    const auto s = make_scheme(c.scheme);
    EXPECT_EQ(s->name(), c.scheme);
    EXPECT_FALSE(s->takes_group_size());
    EXPECT_FALSE(s->gpu_path(QuantOptions{}));
    EXPECT_DOUBLE_EQ(s->bits_per_weight(384, 1536, {}), c.block_bytes * 8 / 256.0) << c.scheme;
    const auto x = test::normal_floats(3 * 512, 1);
    const Quantized q = s->quantize(x.data(), Shape{3, 512}, {});
    EXPECT_EQ(q.params.at("padded_cols"), "512");
    EXPECT_EQ(q.parts.at("grid").shape(), (Shape{3, 512 / c.dims}));
    EXPECT_EQ(q.parts.count("grid_high"), c.high_bits ? 1u : 0u);
    EXPECT_EQ(q.parts.at("signs").shape(), (Shape{3, 64 * c.sign_bits / 8}));
    EXPECT_EQ(q.parts.at("sub_scales").shape(), (Shape{3, 512 / c.scale_group / 2}));
    EXPECT_EQ(q.parts.at("d").shape(), (Shape{3, 2}));
    EXPECT_EQ(q.stored_bytes(), 3u * 2 * static_cast<uint64_t>(c.block_bytes)) << c.scheme;
    QuantOptions g32;
    g32.group_size = 32;
    EXPECT_EQ(test::kind_of([&] { s->quantize(x.data(), Shape{3, 512}, g32); }), ErrorKind::kUsage);
  }
}

// y = db * grid[p][j], negated by its sign bit, with the parts read back by hand: the
// decoder's values bit for bit, padded rows included; where 7 sign bits are stored the
// eighth is the parity of the seven.
TEST(IqGrid, DecodesAsTheFormulaSays) {
  for (const Case& c : kCases) {
    const auto s = make_scheme(c.scheme);
    const Shape shape{3, 300};  // padded to 512
    const auto x = test::normal_floats(900, 2);
    const Quantized q = s->quantize(x.data(), shape, {});
    std::vector<float> y(900), y_ref(900);
    s->dequantize(q, y.data());
    s->dequantize_reference(q, y_ref.data());
    ASSERT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0);
    const int points = 512 / c.dims, scales = 512 / c.scale_group;
    std::vector<uint8_t> high(static_cast<size_t>(points)), signs(64), ls(static_cast<size_t>(scales));
    for (int64_t r = 0; r < 3; ++r) {
      const uint8_t* grid = q.parts.at("grid").data() + r * points;
      if (c.high_bits) {
        detail::unpack_bits(q.parts.at("grid_high").data() + r * points * c.high_bits / 8, points, c.high_bits,
                            high.data(), true);
      }
      detail::unpack_bits(q.parts.at("signs").data() + r * 8 * c.sign_bits, 64, c.sign_bits, signs.data(), true);
      if (c.sign_bits == 7) {
        for (uint8_t& b : signs) b = static_cast<uint8_t>(b | (std::popcount(unsigned{b}) % 2) << 7);
      }
      detail::unpack_bits(q.parts.at("sub_scales").data() + r * scales / 2, scales, 4, ls.data(), true);
      for (int64_t v = 0; v < 300; ++v) {
        const float d = detail::load_scale(q.parts.at("d"), static_cast<uint64_t>(r * 2 + v / 256));
        const float db = group_scale(c, d, ls[static_cast<size_t>(v / c.scale_group)]);
        const auto p = static_cast<int>(v / c.dims);
        const float value = db * grid_value(c, grid[p] | (c.high_bits ? high[static_cast<size_t>(p)] << 8 : 0),
                                            static_cast<int>(v % c.dims));
        const float want = (signs[static_cast<size_t>(v / 8)] >> (v % 8)) & 1 ? -value : value;
        ASSERT_EQ(std::memcmp(&want, &y[r * 300 + v], 4), 0) << c.scheme << " " << r << "," << v;
      }
    }
  }
}

// The ggml twin's blocks decode (io's decoders, ggml's formula) to tensorkit's values.
TEST(IqGrid, TwinBlocksDecodeToTheSameValues) {
  for (const Case& c : kCases) {
    const auto s = make_scheme(c.scheme);
    const auto x = heavy_tailed(4 * 768, 3);
    const Quantized q = s->quantize(x.data(), Shape{4, 768}, {});
    ASSERT_EQ(ggml_type_for(q), c.type) << c.scheme;
    const std::vector<uint8_t> blocks = ggml_blocks(q, c.type);
    ASSERT_EQ(blocks.size(), 4u * 3 * static_cast<size_t>(c.block_bytes));
    std::vector<float> y(x.size()), z(x.size());
    s->dequantize(q, y.data());
    io::gguf_dequantize(c.type, blocks, z);
    EXPECT_EQ(std::memcmp(y.data(), z.data(), y.size() * sizeof(float)), 0) << c.scheme;
  }
}

// Each grid point, scaled, is its own nearest point.
TEST(IqGrid, LatticeFindsGridPoints) {
  for (const iq::Lattice* lattice : {&iq::iq2xxs_lattice(), &iq::iq2xs_lattice(), &iq::iq2s_lattice(),
                                     &iq::iq3xxs_lattice(), &iq::iq3s_lattice()}) {
    const float w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int p = 0; p < lattice->points(); ++p) {
      float m[8];
      for (int j = 0; j < lattice->dims(); ++j) m[j] = lattice->value(p, j) * 0.01f;
      ASSERT_EQ(lattice->nearest(m, w, 0.01f, 100.0f), p);
    }
  }
}

// Stated figures on heavy-tailed values (Student's t, 4 degrees of freedom), 64 x 1536
// (kCases' min_sqnr; SmolLM2's ffn_down: see docs/QUANT.md), --fast within 1 dB below,
// all-zero blocks exactly zero.
TEST(IqGrid, ErrorWithinStatedBound) {
  const int64_t rows = 64, cols = 1536;
  auto x = heavy_tailed(static_cast<size_t>(rows * cols), 4);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);
  for (const Case& c : kCases) {
    const auto s = make_scheme(c.scheme);
    const std::vector<float> y = round_trip(*s, x, Shape{rows, cols});
    QuantOptions fast;
    fast.fast = true;
    const std::vector<float> yf = round_trip(*s, x, Shape{rows, cols}, fast);
    const double e = sqnr(x, y, cols), ef = sqnr(x, yf, cols);
    EXPECT_GT(e, c.min_sqnr) << c.scheme;
    EXPECT_LE(ef, e + 1e-9) << c.scheme;
    EXPECT_GT(ef, e - 1.0) << c.scheme;
    for (int i = 256; i < 512; ++i) ASSERT_EQ(y[static_cast<size_t>(i)], 0.0f) << c.scheme << " " << i;
  }
}

// With importance on some columns, their weighted error falls against the plain search.
TEST(IqGrid, WeightedSearchHonoursImportance) {
  const int64_t rows = 32, cols = 512;
  const auto x = heavy_tailed(static_cast<size_t>(rows * cols), 6);
  std::vector<float> w(cols, 1.0f);
  for (int64_t c = 0; c < cols; c += 7) w[c] = 100.0f;
  QuantOptions o;
  o.importance = w.data();
  for (const Case& c : kCases) {
    const auto s = make_scheme(c.scheme);
    const std::vector<float> plain = round_trip(*s, x, Shape{rows, cols});
    const std::vector<float> weighted = round_trip(*s, x, Shape{rows, cols}, o);
    const auto n = static_cast<int64_t>(x.size());
    EXPECT_LT(measure_error(x.data(), weighted.data(), n, cols, w.data()).weighted_sse,
              0.9 * measure_error(x.data(), plain.data(), n, cols, w.data()).weighted_sse)
        << c.scheme;
  }
}

}  // namespace
}  // namespace tk::quant
