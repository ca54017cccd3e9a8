// OCP Microscaling (MX) v1.0: blocks of 32 values along a row share one E8M0 scale X =
// 2^e; each element is stored in the element format and means element * X.
//
// Encoding as the spec's conversion (section 6.3): e = floor(log2(amax)) - emax_elem,
// clamped to the E8M0 range [-127, 127] (e = -127 for an all-zero block); elements are
// x / X rounded to nearest, ties to even, saturating at the element's largest value.
// --scale-rule ceil takes the smallest e with amax / 2^e <= max_elem (nothing clips);
// search takes whichever of e - 1, e, e + 1 gives the least (weighted) squared error.
// A block holding NaN or Inf gets the NaN scale 0xFF (all its values decode as NaN).
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
#include "tk/quant/decode_tables.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"

namespace tk::quant {
namespace {

using namespace detail;

constexpr int64_t kBlock = 32;

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

class MxScheme final : public Scheme {
 public:
  bool takes_group_size() const override { return false; }
  explicit MxScheme(const MxFormat& f) : f_(f) {
    const int bits = dtype_bits(f.element);
    bits_ = bits;
    table_.resize(256);
    for (int c = 0; c < 256; ++c) table_[c] = element_value(static_cast<uint8_t>(c));
    decoder_ = CodeTable(bits, table_.data(), f.element);
  }

  std::string name() const override { return f_.name; }
  std::string description() const override {
    return std::string(f_.name) + ": OCP MX v1.0, blocks of 32 with an E8M0 scale (--scale-rule floor|ceil|search)";
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
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<uint8_t> row(static_cast<size_t>(l.padded_cols));
      const float* xr = in.data + r * l.padded_cols;
      uint8_t* row_scales = scales.mutable_data() + r * l.groups_per_row;
#if TK_X86
      if (!o.reference && use_avx2()) {
        encode_row_avx2(xr, in.weights.data(), l.groups_per_row, rule, row.data(), row_scales);
      } else
#endif
        encode_row(xr, in.weights.data(), l.groups_per_row, rule, o.reference, row.data(), row_scales);
      uint8_t* dst = codes.mutable_data() + r * l.padded_cols * bits_ / 8;
      if (bits_ == 8) {
        std::memcpy(dst, row.data(), row.size());
      } else {
        pack_bits(row.data(), l.padded_cols, bits_, dst, o.reference);
      }
    });
    q.parts["codes"] = codes;
    q.parts["scales"] = scales;
    return q;
  }

  void dequantize(const Quantized& q, float* out) const override { decode(q, out, false); }
  void dequantize_reference(const Quantized& q, float* out) const override { decode(q, out, true); }

 private:
  float element_value(uint8_t code) const {
    if (f_.element == DType::kI8) return static_cast<float>(static_cast<int8_t>(code)) / 64.0f;
    return static_cast<float>(tk::detail::float_format_decode(tk::detail::float_format(f_.element), code));
  }

  // The blocks of one row: their codes into `codes`, their E8M0 scales into `scales`.
  // Compiled as it stands and, inlined with the functions below, into encode_row_avx2,
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

  // Codes of the 32 values scaled by 2^-e; 2^-e and the products are exact in f32 for
  // every value that does not round to zero.
  [[gnu::always_inline]] inline void encode_elements(const float* x, int e, bool reference, uint8_t* codes) const {
    float v[kBlock];
    const float inv = std::ldexp(1.0f, -e);
    for (int64_t i = 0; i < kBlock; ++i) v[i] = x[i] * inv;
    if (f_.element != DType::kI8) {
      encode_minifloat(f_.element, v, kBlock, codes, reference);
      return;
    }
    for (int64_t i = 0; i < kBlock; ++i) {
      const float s = std::nearbyint(v[i] * 64.0f);
      codes[i] = static_cast<uint8_t>(static_cast<int8_t>(std::fmax(-127.0f, std::fmin(127.0f, s))));
    }
  }

  [[gnu::always_inline]] inline double block_error(const float* x, const float* w, int e, const uint8_t* codes) const {
    const float scale = std::ldexp(1.0f, e);
    double err = 0;
    for (int64_t i = 0; i < kBlock; ++i) {
      const double d = static_cast<double>(x[i]) - static_cast<double>(table_[codes[i]] * scale);
      err += static_cast<double>(w[i]) * d * d;
    }
    return err;
  }

  // Encode one block; returns its E8M0 scale code.
  [[gnu::always_inline]] inline uint8_t encode_block(const float* x, const float* w, ScaleRule rule, bool reference,
                                                     uint8_t* codes) const {
    float amax = 0;
    bool finite = true;
    for (int64_t i = 0; i < kBlock; ++i) {
      finite = finite && std::isfinite(x[i]);
      amax = max_magnitude(amax, x[i]);
    }
    if (!finite) {
      std::memset(codes, 0, kBlock);
      return 0xff;
    }
    int e = -127;
    if (amax > 0) e = std::ilogb(amax) - f_.emax;
    if (rule == ScaleRule::kCeil && amax > 0) {
      while (e < 127 && amax * std::ldexp(1.0f, -e) > f_.max) ++e;
    }
    e = std::clamp(e, -127, 127);
    encode_elements(x, e, reference, codes);
    if (rule == ScaleRule::kSearch && amax > 0) {
      double best = block_error(x, w, e, codes);
      const int base = e;
      uint8_t trial[kBlock];
      for (int cand : {base - 1, base + 1}) {
        if (cand < -127 || cand > 127) continue;
        encode_elements(x, cand, reference, trial);
        const double err = block_error(x, w, cand, trial);
        if (err < best) {
          best = err;
          e = cand;
          std::memcpy(codes, trial, kBlock);
        }
      }
    }
    return static_cast<uint8_t>(e + 127);
  }

  void decode(const Quantized& q, float* out, bool reference) const {
    const Layout l = make_layout(q.shape, kBlock);
    check_shape_param(q, l);
    const Tensor& codes = part(q, "codes", f_.element, static_cast<uint64_t>(l.rows * l.padded_cols));
    const Tensor& scales = part(q, "scales", DType::kF8E8M0, static_cast<uint64_t>(l.rows * l.groups_per_row));
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
