// NVFP4: E2M1 values in blocks of 16 along a row, each block with an E4M3 scale (used
// unsigned), and one f32 scale for the whole tensor: y = e2m1 * (e4m3 * t). 4.5 bits
// per weight plus 32 bits per tensor.
//
// As NVIDIA's recipe: t = amax_tensor / (448 * 6), so that the block scale amax_block /
// (6 t) fits E4M3; it is rounded to nearest even. Without --fast the block scale is then
// the E4M3 code among that one and its two neighbours with the least (weighted) squared
// error. Elements are x / (e4m3 * t) rounded to nearest even, saturating at +-6.
//
// The block search is minifloat_math.h's, which the GPU path (cuda/minifloat.cu) runs too.
//
// Parts: "codes" F4 [rows, padded_cols] (two per byte, low nibble first), "scales"
// F8_E4M3 [rows, padded_cols / 16], "tensor_scale" F32 [1].
#include <cmath>
#include <cstring>

#include "tk/core/error.h"
#include "tk/core/float_format.h"
#include "tk/core/isa.h"
#include "tk/device/device.h"
#include "tk/quant/decode_tables.h"
#include "tk/quant/minifloat_math.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"
#ifdef TK_HAVE_CUDA
#include "tk/quant/cuda/groups.h"
#endif

namespace tk::quant {
namespace {

using namespace detail;

using nvfp4::kBlock;

class Nvfp4Scheme final : public GpuDecodedScheme<Nvfp4Scheme> {
 public:
  bool takes_group_size() const override { return false; }
  Nvfp4Scheme() {
    const auto& e2m1 = tk::detail::float_format(DType::kF4);
    const auto& e4m3 = tk::detail::float_format(DType::kF8E4M3);
    for (int c = 0; c < 256; ++c) {
      fp4_[c] = static_cast<float>(tk::detail::float_format_decode(e2m1, c));
      fp8_[c] = static_cast<float>(tk::detail::float_format_decode(e4m3, c));
    }
    decoder_ = CodeTable(4, fp4_, DType::kF4);
    scale_decoder_ = CodeTable(8, fp8_, DType::kF8E4M3);
  }

  std::string name() const override { return "nvfp4"; }
  std::string description() const override {
    return "nvfp4: E2M1 in blocks of 16 with an E4M3 block scale and an f32 tensor scale";
  }

  int64_t row_block(int64_t, const QuantOptions&) const override { return kBlock; }
  // The tensor scale is the largest magnitude's: a sample holding the largest row has it.
  bool rows_independent(const QuantOptions&) const override { return true; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions&) const override {
    const Layout l = make_layout(Shape{rows, cols}, kBlock);
    const double bytes = static_cast<double>(l.rows * l.padded_cols / 2 + l.rows * l.groups_per_row + 4);
    return bytes * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.group_size != 0 && o.group_size != kBlock) throw usage_error("nvfp4 uses blocks of 16");
    const Layout l = make_layout(shape, kBlock);
    Quantized q = new_quantized(name(), shape, l);
    Tensor codes = new_part(DType::kF4, {l.rows, l.padded_cols});
    Tensor scales = new_part(DType::kF8E4M3, {l.rows, l.groups_per_row});
    Tensor tensor_scale = new_part(DType::kF32, {1});
    const PaddedInput in = pad_input(x, l, o.importance);
    float amax = 0;
    for (int64_t i = 0; i < l.rows * l.padded_cols; ++i) amax = max_magnitude(amax, in.data[i]);
    float t = amax > 0 ? amax / (448.0f * 6.0f) : 1.0f;
    if (o.power_of_two_tensor_scale) {
      int e = 0;
      if (std::frexp(t, &e) != 0.5f) t = std::ldexp(1.0f, e);  // the next power of two up
    }
    tensor_scale.mutable_data_as<float>()[0] = t;
#ifdef TK_HAVE_CUDA
    if (o.device >= 0) {
      gpu::Groups(o.device, in.data, in.weights.data(), l.rows, l.padded_cols, kBlock)
          .encode_nvfp4(fp4_, fp8_, t, o.fast, codes.mutable_data(), scales.mutable_data());
    } else
#endif
      parallel_for(l.rows, [&](int64_t r) {
        std::vector<uint8_t> row(static_cast<size_t>(l.padded_cols));
        const float* xr = in.data + r * l.padded_cols;
        uint8_t* sr = scales.mutable_data() + r * l.groups_per_row;
#if TK_X86
        if (!o.reference && use_avx2()) {
          encode_row_avx2(xr, in.weights.data(), l, t, o, sr, row.data());
        } else
#endif
          encode_row(xr, in.weights.data(), l, t, o, sr, row.data());
        pack_bits(row.data(), l.padded_cols, 4, codes.mutable_data() + r * l.padded_cols / 2, o.reference);
      });
    q.parts["codes"] = codes;
    q.parts["scales"] = scales;
    q.parts["tensor_scale"] = tensor_scale;
    return q;
  }


 private:
  friend class GpuDecodedScheme<Nvfp4Scheme>;

  // The scale codes and element codes of one row's blocks. Compiled as they stand and,
  // inlined with nvfp4::encode_block, into the _avx2 twin, where the block loops
  // vectorise for AVX2 (the same values: no step is reordered or fused).
  [[gnu::always_inline]] inline void encode_row(const float* x, const float* w, const Layout& l, float t,
                                                const QuantOptions& o, uint8_t* scale_codes, uint8_t* codes) const {
    for (int64_t b = 0; b < l.groups_per_row; ++b) {
      scale_codes[b] = encode_block(x + b * kBlock, w + b * kBlock, t, o, codes + b * kBlock);
    }
  }
#if TK_X86
  TK_TARGET_AVX2 void encode_row_avx2(const float* x, const float* w, const Layout& l, float t, const QuantOptions& o,
                                      uint8_t* scale_codes, uint8_t* codes) const {
    encode_row(x, w, l, t, o, scale_codes, codes);
  }
#endif

  // Encode one block (nvfp4::encode_block); returns its E4M3 scale code.
  [[gnu::always_inline]] inline uint8_t encode_block(const float* x, const float* w, float t, const QuantOptions& o,
                                                     uint8_t* codes) const {
    return nvfp4::encode_block(tk::detail::float_format(DType::kF8E4M3), fp4_, fp8_, x, w, t, o.fast, codes,
                               [&](const float* v, int64_t n, uint8_t* c) {
                                 encode_minifloat(DType::kF4, v, n, c, o.reference);
                               });
  }

  void decode(const Quantized& q, float* out, bool reference, [[maybe_unused]] int device = -1,
              [[maybe_unused]] const Measure* measure = nullptr) const {
    const Layout l = make_layout(q.shape, kBlock);
    check_shape_param(q, l);
    const Tensor& codes = part(q, "codes", DType::kF4, static_cast<uint64_t>(l.rows * l.padded_cols));
    const Tensor& scales = part(q, "scales", DType::kF8E4M3, static_cast<uint64_t>(l.rows * l.groups_per_row));
    const float t = part(q, "tensor_scale", DType::kF32, 1).data_as<float>()[0];
#ifdef TK_HAVE_CUDA
    if (device >= 0) {
      std::vector<float> scale(static_cast<size_t>(l.rows * l.groups_per_row));
      for (size_t b = 0; b < scale.size(); ++b) scale[b] = fp8_[scales.data()[b]] * t;
      gpu::decode_table(device, codes.data(), 4, l.rows, l.padded_cols, l.cols, fp4_, kBlock, scale.data(), out, measure);
      return;
    }
#endif
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<float> scale(static_cast<size_t>(l.groups_per_row));
      // The block scales e4m3 * t are themselves a table decode (a sixth of the work
      // when done one at a time).
      const uint8_t* sc = scales.data() + r * l.groups_per_row;
      const int64_t whole = reference ? 0 : l.groups_per_row / 8 * 8;
      if (whole > 0) scale_decoder_.decode_scaled(sc, whole, whole, &t, scale.data(), false);
      for (int64_t b = whole; b < l.groups_per_row; ++b) scale[b] = fp8_[sc[b]] * t;
      std::vector<float> row(l.cols == l.padded_cols ? 0 : static_cast<size_t>(l.padded_cols));
      float* y = row.empty() ? out + r * l.cols : row.data();
      decoder_.decode_scaled(codes.data() + r * l.padded_cols / 2, l.padded_cols, kBlock, scale.data(), y, reference);
      if (!row.empty()) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
    });
  }

  float fp4_[256];
  float fp8_[256];
  CodeTable decoder_;
  CodeTable scale_decoder_;
};

}  // namespace

std::unique_ptr<Scheme> make_nvfp4_scheme() { return std::make_unique<Nvfp4Scheme>(); }

}  // namespace tk::quant
