// iq4xs: llama.cpp's IQ4_XS, iq4nl's 16 fixed levels (kvalues_iq4nl) at 4.25 bits per
// weight instead of 4.5: rows are cut into super-blocks of 256 values with one f16 scale
// d, and into eight sub-blocks of 32 whose scales are 6-bit integers l in [-32, 31]
// (stored as ls = l + 32): y = (d * l) * level[code], the two products in ggml's order.
//
// Quantization, per super-block: each sub-block's real scale s_i as iq4nl's first trial
// (iq4nl_math.h's fit_scale: -max / 127, refitted by least squares); then d is tried at a
// few factors around -s_max / 32 (s_max: the s_i of largest magnitude, which l = -32 then
// meets), rounded to f16, and for each d every sub-block takes, of the integers next to
// round(s_i / d), the one whose codes (chosen again against the stored d * l) give the
// least (weighted) squared error. The d of least total error wins; the least-squares d
// for its integers and codes is tried last. --fast takes the first d and the rounded
// integers alone. There is one quantizer (no vector path): its bytes do not depend on
// `reference`, which only picks the packing kernels.
//
// No GPU path: named under --device cuda it is refused, as a --budget candidate it runs
// on the CPU.
//
// Parts: "codes" U8 [rows, padded_cols / 2] (two codes per byte, low nibble first),
// "sub_scales" U8 [rows, padded_cols / 256 * 6] (the ls, an LSB-first 6-bit stream) and
// "d" F16 [rows, padded_cols / 256]. Params: group_size (256), padded_cols.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tk/core/error.h"
#include "tk/quant/decode_tables.h"
#include "tk/quant/iq4nl_math.h"
#include "tk/quant/kquant_math.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"

namespace tk::quant {
namespace {

using namespace detail;

constexpr int64_t kSuper = 256;
constexpr int64_t kSub = iq4nl::kBlock;  // 32
constexpr int kSubs = static_cast<int>(kSuper / kSub);
constexpr int kScaleBits = 6;
constexpr int kBias = 32;          // ls = l + 32
// d tried at (1 + 0.02 j) * -s_max / 32, |j| <= kFactorSteps, and the sub-block integers
// round(s_i / d) +- kReach: what each extent gains and costs, see BENCHMARKS: iq4xs.
constexpr int kFactorSteps = 1;
constexpr int kReach = 1;

// One super-block's choice: the stored d, each sub-block's integer l and the codes.
struct Fit {
  float d = 0;
  int l[kSubs] = {};
  uint8_t codes[kSuper] = {};
  double err = 0;
};

class Iq4xsScheme final : public Scheme {
 public:
  Iq4xsScheme() : levels_(iq4nl::levels()), table_(4, levels_.level), nearest_(levels_.level) {}

  std::string name() const override { return "iq4xs"; }
  std::string description() const override {
    return "iq4xs: llama.cpp's IQ4_XS, iq4nl's 16 levels in blocks of 32 with 6-bit scales under an f16 scale "
           "per 256 values";
  }
  bool takes_group_size() const override { return false; }
  int64_t row_block(int64_t, const QuantOptions&) const override { return kSuper; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions&) const override {
    const Layout l = make_layout(Shape{rows, cols}, kSuper);
    const int64_t per_row = l.padded_cols / 2 + l.groups_per_row * (2 + kSubs * kScaleBits / 8);
    return static_cast<double>(l.rows * per_row) * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.group_size != 0 && o.group_size != kSuper) throw usage_error("iq4xs uses super-blocks of 256");
    const Layout l = make_layout(shape, kSuper);
    Quantized q = new_quantized(name(), shape, l);
    const PaddedInput in = pad_input(x, l, o.importance);
    const int64_t row_subs = l.groups_per_row * kSubs;
    Tensor codes = new_part(DType::kU8, {l.rows, l.padded_cols / 2});
    Tensor sub_scales = new_part(DType::kU8, {l.rows, row_subs * kScaleBits / 8});
    Tensor d = new_part(DType::kF16, {l.rows, l.groups_per_row});
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<uint8_t> row_codes(static_cast<size_t>(l.padded_cols)), ls(static_cast<size_t>(row_subs));
      Fit best, trial;
      for (int64_t s = 0; s < l.groups_per_row; ++s) {
        fit_super(in.data + r * l.padded_cols + s * kSuper, in.weights.data() + s * kSuper, o.fast, best, trial);
        store_scale(d, static_cast<uint64_t>(r * l.groups_per_row + s), best.d);  // already an f16 value
        for (int i = 0; i < kSubs; ++i) ls[static_cast<size_t>(s * kSubs + i)] = static_cast<uint8_t>(best.l[i] + kBias);
        std::memcpy(row_codes.data() + s * kSuper, best.codes, kSuper);
      }
      pack_bits(row_codes.data(), l.padded_cols, 4, codes.mutable_data() + r * l.padded_cols / 2, o.reference);
      pack_bits(ls.data(), row_subs, kScaleBits, sub_scales.mutable_data() + r * row_subs * kScaleBits / 8,
                o.reference);
    });
    q.parts["codes"] = codes;
    q.parts["sub_scales"] = sub_scales;
    q.parts["d"] = d;
    return q;
  }

  void dequantize(const Quantized& q, float* out) const override { decode(q, out, false); }
  void dequantize_reference(const Quantized& q, float* out) const override { decode(q, out, true); }

 private:
  // A sub-block's codes at the stored scale dl (the nearest level of each x / dl) and
  // their weighted squared error, from the values the decoder gives.
  double encode_sub(const float* x, const float* w, float dl, uint8_t* codes) const {
    const float inv = dl == 0 ? 0.0f : 1.0f / dl;
    for (int64_t i = 0; i < kSub; ++i) codes[i] = nearest_(x[i] * inv);
    // Eight partial sums (value i in lane i % 8) in a fixed order: loops that vectorise.
    float lanes[8] = {};
    for (int64_t i = 0; i < kSub; ++i) {
      const float e = x[i] - dl * levels_.level[codes[i]];
      lanes[i % 8] += w[i] * (e * e);
    }
    return reduce8(lanes);
  }

  // The choice at the stored super-block scale d: each sub-block's integer of least error
  // among round(s_i / d) and its neighbours within `reach` (the rounded one first, so that
  // it wins ties).
  void fit_at(float d, const float* s, const float* x, const float* w, int reach, Fit& f) const {
    f.d = d;
    f.err = 0;
    uint8_t codes[kSub];
    for (int i = 0; i < kSubs; ++i) {
      const int l0 = d == 0 ? 0 : std::clamp(static_cast<int>(round_even(s[i] / d)), -kBias, kBias - 1);
      double best = -1;
      for (int k = 0; k <= 2 * reach; ++k) {
        const int l = l0 + (k % 2 ? -(k + 1) / 2 : k / 2);  // l0, l0 - 1, l0 + 1, ...
        if (l < -kBias || l > kBias - 1) continue;
        const double e = encode_sub(x + i * kSub, w + i * kSub, d * static_cast<float>(l), codes);
        if (best < 0 || e < best) {
          best = e;
          f.l[i] = l;
          std::memcpy(f.codes + i * kSub, codes, kSub);
        }
      }
      f.err += best;
    }
  }

  // The super-block's choice into `best` (`trial`: scratch).
  void fit_super(const float* x, const float* w, bool fast, Fit& best, Fit& trial) const {
    float s[kSubs];
    float largest = 0;
    for (int i = 0; i < kSubs; ++i) {
      // iq4nl's first trial alone (-max / 127, refitted): the integer search below finds
      // what its other trials would add, at half the time (BENCHMARKS: iq4xs).
      s[i] = iq4nl::fit_scale(levels_, x + i * kSub, w + i * kSub, true);
      if (std::abs(s[i]) > std::abs(largest)) largest = s[i];  // signed: l = -32 meets it
    }
    const int reach = fast ? 0 : kReach;
    const int steps = fast ? 0 : kFactorSteps;
    for (int k = 0; k <= 2 * steps; ++k) {
      const int j = k % 2 ? -(k + 1) / 2 : k / 2;  // 0, -1, 1, -2, 2, ...
      const float d = kquant::round_f16(-largest / static_cast<float>(kBias) * (1.0f + 0.02f * static_cast<float>(j)));
      fit_at(d, s, x, w, reach, k == 0 ? best : trial);
      if (k > 0 && trial.err < best.err) best = trial;
    }
    if (fast) return;
    // The least-squares d for these integers and codes: sum w x v / sum w v^2, v = l level.
    double sxv = 0, svv = 0;
    for (int i = 0; i < kSubs; ++i) {
      for (int64_t j = 0; j < kSub; ++j) {
        const int64_t n = i * kSub + j;
        const double v = static_cast<double>(best.l[i]) * levels_.level[best.codes[n]];
        sxv += static_cast<double>(w[n]) * x[n] * v;
        svv += static_cast<double>(w[n]) * v * v;
      }
    }
    if (!(svv > 0)) return;
    fit_at(kquant::round_f16(static_cast<float>(sxv / svv)), s, x, w, reach, trial);
    if (trial.err < best.err) best = trial;
  }

  void decode(const Quantized& q, float* out, bool reference) const {
    const Layout l = make_layout(q.shape, kSuper);
    check_shape_param(q, l);
    const int64_t row_subs = l.groups_per_row * kSubs;
    const int64_t sb = row_subs * kScaleBits / 8;
    const auto rows = static_cast<uint64_t>(l.rows);
    const Tensor& codes = part(q, "codes", DType::kU8, rows * static_cast<uint64_t>(l.padded_cols / 2));
    const Tensor& sub_scales = part(q, "sub_scales", DType::kU8, rows * static_cast<uint64_t>(sb));
    const Tensor& d = part(q, "d", DType::kF16, rows * static_cast<uint64_t>(l.groups_per_row));
    const bool padded = l.cols != l.padded_cols;
    parallel_row_tasks(l, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> ls(static_cast<size_t>(row_subs));
      std::vector<float> row_d(static_cast<size_t>(l.groups_per_row)), dl(ls.size());
      std::vector<float> row(padded ? static_cast<size_t>(l.padded_cols) : 0);
      for (int64_t r = begin; r < end; ++r) {
        unpack_bits(sub_scales.data() + r * sb, row_subs, kScaleBits, ls.data(), reference);
        load_scales(d, static_cast<uint64_t>(r * l.groups_per_row), static_cast<uint64_t>(l.groups_per_row),
                    row_d.data());
        // dl = d * (ls - 32), then y = level * dl: ggml's two products (the first exact).
        expand_sub_scales(ls.data(), l.groups_per_row, kSubs, kBias, row_d.data(), false, dl.data(), reference);
        float* y = padded ? row.data() : out + r * l.cols;
        table_.decode_scaled(codes.data() + r * l.padded_cols / 2, l.padded_cols, kSub, dl.data(), y, reference);
        if (padded) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
      }
    });
  }

  nf4::Levels levels_;
  CodeTable table_;
  Nearest16 nearest_;
};

}  // namespace

std::unique_ptr<Scheme> make_iq4xs_scheme() { return std::make_unique<Iq4xsScheme>(); }

}  // namespace tk::quant
