// OCP Microscaling (MX) v1.0: blocks of 32 values along a row share one E8M0 scale X =
// 2^e; each element is stored in the element format and means element * X.
//
// Encoding as the spec's conversion (section 6.3): e = floor(log2(amax)) - emax_elem,
// clamped to the E8M0 range [-127, 127] (e = -127 for an all-zero block); elements are
// x / X rounded to nearest, ties to even, saturating at the element's largest value.
// --scale-rule ceil takes the smallest e with amax / 2^e <= max_elem (nothing clips);
// search takes whichever of e - 1, e, e + 1 gives the least (weighted) squared error.
// A block holding NaN or Inf gets the NaN scale 0xFF (all its values decode as NaN).
// The block search is minifloat_math.h's, which the GPU path (cuda/minifloat.cu) runs too.
//
// Parts: "codes" in the element dtype itself [rows, padded_cols] (F8_E4M3, F8_E5M2,
// F6_E2M3, F6_E3M2 and F4 packed LSB first, as safetensors stores them: two F4 codes
// per byte, low nibble first; four F6 codes per three bytes), I8 for MXINT8 (value =
// code / 64), and "scales" F8_E8M0 [rows, padded_cols / 32].
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tk/core/dtype_array.h"
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

using mx::kBlock;

struct MxFormat {
  const char* name;
  DType element;  // kI8 for MXINT8
  int emax;       // exponent of the element's largest normal power of two
  float max;      // largest element magnitude
};

constexpr MxFormat kMxFormats[] = {
    {"mxfp8_e4m3", DType::kF8E4M3, 8, 448.0f},   {"mxfp8_e5m2", DType::kF8E5M2, 15, 57344.0f},
    {"mxfp6_e2m3", DType::kF6E2M3, 2, 7.5f},     {"mxfp6_e3m2", DType::kF6E3M2, 4, 28.0f},
    {"mxfp4", DType::kF4, 2, 6.0f},              {"mxint8", DType::kI8, 0, 127.0f / 64.0f},
};

const char* rule_name(ScaleRule r) {
  switch (r) {
    case ScaleRule::kCeil: return "ceil";
    case ScaleRule::kSearch: return "search";
    default: return "floor";
  }
}

class MxScheme final : public GpuDecodedScheme<MxScheme> {
 public:
  bool takes_group_size() const override { return false; }
  explicit MxScheme(const MxFormat& f) : f_(f) {
    const int bits = dtype_bits(f.element);
    bits_ = bits;
    table_.resize(256);
    for (int c = 0; c < 256; ++c) table_[c] = element_value(static_cast<uint8_t>(c));
    decoder_ = CodeTable(bits, table_.data(), f.element);
    element_ = {f.element == DType::kI8 ? tk::detail::FloatFormat{} : tk::detail::float_format(f.element),
                f.element == DType::kI8, f.emax, f.max};
  }

  std::string name() const override { return f_.name; }
  std::string description() const override {
    return std::string(f_.name) + ": OCP MX v1.0, blocks of 32 with an E8M0 scale (scale rule floor, ceil or search)";
  }

  int64_t row_block(int64_t, const QuantOptions&) const override { return kBlock; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions&) const override {
    const Layout l = make_layout(Shape{rows, cols}, kBlock);
    const double bytes = static_cast<double>(l.rows * l.padded_cols * bits_ / 8 + l.rows * l.groups_per_row);
    return bytes * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.group_size != 0 && o.group_size != kBlock) throw usage_error("MX schemes use blocks of 32");
    const Layout l = make_layout(shape, kBlock);
    Quantized q = new_quantized(name(), shape, l);
    const ScaleRule rule = o.scale_rule == ScaleRule::kDefault ? ScaleRule::kFloor : o.scale_rule;
    q.params["scale_rule"] = rule_name(rule);
    const DType code_dtype = f_.element;
    Tensor codes = new_part(code_dtype, {l.rows, l.padded_cols});
    Tensor scales = new_part(DType::kF8E8M0, {l.rows, l.groups_per_row});
    const PaddedInput in = pad_input(x, l, o.importance);
#ifdef TK_HAVE_CUDA
    if (o.device >= 0) {
      gpu::Groups(o.device, in.data, in.weights.data(), l.rows, l.padded_cols, kBlock)
          .encode_mx(element_, table_.data(), rule == ScaleRule::kCeil, rule == ScaleRule::kSearch, bits_,
                     codes.mutable_data(), scales.mutable_data());
    } else
#endif
      encode_rows(in, l, rule, o.reference, codes, scales);
    q.parts["codes"] = codes;
    q.parts["scales"] = scales;
    return q;
  }


 private:
  friend class GpuDecodedScheme<MxScheme>;

  float element_value(uint8_t code) const {
    if (f_.element == DType::kI8) return static_cast<float>(static_cast<int8_t>(code)) / 64.0f;
    return static_cast<float>(tk::detail::float_format_decode(tk::detail::float_format(f_.element), code));
  }

  void encode_rows(const PaddedInput& in, const Layout& l, ScaleRule rule, bool reference, Tensor& codes,
                   Tensor& scales) const {
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<uint8_t> row(static_cast<size_t>(l.padded_cols));
      const float* xr = in.data + r * l.padded_cols;
      uint8_t* row_scales = scales.mutable_data() + r * l.groups_per_row;
#if TK_X86
      if (!reference && use_avx2()) {
        encode_row_avx2(xr, in.weights.data(), l.groups_per_row, rule, row.data(), row_scales);
      } else
#endif
        encode_row(xr, in.weights.data(), l.groups_per_row, rule, reference, row.data(), row_scales);
      uint8_t* dst = codes.mutable_data() + r * l.padded_cols * bits_ / 8;
      if (bits_ == 8) {
        std::memcpy(dst, row.data(), row.size());
      } else {
        pack_bits(row.data(), l.padded_cols, bits_, dst, reference);
      }
    });
  }

  // The blocks of one row: their codes into `codes`, their E8M0 scales into `scales`.
  // Compiled as it stands and, inlined with mx::encode_block, into encode_row_avx2,
  // where the block loops vectorise for AVX2 (the same values: every step is exact or
  // rounds alike).
  [[gnu::always_inline]] inline void encode_row(const float* x, const float* w, int64_t blocks, ScaleRule rule,
                                                bool reference, uint8_t* codes, uint8_t* scales) const {
    for (int64_t b = 0; b < blocks; ++b) {
      scales[b] = encode_block(x + b * kBlock, w + b * kBlock, rule, reference, codes + b * kBlock);
    }
  }
#if TK_X86
  TK_TARGET_AVX2 void encode_row_avx2(const float* x, const float* w, int64_t blocks, ScaleRule rule, uint8_t* codes,
                                      uint8_t* scales) const {
    encode_row(x, w, blocks, rule, false, codes, scales);
  }
#endif

  // Encode one block (mx::encode_block); returns its E8M0 scale code.
  [[gnu::always_inline]] inline uint8_t encode_block(const float* x, const float* w, ScaleRule rule, bool reference,
                                                     uint8_t* codes) const {
    return mx::encode_block(element_, table_.data(), x, w, rule == ScaleRule::kCeil, rule == ScaleRule::kSearch, codes,
                            [&](const float* v, int64_t n, uint8_t* c) { encode_minifloat(f_.element, v, n, c, reference); });
  }

  void decode(const Quantized& q, float* out, bool reference, [[maybe_unused]] int device = -1,
              [[maybe_unused]] const Measure* measure = nullptr) const {
    const Layout l = make_layout(q.shape, kBlock);
    check_shape_param(q, l);
    const Tensor& codes = part(q, "codes", f_.element, static_cast<uint64_t>(l.rows * l.padded_cols));
    const Tensor& scales = part(q, "scales", DType::kF8E8M0, static_cast<uint64_t>(l.rows * l.groups_per_row));
#ifdef TK_HAVE_CUDA
    if (device >= 0) {
      std::vector<float> scale(static_cast<size_t>(l.rows * l.groups_per_row));
      decode_e8m0(scales.data(), static_cast<int64_t>(scale.size()), scale.data());
      gpu::decode_table(device, codes.data(), bits_, l.rows, l.padded_cols, l.cols, table_.data(), kBlock,
                        scale.data(), out, measure);
      return;
    }
#endif
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<float> scale(static_cast<size_t>(l.groups_per_row));
      decode_e8m0(scales.data() + r * l.groups_per_row, l.groups_per_row, scale.data());
      std::vector<float> row(l.cols == l.padded_cols ? 0 : static_cast<size_t>(l.padded_cols));
      float* y = row.empty() ? out + r * l.cols : row.data();
      decoder_.decode_scaled(codes.data() + r * l.padded_cols * bits_ / 8, l.padded_cols, kBlock, scale.data(), y,
                             reference);
      if (!row.empty()) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
    });
  }

  MxFormat f_;
  mx::Element element_{};
  int bits_ = 8;
  std::vector<float> table_;
  CodeTable decoder_;
};

}  // namespace

std::unique_ptr<Scheme> make_mx_scheme(const std::string& name) {
  for (const auto& f : kMxFormats) {
    if (name == f.name) return std::make_unique<MxScheme>(f);
  }
  return nullptr;
}

}  // namespace tk::quant
