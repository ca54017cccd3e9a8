// iq3xxs, iq3s: llama.cpp's IQ3_XXS (3.0625 bits per weight) and IQ3_S (3.4375). Rows
// are cut into super-blocks of 256 values with one f16 scale d, sub-blocks of 32 with a
// 4-bit integer l each, and groups of 4 values that are one point of a fixed grid
// (iq3_lattice.h) with a sign per value: y = db * grid[p][j], negated where the sign bit
// is set, with db = (d * (0.5 + l)) * 0.5 (IQ3_XXS) or d * (1 + 2 l) (IQ3_S), ggml's
// operations in ggml's order. IQ3_XXS stores 7 sign bits per 8 values (the eighth makes
// the count of negative values even); IQ3_S stores all 8, and a 9-bit point index.
//
// Quantization, per super-block: the signs are those of x (IQ3_XXS: a group of 8 with an
// odd count of negatives gives up the sign of the value of least weighted square), the
// grid is fit to the signed magnitudes m. Each sub-block's real scale s_i is searched
// as ggml's quantizers search it: trial scales that put max m at 0.8 to 1.2 times the top
// level, each group taking its nearest point (Lattice::nearest), scored by the weighted
// least-squares fit, whose scale is kept. Then, as iq4xs does, d is tried at a few factors
// around the one that gives the largest s_i with l = 15, rounded to f16; for each d every
// sub-block takes, of the integers next to the one its s_i rounds to, the one whose points
// (chosen again at the stored db) give the least weighted squared error; the d of least
// total error wins, and the least-squares d for its integers and points is tried last.
// --fast tries fewer scales, one d and the rounded integers alone. One quantizer (no
// vector path): `reference` only picks the bit-packing kernels. No GPU path.
//
// Parts: "grid" U8 [rows, padded_cols / 4] (a point per 4 values; IQ3_S: its low 8
// bits), "grid_high" U8 [rows, padded_cols / 32] (IQ3_S: bit 8 of each point, an LSB-first
// bit stream), "signs" U8 (IQ3_S: [rows, padded_cols / 8], bit j of byte k for value
// 8 k + j; IQ3_XXS: [rows, padded_cols / 64 * 7], a 7-bit stream of bits 0..6 of those
// bytes), "sub_scales" U8 [rows, padded_cols / 64] (the l, a 4-bit stream), "d" F16
// [rows, padded_cols / 256]. Params: group_size (256), padded_cols.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "tk/core/error.h"
#include "tk/io/ggml_iq_grids.h"
#include "tk/quant/group_search.h"
#include "tk/quant/iq3_lattice.h"
#include "tk/quant/kquant_math.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"

namespace tk::quant {
namespace {

using namespace detail;

constexpr int64_t kSuper = 256;
constexpr int64_t kSub = 32;
constexpr int kSubs = static_cast<int>(kSuper / kSub);
constexpr int kGroups = static_cast<int>(kSub / iq3::kDims);  // points per sub-block
constexpr int kPoints = kSubs * kGroups;                      // per super-block
constexpr int kLMax = 15;
// Trial scales of a sub-block: max m at top * (1 + kTrialRange * t / kTrials), |t| <=
// kTrials (ggml's range, 0.8 to 1.2, in 7 steps where ggml takes 31: the s_i only seed
// the search at the stored d, and 31 gained nothing there, see BENCHMARKS: iq3);
// --fast: 3 steps.
constexpr int kTrials = 3;
constexpr int kFastTrials = 1;
constexpr float kTrialRange = 0.2f;
// d tried at (1 + 0.02 j) times the first, |j| <= kFactorSteps; integers l0 +- kReach.
constexpr int kFactorSteps = 1;
constexpr int kReach = 1;

// ggml's sub-block scale, bit for bit.
float sub_scale(bool xxs, float d, int l) {
  return xxs ? d * (0.5f + static_cast<float>(l)) * 0.5f : d * static_cast<float>(1 + 2 * l);
}
double sub_factor(bool xxs, int l) { return xxs ? (0.5 + l) * 0.5 : 1.0 + 2.0 * l; }
// The integer l whose factor is nearest to `f`.
int sub_integer(bool xxs, double f) {
  const double l = xxs ? 2.0 * f - 0.5 : (f - 1.0) / 2.0;
  return std::clamp(static_cast<int>(std::lround(l)), 0, kLMax);
}

struct Fit {
  float d = 0;
  int l[kSubs] = {};
  uint16_t point[kPoints] = {};
  double err = 0;
};

class Iq3Scheme final : public Scheme {
 public:
  explicit Iq3Scheme(bool xxs) : xxs_(xxs), lattice_(xxs ? iq3::iq3xxs_lattice() : iq3::iq3s_lattice()) {}

  std::string name() const override { return xxs_ ? "iq3xxs" : "iq3s"; }
  std::string description() const override {
    return xxs_ ? "iq3xxs: llama.cpp's IQ3_XXS, 4-value points of a 256-point grid with signs, 4-bit scales per 32 "
                  "under an f16 scale per 256 (3.0625 bpw)"
                : "iq3s: llama.cpp's IQ3_S, 4-value points of a 512-point grid with signs, 4-bit scales per 32 "
                  "under an f16 scale per 256 (3.4375 bpw)";
  }
  bool takes_group_size() const override { return false; }
  int64_t row_block(int64_t, const QuantOptions&) const override { return kSuper; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions&) const override {
    const Layout l = make_layout(Shape{rows, cols}, kSuper);
    return static_cast<double>(l.rows * l.groups_per_row * block_bytes()) * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.group_size != 0 && o.group_size != kSuper) throw usage_error(name() + " uses super-blocks of 256");
    const Layout l = make_layout(shape, kSuper);
    Quantized q = new_quantized(name(), shape, l);
    const PaddedInput in = pad_input(x, l, o.importance);
    const int64_t row_points = l.padded_cols / iq3::kDims, row_subs = l.padded_cols / kSub;
    Tensor grid = new_part(DType::kU8, {l.rows, row_points});
    Tensor grid_high = xxs_ ? Tensor() : new_part(DType::kU8, {l.rows, row_points / 8});
    Tensor signs = new_part(DType::kU8, {l.rows, sign_bytes(l.padded_cols)});
    Tensor sub_scales = new_part(DType::kU8, {l.rows, row_subs / 2});
    Tensor d = new_part(DType::kF16, {l.rows, l.groups_per_row});
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<uint8_t> high(static_cast<size_t>(row_points)), sign(static_cast<size_t>(l.padded_cols / 8)),
          ls(static_cast<size_t>(row_subs));
      uint8_t* row_grid = grid.mutable_data() + r * row_points;
      Fit best, trial;
      float m[kSuper];
      for (int64_t s = 0; s < l.groups_per_row; ++s) {
        const float* xs = in.data + r * l.padded_cols + s * kSuper;
        const float* ws = in.weights.data() + s * kSuper;
        fit_signs(xs, ws, sign.data() + s * kSuper / 8, m);
        fit_super(m, ws, o.fast, best, trial);
        store_scale(d, static_cast<uint64_t>(r * l.groups_per_row + s), best.d);  // already an f16 value
        for (int i = 0; i < kSubs; ++i) ls[static_cast<size_t>(s * kSubs + i)] = static_cast<uint8_t>(best.l[i]);
        for (int p = 0; p < kPoints; ++p) {
          row_grid[s * kPoints + p] = static_cast<uint8_t>(best.point[p] & 0xFF);
          high[static_cast<size_t>(s * kPoints + p)] = static_cast<uint8_t>(best.point[p] >> 8);
        }
      }
      if (!xxs_) pack_bits(high.data(), row_points, 1, grid_high.mutable_data() + r * row_points / 8, o.reference);
      uint8_t* row_signs = signs.mutable_data() + r * sign_bytes(l.padded_cols);
      if (xxs_) {
        for (uint8_t& b : sign) b &= 0x7F;  // bit 7 is implied: the count of set bits is even
        pack_bits(sign.data(), l.padded_cols / 8, 7, row_signs, o.reference);
      } else {
        std::memcpy(row_signs, sign.data(), sign.size());
      }
      pack_bits(ls.data(), row_subs, 4, sub_scales.mutable_data() + r * row_subs / 2, o.reference);
    });
    q.parts["grid"] = grid;
    if (!xxs_) q.parts["grid_high"] = grid_high;
    q.parts["signs"] = signs;
    q.parts["sub_scales"] = sub_scales;
    q.parts["d"] = d;
    return q;
  }

  void dequantize(const Quantized& q, float* out) const override { decode(q, out, false); }
  void dequantize_reference(const Quantized& q, float* out) const override { decode(q, out, true); }

 private:
  int64_t block_bytes() const { return xxs_ ? 98 : 110; }
  int64_t sign_bytes(int64_t padded_cols) const { return xxs_ ? padded_cols / 64 * 7 : padded_cols / 8; }

  // The sign byte of each 8 values (bit j: value j negative) and the magnitudes m the
  // grid is fit to: |x|, or -|x| for a value whose sign IQ3_XXS gives up.
  void fit_signs(const float* x, const float* w, uint8_t* sign, float* m) const {
    for (int k = 0; k < kSuper / 8; ++k) {
      unsigned bits = 0;
      for (int j = 0; j < 8; ++j) bits |= static_cast<unsigned>(x[8 * k + j] < 0) << j;
      if (xxs_ && std::popcount(bits) % 2 != 0) {
        int least = 0;
        for (int j = 1; j < 8; ++j) {
          const float a = w[8 * k + j] * x[8 * k + j] * x[8 * k + j];
          if (a < w[8 * k + least] * x[8 * k + least] * x[8 * k + least]) least = j;
        }
        bits ^= 1u << least;
      }
      sign[k] = static_cast<uint8_t>(bits);
      for (int j = 0; j < 8; ++j) m[8 * k + j] = (bits >> j) & 1 ? -x[8 * k + j] : x[8 * k + j];
    }
  }

  // A sub-block's points at the stored scale db and their weighted squared error.
  double encode_sub(const float* m, const float* w, float db, uint16_t* point) const {
    double err = 0;
    const float inv = db > 0 ? 1.0f / db : 0.0f;
    for (int g = 0; g < kGroups; ++g) {
      const int p = db > 0 ? lattice_.nearest(m + 4 * g, w + 4 * g, db, inv) : 0;
      point[g] = static_cast<uint16_t>(p);
      for (int j = 0; j < iq3::kDims; ++j) {
        const float e = m[4 * g + j] - db * lattice_.value(p, j);
        err += static_cast<double>(w[4 * g + j] * (e * e));
      }
    }
    return err;
  }

  // A sub-block's real scale: the least-squares scale of the best trial (0 when every m
  // is at most 0).
  float fit_sub_scale(const float* m, const float* w, bool fast) const {
    float largest = 0;
    for (int i = 0; i < kSub; ++i) largest = std::max(largest, m[i]);
    if (!(largest > 0) || !std::isfinite(largest)) return 0;
    const int trials = fast ? kFastTrials : kTrials;
    double best_score = 0;
    float best = 0;
    for (int t = -trials; t <= trials; ++t) {
      const float factor = 1.0f + kTrialRange * static_cast<float>(t) / static_cast<float>(trials);
      const float inv = lattice_.top() * factor / largest;
      const float scale = 1.0f / inv;
      double sqx = 0, sqq = 0;
      for (int g = 0; g < kGroups; ++g) {
        const int p = lattice_.nearest(m + 4 * g, w + 4 * g, scale, inv);
        for (int j = 0; j < iq3::kDims; ++j) {
          const double v = lattice_.value(p, j);
          sqx += static_cast<double>(w[4 * g + j]) * m[4 * g + j] * v;
          sqq += static_cast<double>(w[4 * g + j]) * v * v;
        }
      }
      if (sqq > 0 && sqx > 0 && sqx * sqx > best_score * sqq) {
        best_score = sqx * sqx / sqq;
        best = static_cast<float>(sqx / sqq);
      }
    }
    return best;
  }

  // The choice at the stored super-block scale d (see the top of the file).
  void fit_at(float d, const float* s, const float* m, const float* w, int reach, Fit& f) const {
    f.d = d;
    f.err = 0;
    uint16_t point[kGroups];
    for (int i = 0; i < kSubs; ++i) {
      const int l0 = d > 0 ? sub_integer(xxs_, s[i] / d) : 0;
      double best = -1;
      for (int k = 0; k <= 2 * reach; ++k) {
        const int l = l0 + (k % 2 ? -(k + 1) / 2 : k / 2);  // l0, l0 - 1, l0 + 1, ...
        if (l < 0 || l > kLMax) continue;
        const double e = encode_sub(m + i * kSub, w + i * kSub, sub_scale(xxs_, d, l), point);
        if (best < 0 || e < best) {
          best = e;
          f.l[i] = l;
          std::memcpy(f.point + i * kGroups, point, sizeof point);
        }
      }
      f.err += best;
    }
  }

  void fit_super(const float* m, const float* w, bool fast, Fit& best, Fit& trial) const {
    float s[kSubs];
    float largest = 0;
    for (int i = 0; i < kSubs; ++i) {
      s[i] = fit_sub_scale(m + i * kSub, w + i * kSub, fast);
      largest = std::max(largest, s[i]);
    }
    const int reach = fast ? 0 : kReach;
    const int steps = fast ? 0 : kFactorSteps;
    const auto top = static_cast<float>(sub_factor(xxs_, kLMax));
    for (int k = 0; k <= 2 * steps; ++k) {
      const int j = k % 2 ? -(k + 1) / 2 : k / 2;  // 0, -1, 1
      const float d = kquant::round_f16(largest / top * (1.0f + 0.02f * static_cast<float>(j)));
      fit_at(d, s, m, w, reach, k == 0 ? best : trial);
      if (k > 0 && trial.err < best.err) best = trial;
    }
    if (fast) return;
    // The least-squares d for these integers and points: sum w m v / sum w v^2, v = c(l) grid.
    double smv = 0, svv = 0;
    for (int i = 0; i < kSubs; ++i) {
      const double c = sub_factor(xxs_, best.l[i]);
      for (int g = 0; g < kGroups; ++g) {
        for (int j = 0; j < iq3::kDims; ++j) {
          const int64_t n = i * kSub + g * iq3::kDims + j;
          const double v = c * lattice_.value(best.point[i * kGroups + g], j);
          smv += static_cast<double>(w[n]) * m[n] * v;
          svv += static_cast<double>(w[n]) * v * v;
        }
      }
    }
    if (!(svv > 0) || !(smv > 0)) return;
    fit_at(kquant::round_f16(static_cast<float>(smv / svv)), s, m, w, reach, trial);
    if (trial.err < best.err) best = trial;
  }

  void decode(const Quantized& q, float* out, bool reference) const {
    const Layout l = make_layout(q.shape, kSuper);
    check_shape_param(q, l);
    const auto rows = static_cast<uint64_t>(l.rows);
    const int64_t row_points = l.padded_cols / iq3::kDims, row_subs = l.padded_cols / kSub;
    const int64_t sb = sign_bytes(l.padded_cols);
    const Tensor& grid = part(q, "grid", DType::kU8, rows * static_cast<uint64_t>(row_points));
    const Tensor* grid_high =
        xxs_ ? nullptr : &part(q, "grid_high", DType::kU8, rows * static_cast<uint64_t>(row_points / 8));
    const Tensor& signs = part(q, "signs", DType::kU8, rows * static_cast<uint64_t>(sb));
    const Tensor& sub_scales = part(q, "sub_scales", DType::kU8, rows * static_cast<uint64_t>(row_subs / 2));
    const Tensor& d = part(q, "d", DType::kF16, rows * static_cast<uint64_t>(l.groups_per_row));
    const bool padded = l.cols != l.padded_cols;
    parallel_row_tasks(l, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> high(static_cast<size_t>(row_points)), sign(static_cast<size_t>(l.padded_cols / 8)),
          ls(static_cast<size_t>(row_subs));
      std::vector<float> row_d(static_cast<size_t>(l.groups_per_row));
      std::vector<float> row(padded ? static_cast<size_t>(l.padded_cols) : 0);
      for (int64_t r = begin; r < end; ++r) {
        const uint8_t* row_grid = grid.data() + r * row_points;
        if (grid_high) unpack_bits(grid_high->data() + r * row_points / 8, row_points, 1, high.data(), reference);
        if (xxs_) {
          unpack_bits(signs.data() + r * sb, l.padded_cols / 8, 7, sign.data(), reference);
          for (uint8_t& b : sign) b = io::kIqSigns[b];
        } else {
          std::memcpy(sign.data(), signs.data() + r * sb, sign.size());
        }
        unpack_bits(sub_scales.data() + r * row_subs / 2, row_subs, 4, ls.data(), reference);
        load_scales(d, static_cast<uint64_t>(r * l.groups_per_row), static_cast<uint64_t>(l.groups_per_row),
                    row_d.data());
        float* y = padded ? row.data() : out + r * l.cols;
        for (int64_t i = 0; i < row_subs; ++i) {
          const float db = sub_scale(xxs_, row_d[static_cast<size_t>(i / kSubs)], ls[static_cast<size_t>(i)]);
          for (int64_t g = i * kGroups; g < (i + 1) * kGroups; ++g) {
            const uint32_t word = xxs_ ? io::kIq3xxsGrid[row_grid[g]] : io::kIq3sGrid[row_grid[g] | high[g] << 8];
            const unsigned bits = sign[static_cast<size_t>(g / 2)] >> (4 * (g % 2));
            for (int j = 0; j < iq3::kDims; ++j) {
              const float v = db * static_cast<float>((word >> (8 * j)) & 0xFF);
              y[4 * g + j] = (bits >> j) & 1 ? -v : v;
            }
          }
        }
        if (padded) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
      }
    });
  }

  bool xxs_;
  const iq3::Lattice& lattice_;
};

}  // namespace

std::unique_ptr<Scheme> make_iq3xxs_scheme() { return std::make_unique<Iq3Scheme>(true); }
std::unique_ptr<Scheme> make_iq3s_scheme() { return std::make_unique<Iq3Scheme>(false); }

}  // namespace tk::quant
