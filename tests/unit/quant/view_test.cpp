// Layout views (tk/quant/view.h): a view fills the blocks that a short last dimension
// leaves empty, for every scheme; it is recorded and undone by dequantize_view alone;
// the tensor's own layout is kept where it pads little; importance follows the values.
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/core/error.h"
#include "tk/quant/scheme.h"
#include "tk/quant/view.h"

namespace tk::quant {
namespace {

const char* const kSchemes[] = {"int4",     "int8",   "q2k",        "q4k",     "q6k",       "nf4",
                                "fp8_e4m3", "mxfp4",  "mxfp8_e4m3", "nvfp4",   "kmeans:3",  "vq:4:8",
                                "trellis:2:8"};

struct Layout {
  Shape shape;
  const char* label;
};

// Real layouts whose last dimension fills no block: HWIO and depthwise conv kernels,
// [n, 1] columns, Keras dense kernels with few outputs.
const Layout kLayouts[] = {{{3, 3, 64, 32}, "HWIO, 32 outputs"},
                           {{3, 3, 512, 1}, "depthwise"},
                           {{4096, 1}, "[n, 1]"},
                           {{1024, 10}, "dense, 10 outputs"},
                           {{64, 64, 1, 1}, "OIHW 1x1"}};

TEST(QuantView, FillsBlocksOnEveryLayoutAndRoundTrips) {
  for (const char* spec : kSchemes) {
    const auto s = make_scheme(spec);
    const QuantOptions o;
    const double nominal = s->bits_per_weight(256, 4096, o);
    for (const Layout& l : kLayouts) {
      const std::string label = std::string(spec) + " " + l.label;
      const auto n = static_cast<int64_t>(shape_numel(l.shape));
      const auto x = test::normal_floats(static_cast<size_t>(n), 7);
      const int64_t view = choose_view_cols(*s, l.shape, o);
      ASSERT_EQ(view % l.shape.back(), 0) << label;
      ASSERT_EQ(n % view, 0) << label;
      const Quantized q = quantize_view(*s, x.data(), l.shape, view, o);
      EXPECT_EQ(q.shape, l.shape) << label;
      EXPECT_EQ(q.params.count("view_cols"), view == l.shape.back() ? 0u : 1u) << label;
      // Padding at most one partial block (of at most 256 values) over the whole tensor;
      // per-tensor codebooks (and vq's per-row RMS scales) are metadata on top of the
      // nominal rate.
      const uint64_t padded = padded_values(*s, n / view, view, o);
      EXPECT_LT(padded - static_cast<uint64_t>(n), 256u) << label;
      const double bpw = static_cast<double>(q.stored_bytes()) * 8 / static_cast<double>(n);
      uint64_t fixed = 0;
      const bool vq = std::string(spec).rfind("vq", 0) == 0;
      for (const auto& [name, part] : q.parts) {
        if (name == "codebook" || (vq && name == "scales")) fixed += part.nbytes();
      }
      EXPECT_LE(bpw, nominal * (1 + 1.0 / 16) + static_cast<double>(fixed) * 8 / static_cast<double>(n)) << label;

      std::vector<float> y(x.size()), own(x.size());
      dequantize_view(*s, q, y.data());
      // The same values as quantizing the reshaped tensor directly.
      const Quantized direct = s->quantize(x.data(), Shape{n / view, view}, o);
      s->dequantize(direct, own.data());
      EXPECT_EQ(std::memcmp(y.data(), own.data(), y.size() * sizeof(float)), 0) << label;
      std::vector<float> ref(x.size());
      dequantize_view(*s, q, ref.data(), true);
      EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)), 0) << label;
    }
  }
}

TEST(QuantView, KeepsTheTensorsOwnLayoutWhereItPadsLittle) {
  const auto q4k = make_scheme("q4k");
  EXPECT_EQ(choose_view_cols(*q4k, Shape{64, 4096}, QuantOptions{}), 4096);
  EXPECT_EQ(choose_view_cols(*q4k, Shape{8, 11008}, QuantOptions{}), 11008);
  // 1000 columns pad to 1024 (2.4%): a view of the whole 8000 values pads 192 (2.4%) and
  // gains nothing, so the layout stays.
  EXPECT_EQ(choose_view_cols(*q4k, Shape{8, 1000}, QuantOptions{}), 1000);
  // fp8 has no blocks: nothing to fill.
  EXPECT_EQ(choose_view_cols(*make_scheme("fp8_e4m3"), Shape{512, 1}, QuantOptions{}), 1);
  // [*, 32] under q4k: rows of 256 made of 8 original rows.
  EXPECT_EQ(choose_view_cols(*q4k, Shape{4096, 32}, QuantOptions{}), 256);
}

TEST(QuantView, ImportanceRepeatsAcrossAViewRow) {
  const Shape shape{512, 4};
  const auto x = test::normal_floats(2048, 9);
  const float importance[4] = {100, 1, 1, 1};
  QuantOptions o;
  o.importance = importance;
  const auto s = make_scheme("int4");
  const int64_t view = choose_view_cols(*s, shape, o);
  ASSERT_EQ(view, 32);
  // Column c of the original is column c, c + 4, ... of the view: the weighted column
  // comes out with a smaller error than the others.
  const Quantized q = quantize_view(*s, x.data(), shape, view, o);
  std::vector<float> y(x.size());
  dequantize_view(*s, q, y.data());
  double err[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < x.size(); ++i) err[i % 4] += (x[i] - y[i]) * (x[i] - y[i]);
  EXPECT_LT(err[0], err[1]);
  EXPECT_LT(err[0], err[2]);
}

TEST(QuantView, MalformedViewIsInvalidInput) {
  const auto s = make_scheme("int4");
  const auto x = test::normal_floats(2048, 3);
  Quantized q = quantize_view(*s, x.data(), Shape{512, 4}, 32, QuantOptions{});
  std::vector<float> y(x.size());
  for (const char* bad : {"0", "7", "-32", "4096", "x"}) {
    Quantized b = q;
    b.params["view_cols"] = bad;
    EXPECT_THROW(dequantize_view(*s, b, y.data()), Error) << bad;
  }
}

}  // namespace
}  // namespace tk::quant
