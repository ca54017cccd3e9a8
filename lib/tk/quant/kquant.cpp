// K-quant-style super-block schemes (after llama.cpp's Q2_K..Q6_K): rows are cut into
// super-blocks of 256 values, each with an f16 scale d (and, asymmetric, an f16 dmin),
// and into sub-blocks of 16 or 32 values, each with a small integer scale q (and min
// qm) of `scale_bits` bits:
//   symmetric:  y = d * q * (code - 2^(b-1)),  q signed in [-2^(s-1), 2^(s-1) - 1]
//   asymmetric: y = d * q * code - dmin * qm,  q, qm unsigned in [0, 2^s - 1]
//
//   name  b  sub  s  kind        bits per weight
//   q2k   2  16   4  asymmetric  2 + 8/16 + 32/256  = 2.625
//   q3k   3  16   6  symmetric   3 + 6/16 + 16/256  = 3.4375
//   q4k   4  32   6  asymmetric  4 + 12/32 + 32/256 = 4.5
//   q5k   5  32   6  asymmetric  5 + 12/32 + 32/256 = 5.5
//   q6k   6  16   8  symmetric   6 + 8/16 + 16/256  = 6.5625
//   q8k   8  16   6  symmetric   8 + 6/16 + 16/256  = 8.4375
//
// Quantization: each sub-block's best real scale (and offset) comes from the candidate
// search of search.cpp; the super-block scale is then tried at a few factors around
// max|scale| / 2^(s-1) (or max / (2^s - 1)), and for each the integer sub-scales next to
// the rounded ones are tried with the sub-block's codes recomputed; the combination
// with the least (weighted) squared error after all rounding is kept.
//
// Parts: "codes" U8 [rows, padded_cols * b / 8], "sub_scales" U8 [rows, sub-blocks * s /
// 8] (and "sub_mins"), both LSB-first bit streams (symmetric q stored as q + 2^(s-1)),
// "d" F16 [rows, padded_cols / 256] (and "dmin"). Rows are padded to a multiple of 256.
#include <algorithm>
#include <array>
#include <cmath>

#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"

namespace tk::quant {
namespace {

using namespace detail;

constexpr int64_t kSuper = 256;
constexpr int kMaxSubs = 16;

struct KFormat {
  const char* name;
  int bits;
  int sub;
  int scale_bits;
  bool asymmetric;
};

constexpr KFormat kFormats[] = {
    {"q2k", 2, 16, 4, true},  {"q3k", 3, 16, 6, false}, {"q4k", 4, 32, 6, true},
    {"q5k", 5, 32, 6, true},  {"q6k", 6, 16, 8, false}, {"q8k", 8, 16, 6, false},
};

// Factors tried for the super-block scale (the first is the plain one).
constexpr float kSuperFactors[] = {1.0f, 0.96f, 1.04f, 0.92f, 1.08f};

float round_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

// One super-block's choice: sub-block scales as stored integers and the f16 scales.
struct SuperChoice {
  float d = 0, dmin = 0;
  std::array<int, kMaxSubs> q{}, qm{};
  double err = 0;
};

class KScheme final : public Scheme {
 public:
  explicit KScheme(const KFormat& f) : f_(f), subs_(static_cast<int>(kSuper / f.sub)) {}

  std::string name() const override { return f_.name; }
  std::string description() const override {
    return std::string(f_.name) + ": " + std::to_string(f_.bits) + "-bit codes in 256-value super-blocks with " +
           std::to_string(f_.scale_bits) + "-bit sub-block scales" + (f_.asymmetric ? " and mins" : "");
  }

  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions&) const override {
    const Layout l = make_layout(Shape{rows, cols}, kSuper);
    return static_cast<double>(stored_bytes(l)) * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.group_size != 0 && o.group_size != kSuper) throw usage_error(name() + " uses super-blocks of 256");
    const Layout l = make_layout(shape, kSuper);
    Quantized q;
    q.scheme = name();
    q.shape = shape;
    set_layout_params(q, l);
    const int64_t n_super = l.groups_per_row;
    const int64_t row_subs = n_super * subs_;
    Tensor codes = new_part(DType::kU8, {l.rows, l.padded_cols * f_.bits / 8});
    Tensor sub_scales = new_part(DType::kU8, {l.rows, row_subs * f_.scale_bits / 8});
    Tensor sub_mins = f_.asymmetric ? new_part(DType::kU8, {l.rows, row_subs * f_.scale_bits / 8}) : Tensor();
    Tensor d = new_part(DType::kF16, {l.rows, n_super});
    Tensor dmin = f_.asymmetric ? new_part(DType::kF16, {l.rows, n_super}) : Tensor();
    const PaddedInput in = pad_input(x, l, o.importance);
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<uint8_t> row_codes(static_cast<size_t>(l.padded_cols));
      std::vector<uint8_t> row_q(static_cast<size_t>(row_subs)), row_qm(static_cast<size_t>(row_subs));
      for (int64_t s = 0; s < n_super; ++s) {
        const int64_t c0 = s * kSuper;
        const float* xs = in.data + r * l.padded_cols + c0;
        const SuperChoice c = choose(xs, in.weights.data() + c0, o);
        encode_super(xs, c, o.reference, row_codes.data() + c0);
        for (int i = 0; i < subs_; ++i) {
          row_q[s * subs_ + i] = static_cast<uint8_t>(c.q[i] + (f_.asymmetric ? 0 : qlo_abs()));
          row_qm[s * subs_ + i] = static_cast<uint8_t>(c.qm[i]);
        }
        d.mutable_data_as<uint16_t>()[r * n_super + s] = f32_to_f16(c.d);
        if (f_.asymmetric) dmin.mutable_data_as<uint16_t>()[r * n_super + s] = f32_to_f16(c.dmin);
      }
      pack_bits(row_codes.data(), l.padded_cols, f_.bits, codes.mutable_data() + r * l.padded_cols * f_.bits / 8,
                o.reference);
      const int64_t sb = row_subs * f_.scale_bits / 8;
      pack_bits(row_q.data(), row_subs, f_.scale_bits, sub_scales.mutable_data() + r * sb, o.reference);
      if (f_.asymmetric) pack_bits(row_qm.data(), row_subs, f_.scale_bits, sub_mins.mutable_data() + r * sb, o.reference);
    });
    q.parts["codes"] = codes;
    q.parts["sub_scales"] = sub_scales;
    q.parts["d"] = d;
    if (f_.asymmetric) {
      q.parts["sub_mins"] = sub_mins;
      q.parts["dmin"] = dmin;
    }
    return q;
  }

  void dequantize(const Quantized& q, float* out) const override { decode(q, out, false); }
  void dequantize_reference(const Quantized& q, float* out) const override { decode(q, out, true); }

 private:
  int nmax() const { return 1 << (f_.bits - 1); }
  int top() const { return (1 << f_.bits) - 1; }
  int qlo_abs() const { return 1 << (f_.scale_bits - 1); }
  int qtop() const { return (1 << f_.scale_bits) - 1; }

  uint64_t stored_bytes(const Layout& l) const {
    const int64_t scale_bytes = l.groups_per_row * subs_ * f_.scale_bits / 8 + 2 * l.groups_per_row;
    const int64_t per_row = l.padded_cols * f_.bits / 8 + scale_bytes * (f_.asymmetric ? 2 : 1);
    return static_cast<uint64_t>(l.rows * per_row);
  }

  // Error of one sub-block at a real scale (symmetric).
  double sub_error_sym(const float* x, const float* w, const GroupStats& st, float scale, bool reference) const {
    if (scale == 0) return st.swx2;
    const TrialSums t = trial_symmetric(x, w, f_.sub, 1.0f / scale, static_cast<float>(-nmax()),
                                        static_cast<float>(nmax() - 1), reference);
    return error_symmetric(st, t, scale);
  }

  double sub_error_asym(const float* x, const float* w, const GroupStats& st, float scale, float min,
                        bool reference) const {
    if (scale == 0) return error_asymmetric(st, TrialSums{}, 0, min);
    const TrialSums t = trial_asymmetric(x, w, f_.sub, 1.0f / scale, min, static_cast<float>(top()), reference);
    return error_asymmetric(st, t, scale, min);
  }

  SuperChoice choose(const float* x, const float* w, const QuantOptions& o) const {
    std::array<GroupStats, kMaxSubs> st;
    std::array<AffineScale, kMaxSubs> best;
    for (int i = 0; i < subs_; ++i) {
      const float* xi = x + i * f_.sub;
      const float* wi = w + i * f_.sub;
      st[i] = group_stats(xi, wi, f_.sub, o.reference);
      if (f_.asymmetric) {
        best[i] = search_asymmetric(xi, wi, f_.sub, top(), true, o.fast, o.reference);
      } else {
        best[i].d = search_symmetric(xi, wi, f_.sub, nmax(), o.fast, o.reference);
      }
    }
    return f_.asymmetric ? choose_asym(x, w, st, best, o) : choose_sym(x, w, st, best, o);
  }

  SuperChoice choose_sym(const float* x, const float* w, const std::array<GroupStats, kMaxSubs>& st,
                         const std::array<AffineScale, kMaxSubs>& best, const QuantOptions& o) const {
    float smax = 0;
    for (int i = 0; i < subs_; ++i) {
      if (std::fabs(best[i].d) > std::fabs(smax)) smax = best[i].d;
    }
    SuperChoice out;
    if (smax == 0) return out;
    const int qlo = -qlo_abs(), qhi = qlo_abs() - 1;
    const int n_factors = o.fast ? 1 : static_cast<int>(std::size(kSuperFactors));
    const int reach = o.fast ? 0 : 1;
    out.err = -1;
    for (int k = 0; k < n_factors; ++k) {
      SuperChoice c;
      c.d = round_f16(smax / static_cast<float>(qlo) * kSuperFactors[k]);
      if (c.d == 0) continue;
      for (int i = 0; i < subs_; ++i) {
        const int r = std::clamp(static_cast<int>(std::nearbyint(best[i].d / c.d)), qlo, qhi);
        double best_err = -1;
        for (int q = std::max(qlo, r - reach); q <= std::min(qhi, r + reach); ++q) {
          const double e = sub_error_sym(x + i * f_.sub, w + i * f_.sub, st[i], c.d * static_cast<float>(q),
                                         o.reference);
          if (best_err < 0 || e < best_err) {
            best_err = e;
            c.q[i] = q;
          }
        }
        c.err += best_err;
      }
      if (out.err < 0 || c.err < out.err) out = c;
    }
    if (out.err < 0) out = SuperChoice{};
    return out;
  }

  SuperChoice choose_asym(const float* x, const float* w, const std::array<GroupStats, kMaxSubs>& st,
                          const std::array<AffineScale, kMaxSubs>& best, const QuantOptions& o) const {
    float smax = 0, mmax = 0;
    for (int i = 0; i < subs_; ++i) {
      smax = std::fmax(smax, best[i].d);
      mmax = std::fmax(mmax, -best[i].m);
    }
    const int qhi = qtop();
    const int n_factors = o.fast ? 1 : static_cast<int>(std::size(kSuperFactors));
    const int reach = o.fast ? 0 : 1;
    SuperChoice out;
    out.err = -1;
    for (int k = 0; k < n_factors; ++k) {
      SuperChoice c;
      c.d = round_f16(smax / static_cast<float>(qhi) * kSuperFactors[k]);
      c.dmin = round_f16(mmax / static_cast<float>(qhi));
      for (int i = 0; i < subs_; ++i) {
        const int rs = c.d == 0 ? 0 : std::clamp(static_cast<int>(std::nearbyint(best[i].d / c.d)), 0, qhi);
        const int rm = c.dmin == 0 ? 0 : std::clamp(static_cast<int>(std::nearbyint(-best[i].m / c.dmin)), 0, qhi);
        double best_err = -1;
        for (int qs = std::max(0, rs - reach); qs <= std::min(qhi, rs + reach); ++qs) {
          for (int qm = std::max(0, rm - reach); qm <= std::min(qhi, rm + reach); ++qm) {
            const float scale = c.d * static_cast<float>(qs);
            const float min = -(c.dmin * static_cast<float>(qm));
            const double e = sub_error_asym(x + i * f_.sub, w + i * f_.sub, st[i], scale, min, o.reference);
            if (best_err < 0 || e < best_err) {
              best_err = e;
              c.q[i] = qs;
              c.qm[i] = qm;
            }
          }
        }
        c.err += best_err;
      }
      if (out.err < 0 || c.err < out.err) out = c;
    }
    return out;
  }

  void encode_super(const float* x, const SuperChoice& c, bool reference, uint8_t* codes) const {
    for (int i = 0; i < subs_; ++i) {
      const float scale = c.d * static_cast<float>(c.q[i]);
      const float inv = scale == 0 ? 0.0f : 1.0f / scale;
      if (f_.asymmetric) {
        codes_asymmetric(x + i * f_.sub, f_.sub, inv, -(c.dmin * static_cast<float>(c.qm[i])),
                         static_cast<float>(top()), codes + i * f_.sub, reference);
      } else {
        codes_symmetric(x + i * f_.sub, f_.sub, inv, static_cast<float>(-nmax()), static_cast<float>(nmax() - 1),
                        nmax(), codes + i * f_.sub, reference);
      }
    }
  }

  void decode(const Quantized& q, float* out, bool reference) const {
    const Layout l = make_layout(q.shape, kSuper);
    check_shape_param(q, l);
    const int64_t n_super = l.groups_per_row;
    const int64_t row_subs = n_super * subs_;
    const int64_t sb = row_subs * f_.scale_bits / 8;
    const auto n_rows = static_cast<uint64_t>(l.rows);
    const Tensor& codes = part(q, "codes", DType::kU8, n_rows * static_cast<uint64_t>(l.padded_cols * f_.bits / 8));
    const Tensor& sub_scales = part(q, "sub_scales", DType::kU8, n_rows * static_cast<uint64_t>(sb));
    const Tensor& d = part(q, "d", DType::kF16, n_rows * static_cast<uint64_t>(n_super));
    const Tensor* sub_mins = f_.asymmetric ? &part(q, "sub_mins", DType::kU8, n_rows * static_cast<uint64_t>(sb)) : nullptr;
    const Tensor* dmin = f_.asymmetric ? &part(q, "dmin", DType::kF16, n_rows * static_cast<uint64_t>(n_super)) : nullptr;
    const int offset = f_.asymmetric ? 0 : nmax();
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<uint8_t> qs(static_cast<size_t>(row_subs)), qm(static_cast<size_t>(row_subs));
      std::vector<float> row(l.cols == l.padded_cols ? 0 : static_cast<size_t>(l.padded_cols));
      float* y = row.empty() ? out + r * l.cols : row.data();
      unpack_bits(sub_scales.data() + r * sb, row_subs, f_.scale_bits, qs.data(), reference);
      if (sub_mins) unpack_bits(sub_mins->data() + r * sb, row_subs, f_.scale_bits, qm.data(), reference);
      const uint8_t* c = codes.data() + r * l.padded_cols * f_.bits / 8;
      for (int64_t s = 0; s < n_super; ++s) {
        const float ds = f16_to_f32(d.data_as<uint16_t>()[r * n_super + s]);
        const float dm = dmin ? f16_to_f32(dmin->data_as<uint16_t>()[r * n_super + s]) : 0.0f;
        for (int i = 0; i < subs_; ++i) {
          const int64_t k = s * subs_ + i;
          const int qv = static_cast<int>(qs[k]) - (f_.asymmetric ? 0 : qlo_abs());
          const float scale = ds * static_cast<float>(qv);
          const float min = dmin ? -(dm * static_cast<float>(qm[k])) : 0.0f;
          const int64_t c0 = s * kSuper + i * f_.sub;
          decode_packed_affine(c + c0 * f_.bits / 8, f_.sub, f_.bits, offset, scale, min, y + c0, reference);
        }
      }
      if (!row.empty()) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
    });
  }

  KFormat f_;
  int subs_;
};

}  // namespace

std::unique_ptr<Scheme> make_kquant_scheme(const std::string& name) {
  for (const auto& f : kFormats) {
    if (name == f.name) return std::make_unique<KScheme>(f);
  }
  return nullptr;
}

}  // namespace tk::quant
