// FP8 schemes fp8_e4m3 and fp8_e5m2: every value x / s rounded to nearest even in the
// format, saturating at its largest finite value (never Inf or NaN from finite input),
// with one f32 scale s per tensor (default) or per row (--granularity channel).
//
// The scale: amax / max_elem with --fast; otherwise the candidate among amax / max_elem *
// 2^(-k/4), k = 0..4, with the least (weighted) squared error (a smaller scale spends
// more of the format's range on the bulk at the price of clipping the largest values).
//
// On the GPU (cuda/minifloat.cu) every row's error under each candidate, and the codes,
// are computed there with the same sums (minifloat_math.h); the candidates are chosen here.
//
// Parts: "codes" in the FP8 dtype [rows, cols], "scales" F32 [1] or [rows, 1].
#include <cmath>

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

using fp8::kCandidates;

class Fp8Scheme final : public GpuDecodedScheme<Fp8Scheme> {
 public:
  bool takes_group_size() const override { return false; }
  Fp8Scheme(std::string name, DType dtype) : name_(std::move(name)), dtype_(dtype) {
    const auto& f = tk::detail::float_format(dtype);
    max_ = static_cast<float>(tk::detail::float_format_decode(f, f.max_code));
    table_.resize(256);
    for (int c = 0; c < 256; ++c) table_[c] = static_cast<float>(tk::detail::float_format_decode(f, c));
    decoder_ = CodeTable(8, table_.data(), dtype);
    for (int k = 0; k < kCandidates; ++k) factor_[k] = std::exp2(-0.25f * static_cast<float>(k));
  }

  std::string name() const override { return name_; }
  std::string description() const override {
    return name_ + ": FP8 codes with an f32 scale per tensor (or per channel), saturating";
  }

  bool rows_independent(const QuantOptions& o) const override { return per_channel(o); }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions& o) const override {
    const double numel = static_cast<double>(rows * cols);
    const double scales = per_channel(o) ? static_cast<double>(rows) : 1.0;
    return (8.0 * numel + 32.0 * scales) / numel;
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.granularity == Granularity::kGroup) throw usage_error(name_ + " takes per-tensor or per-channel scales");
    const Layout l = make_layout(shape, 1);
    Quantized q;
    q.scheme = name_;
    q.shape = shape;
    q.params["granularity"] = per_channel(o) ? "channel" : "tensor";
    Tensor codes = new_part(dtype_, {l.rows, l.cols});
    Tensor scales = new_part(DType::kF32, per_channel(o) ? Shape{l.rows, 1} : Shape{1});
    std::vector<float> w(static_cast<size_t>(l.cols));
    for (int64_t c = 0; c < l.cols; ++c) w[c] = o.importance ? o.importance[c] : 1.0f;
#ifdef TK_HAVE_CUDA
    if (o.device >= 0) {
      quantize_gpu(x, l, w, o, codes, scales);
    } else
#endif
      quantize_cpu(x, l, w, o, codes, scales);
    q.parts["codes"] = codes;
    q.parts["scales"] = scales;
    return q;
  }


 private:
  friend class GpuDecodedScheme<Fp8Scheme>;

  static bool per_channel(const QuantOptions& o) { return o.granularity == Granularity::kChannel; }

  void quantize_cpu(const float* x, const Layout& l, const std::vector<float>& w, const QuantOptions& o, Tensor& codes,
                    Tensor& scales) const {
    if (per_channel(o)) {
      parallel_for(l.rows, [&](int64_t r) {
        const float s = fit_scale(x + r * l.cols, l.cols, 1, w.data(), o);
        scales.mutable_data_as<float>()[r] = s;
        encode(x + r * l.cols, l.cols, s, o.reference, codes.mutable_data() + r * l.cols);
      });
    } else {
      const float s = fit_scale(x, l.cols, l.rows, w.data(), o);
      scales.mutable_data_as<float>()[0] = s;
      parallel_for(l.rows, [&](int64_t r) {
        encode(x + r * l.cols, l.cols, s, o.reference, codes.mutable_data() + r * l.cols);
      });
    }
  }

  void encode(const float* x, int64_t n, float s, bool reference, uint8_t* codes) const {
    const float inv = fp8::inverse(s);
    std::vector<float> v(static_cast<size_t>(n));
#if TK_X86
    if (!reference && use_avx2()) scale_row_avx2(x, n, inv, v.data());
    else
#endif
      scale_row(x, n, inv, v.data());
    encode_minifloat(dtype_, v.data(), n, codes, reference);
  }

  // x / s as x * (1 / s), one rounding per value in any width: compiled as it stands and
  // into the _avx2 twin (the scale search runs it once per row and candidate).
  [[gnu::always_inline]] static inline void scale_row(const float* x, int64_t n, float inv, float* v) {
    for (int64_t i = 0; i < n; ++i) v[i] = x[i] * inv;
  }
#if TK_X86
  TK_TARGET_AVX2 static void scale_row_avx2(const float* x, int64_t n, float inv, float* v) {
    scale_row(x, n, inv, v);
  }
#endif

  // The weighted squared error of one row coded as `c` under scale s. Compiled as it stands
  // and, inlined, into the _avx2 twin (the same sums: no step is reordered or fused).
  [[gnu::always_inline]] inline double row_error(const float* x, const uint8_t* c, const float* w, int64_t cols,
                                                 float s) const {
    return coded_error(x, w, cols, table_.data(), s, c);
  }
#if TK_X86
  TK_TARGET_AVX2 double row_error_avx2(const float* x, const uint8_t* c, const float* w, int64_t cols, float s) const {
    return row_error(x, c, w, cols, s);
  }
#endif

  // Weighted squared error of `rows` rows of `cols` values under scale s.
  double error(const float* x, int64_t cols, int64_t rows, const float* w, float s, bool reference) const {
    std::vector<uint8_t> codes(static_cast<size_t>(cols));
    std::vector<double> row_err(static_cast<size_t>(rows));
    parallel_for(rows, [&](int64_t r) {
      std::vector<uint8_t> c(static_cast<size_t>(cols));
      encode(x + r * cols, cols, s, reference, c.data());
#if TK_X86
      if (!reference && use_avx2()) {
        row_err[r] = row_error_avx2(x + r * cols, c.data(), w, cols, s);
        return;
      }
#endif
      row_err[r] = row_error(x + r * cols, c.data(), w, cols, s);
    });
    double total = 0;
    for (double e : row_err) total += e;  // in row order: the same for any thread count
    return total;
  }

  float fit_scale(const float* x, int64_t cols, int64_t rows, const float* w, const QuantOptions& o) const {
    return fp8::fit_scale(x, cols * rows, max_, factor_, o.fast, [&](const float* candidates, double* err) {
      for (int k = 0; k < kCandidates; ++k) err[k] = error(x, cols, rows, w, candidates[k], o.reference);
    });
  }

#ifdef TK_HAVE_CUDA
  // quantize() on device o.device: the rows' errors and codes there, the choice of a
  // tensor scale here (its sum over rows in row order, as error() adds them).
  void quantize_gpu(const float* x, const Layout& l, const std::vector<float>& w, const QuantOptions& o,
                    Tensor& codes, Tensor& scales) const {
    const tk::detail::FloatFormat& f = tk::detail::float_format(dtype_);
    gpu::Groups rows(o.device, x, w.data(), l.rows, l.cols, 1);
    std::vector<float> row_scales;
    if (per_channel(o)) {
      row_scales = rows.fp8_row_scales(f, table_.data(), max_, factor_, o.fast);
      std::copy(row_scales.begin(), row_scales.end(), scales.mutable_data_as<float>());
    } else {
      const auto errors = [&](const float* candidates, double* err) {
        const std::vector<double> row_err = rows.fp8_row_errors(f, table_.data(), candidates, kCandidates);
        for (int k = 0; k < kCandidates; ++k) {
          err[k] = 0;
          for (int64_t r = 0; r < l.rows; ++r) err[k] += row_err[static_cast<size_t>(k * l.rows + r)];
        }
      };
      const float s = fp8::fit_scale(x, l.rows * l.cols, max_, factor_, o.fast, errors);
      scales.mutable_data_as<float>()[0] = s;
      row_scales.assign(static_cast<size_t>(l.rows), s);
    }
    rows.encode_fp8(f, row_scales.data(), codes.mutable_data());
  }
#endif

  void decode(const Quantized& q, float* out, bool reference, [[maybe_unused]] int device = -1,
              [[maybe_unused]] const Measure* measure = nullptr) const {
    const Layout l = make_layout(q.shape, 1);
    const std::string g = param(q, "granularity");
    if (g != "tensor" && g != "channel") throw invalid_input("bad granularity '" + g + "'", q.scheme);
    const uint64_t n_scales = g == "channel" ? static_cast<uint64_t>(l.rows) : 1;
    const Tensor& codes = part(q, "codes", dtype_, static_cast<uint64_t>(l.rows * l.cols));
    const Tensor& scales = part(q, "scales", DType::kF32, n_scales);
#ifdef TK_HAVE_CUDA
    if (device >= 0) {
      std::vector<float> row_scales(static_cast<size_t>(l.rows));
      for (int64_t r = 0; r < l.rows; ++r) row_scales[r] = scales.data_as<float>()[g == "channel" ? r : 0];
      gpu::decode_table(device, codes.data(), 8, l.rows, l.cols, l.cols, table_.data(), l.cols, row_scales.data(), out, measure);
      return;
    }
#endif
    parallel_for(l.rows, [&](int64_t r) {
      const float s = scales.data_as<float>()[g == "channel" ? r : 0];
      const uint8_t* c = codes.data() + r * l.cols;
      float* y = out + r * l.cols;
      const int64_t whole = l.cols / 8 * 8;  // the kernel takes multiples of 8
      if (whole > 0) decoder_.decode_scaled(c, whole, whole, &s, y, reference);
      for (int64_t i = whole; i < l.cols; ++i) y[i] = table_[c[i]] * s;
    });
  }

  std::string name_;
  DType dtype_;
  float max_ = 0;
  std::vector<float> table_;
  CodeTable decoder_;
  float factor_[kCandidates];  // the candidates' 2^(-k/4)
};

}  // namespace

std::unique_ptr<Scheme> make_fp8_scheme(const std::string& name) {
  if (name == "fp8_e4m3") return std::make_unique<Fp8Scheme>(name, DType::kF8E4M3);
  if (name == "fp8_e5m2") return std::make_unique<Fp8Scheme>(name, DType::kF8E5M2);
  return nullptr;
}

}  // namespace tk::quant
