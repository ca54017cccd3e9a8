// NF4 (QLoRA's normal-float 4-bit): 16 fixed levels from normal quantiles (bitsandbytes'
// table), blocks of 64 along a row, one scale per block: y = level[code] * scale.
//
// The scale is the block's absmax with --fast; otherwise the candidate among absmax *
// (1 - k/32), k = 0..7, with the least (weighted) squared error. Codes pick the nearest
// level (code = number of midpoints between levels that x / scale exceeds).
//
// Double quantization (QLoRA): the f32 block scales minus their mean are stored as int8
// in blocks of 256 scales, each with an f32 scale (absmax / 127); codes are computed
// from the scales as they decode.
//
// Parts: "codes" U8 [rows, padded_cols / 2] (two codes per byte, low nibble first) and
// either "scales" [rows, groups] (f16, bf16 or f32) or, with double quantization,
// "scales_q" I8 [rows * groups], "scales_scale" F32 [ceil(rows * groups / 256)] and
// "scales_offset" F32 [1]. Params: group_size, padded_cols, double_quant.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "tk/core/error.h"
#include "tk/core/isa.h"
#include "tk/device/device.h"
#include "tk/quant/decode_tables.h"
#include "tk/quant/nf4_math.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"
#ifdef TK_HAVE_CUDA
#include "tk/quant/cuda/groups.h"
#endif

namespace tk::quant {
namespace {

using namespace detail;

constexpr int64_t kDefaultBlock = 64;
constexpr int64_t kScaleBlock = 256;
class Nf4Scheme final : public GpuDecodedScheme<Nf4Scheme> {
 public:
  Nf4Scheme() : levels_(nf4::levels()), table_(4, levels_.level) {}

  std::string name() const override { return "nf4"; }
  std::string description() const override {
    return "nf4: normal-float 4-bit, blocks of 64, optional double quantization of the scales";
  }

  int64_t row_block(int64_t, const QuantOptions& o) const override { return layout_for(Shape{1, 8}, o).group; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions& o) const override {
    const Layout l = layout_for(Shape{rows, cols}, o);
    return static_cast<double>(stored_bytes(l, o)) * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (!o.double_quant && !is_scale_dtype(o.scale_dtype)) throw usage_error("nf4 scales are f16, bf16 or f32");
    const Layout l = layout_for(shape, o);
    Quantized q = new_quantized(name(), shape, l);
    q.params["double_quant"] = o.double_quant ? "1" : "0";
    const PaddedInput in = pad_input(x, l, o.importance);
    const int64_t n_blocks = l.rows * l.groups_per_row;
    // On the GPU: the scales and the codes there, their storage (rounding, double
    // quantization) here as on the CPU.
#ifdef TK_HAVE_CUDA
    std::optional<gpu::Groups> groups;
    if (o.device >= 0) groups.emplace(o.device, in.data, in.weights.data(), l.rows, l.padded_cols, l.group);
#endif
    std::vector<float> scale(static_cast<size_t>(n_blocks));
#ifdef TK_HAVE_CUDA
    if (groups) scale = groups->nf4_scales(o.fast);
    else
#endif
      parallel_for(l.rows, [&](int64_t r) {
        const float* xr = in.data + r * l.padded_cols;
        float* sr = scale.data() + r * l.groups_per_row;
#if TK_X86
        if (!o.reference && use_avx2()) return fit_row_avx2(xr, in.weights.data(), l, o.fast, sr);
#endif
        fit_row(xr, in.weights.data(), l, o.fast, sr);
      });
    if (o.double_quant) {
      store_double_quant(scale, q);
    } else {
      Tensor scales = new_part(o.scale_dtype, {l.rows, l.groups_per_row});
      for (int64_t i = 0; i < n_blocks; ++i) {
        store_scale(scales, i, scale[i]);
        scale[i] = load_scale(scales, i);
      }
      q.parts["scales"] = scales;
    }
    Tensor codes = new_part(DType::kU8, {l.rows, l.padded_cols / 2});
#ifdef TK_HAVE_CUDA
    if (groups) {
      groups->encode_table4(levels_, scale.data(), codes.mutable_data());
      q.parts["codes"] = codes;
      return q;
    }
#endif
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<uint8_t> row(static_cast<size_t>(l.padded_cols));
      const float* xr = in.data + r * l.padded_cols;
      const float* sr = scale.data() + r * l.groups_per_row;
#if TK_X86
      if (!o.reference && use_avx2()) {
        encode_row_avx2(xr, l, sr, row.data());
      } else
#endif
        encode_row(xr, l, sr, row.data());
      pack_bits(row.data(), l.padded_cols, 4, codes.mutable_data() + r * l.padded_cols / 2, o.reference);
    });
    q.parts["codes"] = codes;
    return q;
  }


 private:
  friend class GpuDecodedScheme<Nf4Scheme>;

  static Layout layout_for(const Shape& shape, const QuantOptions& o) {
    const int64_t group = o.group_size == 0 ? kDefaultBlock : o.group_size;
    if (group <= 0 || group % 8 != 0) throw usage_error("nf4 block size must be a positive multiple of 8");
    return make_layout(shape, group);
  }

  static uint64_t stored_bytes(const Layout& l, const QuantOptions& o) {
    const auto n_blocks = static_cast<uint64_t>(l.rows * l.groups_per_row);
    const uint64_t codes = static_cast<uint64_t>(l.rows * l.padded_cols / 2);
    if (o.double_quant) return codes + n_blocks + 4 * ((n_blocks + kScaleBlock - 1) / kScaleBlock) + 4;
    return codes + n_blocks * static_cast<uint64_t>(dtype_bits(o.scale_dtype) / 8);
  }

  // The scales and the codes of one row's blocks. Compiled as they stand and, inlined with
  // the functions below, into the _avx2 twins, where the loops vectorise for AVX2 (the
  // same values: no step is reordered or fused).
  [[gnu::always_inline]] inline void fit_row(const float* x, const float* w, const Layout& l, bool fast,
                                             float* scales) const {
    for (int64_t b = 0; b < l.groups_per_row; ++b) {
      scales[b] = nf4::fit_scale(levels_, x + b * l.group, w + b * l.group, l.group, fast);
    }
  }
  [[gnu::always_inline]] inline void encode_row(const float* x, const Layout& l, const float* scales,
                                                uint8_t* codes) const {
    for (int64_t b = 0; b < l.groups_per_row; ++b) {
      nf4::encode(levels_, x + b * l.group, l.group, scales[b], codes + b * l.group);
    }
  }
#if TK_X86
  TK_TARGET_AVX2 void fit_row_avx2(const float* x, const float* w, const Layout& l, bool fast, float* scales) const {
    fit_row(x, w, l, fast, scales);
  }
  TK_TARGET_AVX2 void encode_row_avx2(const float* x, const Layout& l, const float* scales, uint8_t* codes) const {
    encode_row(x, l, scales, codes);
  }
#endif

  // Replace `scale` by the values its double-quantized form decodes to.
  static void store_double_quant(std::vector<float>& scale, Quantized& q) {
    const auto n = static_cast<int64_t>(scale.size());
    const int64_t n_outer = (n + kScaleBlock - 1) / kScaleBlock;
    double sum = 0;
    for (float s : scale) sum += s;
    const float offset = n > 0 ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
    Tensor sq = new_part(DType::kI8, {n});
    Tensor ss = new_part(DType::kF32, {n_outer});
    Tensor so = new_part(DType::kF32, {1});
    so.mutable_data_as<float>()[0] = offset;
    for (int64_t b = 0; b < n_outer; ++b) {
      const int64_t end = std::min(n, (b + 1) * kScaleBlock);
      float amax = 0;
      for (int64_t i = b * kScaleBlock; i < end; ++i) amax = max_magnitude(amax, scale[i] - offset);
      const float s2 = amax / 127.0f;
      ss.mutable_data_as<float>()[b] = s2;
      const float inv = s2 == 0 ? 0.0f : 1.0f / s2;
      for (int64_t i = b * kScaleBlock; i < end; ++i) {
        const float c = std::fmax(-127.0f, std::fmin(127.0f, std::nearbyint((scale[i] - offset) * inv)));
        sq.mutable_data_as<int8_t>()[i] = static_cast<int8_t>(c);
        scale[i] = c * s2 + offset;
      }
    }
    q.parts["scales_q"] = sq;
    q.parts["scales_scale"] = ss;
    q.parts["scales_offset"] = so;
  }

  std::vector<float> load_scales(const Quantized& q, int64_t n) const {
    std::vector<float> scale(static_cast<size_t>(n));
    if (param_int(q, "double_quant", 0, 1) == 1) {
      const int64_t n_outer = (n + kScaleBlock - 1) / kScaleBlock;
      const int8_t* sq = part(q, "scales_q", DType::kI8, n).data_as<int8_t>();
      const float* ss = part(q, "scales_scale", DType::kF32, n_outer).data_as<float>();
      const float offset = part(q, "scales_offset", DType::kF32, 1).data_as<float>()[0];
      for (int64_t i = 0; i < n; ++i) scale[i] = static_cast<float>(sq[i]) * ss[i / kScaleBlock] + offset;
      return scale;
    }
    auto it = q.parts.find("scales");
    if (it == q.parts.end() || !is_scale_dtype(it->second.dtype())) {
      throw invalid_input("missing or malformed part 'scales'", q.scheme);
    }
    const Tensor& t = part(q, "scales", it->second.dtype(), n);
    detail::load_scales(t, 0, static_cast<uint64_t>(n), scale.data());
    return scale;
  }

  void decode(const Quantized& q, float* out, bool reference, [[maybe_unused]] int device = -1,
              [[maybe_unused]] const Measure* measure = nullptr) const {
    const int64_t group = param_int(q, "group_size", 8, INT64_MAX / 64);
    if (group % 8 != 0) throw invalid_input("nf4 block size is not a multiple of 8", q.scheme);
    const Layout l = make_layout(q.shape, group);
    check_shape_param(q, l);
    const std::vector<float> scale = load_scales(q, l.rows * l.groups_per_row);
    const Tensor& codes = part(q, "codes", DType::kU8, static_cast<uint64_t>(l.rows * l.padded_cols / 2));
#ifdef TK_HAVE_CUDA
    if (device >= 0) {
      gpu::decode_table(device, codes.data(), 4, l.rows, l.padded_cols, l.cols, levels_.level, l.group, scale.data(),
                         out, measure);
      return;
    }
#endif
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<float> row(l.cols == l.padded_cols ? 0 : static_cast<size_t>(l.padded_cols));
      float* y = row.empty() ? out + r * l.cols : row.data();
      table_.decode_scaled(codes.data() + r * l.padded_cols / 2, l.padded_cols, l.group,
                           scale.data() + r * l.groups_per_row, y, reference);
      if (!row.empty()) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
    });
  }

  nf4::Levels levels_;
  CodeTable table_;
};

}  // namespace

std::unique_ptr<Scheme> make_nf4_scheme() { return std::make_unique<Nf4Scheme>(); }

}  // namespace tk::quant
