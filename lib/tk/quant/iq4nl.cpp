// iq4nl: llama.cpp's IQ4_NL, a non-uniform 4-bit scheme: 16 fixed integer levels
// (ggml's kvalues_iq4nl, denser near zero as trained weights are) in blocks of 32 along a
// row, each block with an f16 scale d: y = d * level[code]. tensorkit's nf4-like scheme
// with a ggml block type (gguf_blocks.h), where nf4's normal-quantile levels have none.
//
// The scale: for each of 15 trial scales around -max / 127 (max: the block's value of
// largest magnitude, which the level -127 then meets), every value takes its nearest
// level and the scale is refitted by least squares on those codes; the trial of least
// (weighted) squared error wins, is rounded to f16, and the codes are chosen again
// against the rounded scale. --fast takes the first trial alone. The search is
// iq4nl_math.h's, which the GPU path (cuda/groups.cu) runs too.
//
// Parts: "codes" U8 [rows, padded_cols / 2] (two codes per byte, low nibble first) and
// "scales" F16 [rows, groups]. Params: group_size (32), padded_cols.
#include <cmath>

#include "tk/core/error.h"
#include "tk/quant/decode_tables.h"
#include "tk/quant/iq4nl_math.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"
#ifdef TK_HAVE_CUDA
#include "tk/quant/cuda/groups.h"
#endif

namespace tk::quant {
namespace {

using namespace detail;

using iq4nl::kBlock;

class Iq4nlScheme final : public GpuDecodedScheme<Iq4nlScheme> {
 public:
  Iq4nlScheme() : levels_(iq4nl::levels()), table_(4, levels_.level), nearest_(levels_.level) {}

  std::string name() const override { return "iq4nl"; }
  std::string description() const override {
    return "iq4nl: llama.cpp's IQ4_NL, 16 non-uniform levels in blocks of 32 with an f16 scale";
  }
  bool takes_group_size() const override { return false; }
  int64_t row_block(int64_t, const QuantOptions&) const override { return kBlock; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions&) const override {
    const Layout l = make_layout(Shape{rows, cols}, kBlock);
    const double bytes = static_cast<double>(l.rows * l.padded_cols / 2 + l.rows * l.groups_per_row * 2);
    return bytes * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.group_size != 0 && o.group_size != kBlock) throw usage_error("iq4nl uses blocks of 32");
    const Layout l = make_layout(shape, kBlock);
    Quantized q = new_quantized(name(), shape, l);
    const PaddedInput in = pad_input(x, l, o.importance);
    Tensor scales = new_part(DType::kF16, {l.rows, l.groups_per_row});
    Tensor codes = new_part(DType::kU8, {l.rows, l.padded_cols / 2});
#ifdef TK_HAVE_CUDA
    if (o.device >= 0) {
      // The scales there, their f16 rounding here, the codes from the rounded ones there.
      gpu::Groups groups(o.device, in.data, in.weights.data(), l.rows, l.padded_cols, kBlock);
      const std::vector<float> found = groups.iq4nl_scales(o.fast);
      std::vector<float> d(found.size());
      for (size_t g = 0; g < found.size(); ++g) {
        store_scale(scales, g, found[g]);
        d[g] = load_scale(scales, g);
      }
      groups.encode_table4(levels_, d.data(), codes.mutable_data());
    } else
#endif
      parallel_for(l.rows, [&](int64_t r) {
        std::vector<uint8_t> row(static_cast<size_t>(l.padded_cols));
        for (int64_t b = 0; b < l.groups_per_row; ++b) {
          const int64_t c0 = r * l.padded_cols + b * kBlock;
          store_scale(scales, r * l.groups_per_row + b,
                      iq4nl::fit_scale(levels_, in.data + c0, in.weights.data() + b * kBlock, o.fast));
          const float d = load_scale(scales, r * l.groups_per_row + b);
          encode(in.data + c0, d, row.data() + b * kBlock);
        }
        pack_bits(row.data(), l.padded_cols, 4, codes.mutable_data() + r * l.padded_cols / 2, o.reference);
      });
    q.parts["codes"] = codes;
    q.parts["scales"] = scales;
    return q;
  }

 private:
  friend class GpuDecodedScheme<Iq4nlScheme>;

  // The nearest level of each value x / d (ties to the lower level).
  void encode(const float* x, float d, uint8_t* codes) const {
    const float inv = d == 0 ? 0.0f : 1.0f / d;
    for (int64_t i = 0; i < kBlock; ++i) codes[i] = nearest_(x[i] * inv);
  }

  void decode(const Quantized& q, float* out, bool reference, [[maybe_unused]] int device = -1,
              [[maybe_unused]] const Measure* measure = nullptr) const {
    if (param_int(q, "group_size", kBlock, kBlock) != kBlock) throw invalid_input("group size is not 32", q.scheme);
    const Layout l = make_layout(q.shape, kBlock);
    check_shape_param(q, l);
    const Tensor& codes = part(q, "codes", DType::kU8, static_cast<uint64_t>(l.rows * l.padded_cols / 2));
    const Tensor& scales = part(q, "scales", DType::kF16, static_cast<uint64_t>(l.rows * l.groups_per_row));
#ifdef TK_HAVE_CUDA
    if (device >= 0) {
      std::vector<float> d(static_cast<size_t>(l.rows * l.groups_per_row));
      load_scales(scales, 0, d.size(), d.data());
      gpu::decode_table(device, codes.data(), 4, l.rows, l.padded_cols, l.cols, levels_.level, kBlock, d.data(), out,
                        measure);
      return;
    }
#endif
    const bool padded = l.cols != l.padded_cols;
    parallel_row_tasks(l, [&](int64_t begin, int64_t end) {
      std::vector<float> d(static_cast<size_t>(l.groups_per_row)), row(padded ? static_cast<size_t>(l.padded_cols) : 0);
      for (int64_t r = begin; r < end; ++r) {
        load_scales(scales, static_cast<uint64_t>(r * l.groups_per_row), static_cast<uint64_t>(l.groups_per_row),
                    d.data());
        // y = level * d, one product as ggml's d * kvalues_iq4nl[q]; a padded row goes
        // through the scratch row.
        float* y = padded ? row.data() : out + r * l.cols;
        table_.decode_scaled(codes.data() + r * l.padded_cols / 2, l.padded_cols, kBlock, d.data(), y, reference);
        if (padded) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
      }
    });
  }

  nf4::Levels levels_;
  CodeTable table_;
  Nearest16 nearest_;
};

}  // namespace

std::unique_ptr<Scheme> make_iq4nl_scheme() { return std::make_unique<Iq4nlScheme>(); }

}  // namespace tk::quant
