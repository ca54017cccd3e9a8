// iq2xxs, iq2xs, iq2s, iq3xxs, iq3s: llama.cpp's lattice codebook types IQ2_XXS (2.0625
// bits per weight), IQ2_XS (2.3125), IQ2_S (2.5625), IQ3_XXS (3.0625) and IQ3_S
// (3.4375). Rows are cut into super-blocks of 256 values with one f16 scale d, scale
// groups of 32 values (IQ2_XS, IQ2_S: 16) with a 4-bit integer l each, and groups of 8
// (IQ2) or 4 (IQ3) values that are one point of a fixed grid (iq_lattice.h) with a sign
// per value: y = db * grid[p][j], negated where the sign bit is set, with db = (d * (0.5
// + l)) * 0.25 (IQ2), (d * (0.5 + l)) * 0.5 (IQ3_XXS) or d * (1 + 2 l) (IQ3_S), ggml's
// operations in ggml's order. IQ2_XXS, IQ2_XS and IQ3_XXS store 7 sign bits per 8 values
// (the eighth makes the count of negative values even); IQ2_S and IQ3_S store all 8.
//
// Quantization, per super-block: the signs are those of x (where 7 are stored, a group
// of 8 with an odd count of negatives gives up the sign of the value of least weighted
// square), the grid is fit to the signed magnitudes m. Each scale group's real scale s_i
// is searched as ggml's quantizers search it: trial scales that put max m at 0.8 to 1.2
// times the top level, each point group taking its nearest point (Lattice::nearest),
// scored by the weighted least-squares fit, whose scale is kept. Then, as iq4xs does, d
// is tried at a few factors around the one that gives the largest s_i with l = 15,
// rounded to f16; for each d every scale group takes, of the integers next to the one its
// s_i rounds to, the one whose points (chosen again at the stored db) give the least
// weighted squared error; the d of least total error wins, and the least-squares d for
// its integers and points is tried last. --fast tries fewer scales, one d and the rounded
// integers alone. One quantizer (no vector path): `reference` only picks the bit-packing
// kernels. No GPU path.
//
// Parts (P = dims, the values per point): "grid" U8 [rows, padded_cols / P] (the low 8
// bits of each point's index), "grid_high" U8 [rows, padded_cols / P * h / 8] (where the
// index has h = 1 or 2 more bits: IQ2_XS, IQ3_S 1, IQ2_S 2; an LSB-first h-bit stream),
// "signs" U8 ([rows, padded_cols / 8], bit j of byte k for value 8 k + j; where 7 are
// stored, [rows, padded_cols / 64 * 7], a 7-bit stream of bits 0..6 of those bytes),
// "sub_scales" U8 [rows, padded_cols / G / 2] (the l, a 4-bit stream, G the scale
// group), "d" F16 [rows, padded_cols / 256]. Params: group_size (256), padded_cols.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "tk/core/error.h"
#include "tk/io/ggml_iq_grids.h"
#include "tk/quant/iq_lattice.h"
#include "tk/quant/kquant_math.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"

namespace tk::quant {
namespace {

using namespace detail;

constexpr int64_t kSuper = 256;
constexpr int kMaxScales = 16;  // scale groups per super-block
constexpr int kMaxPoints = 64;  // points per super-block
constexpr int kLMax = 15;
// Trial scales of a scale group: max m at top * (1 + kTrialRange * t / kTrials), |t| <=
// kTrials (ggml's range, 0.8 to 1.2, in 7 steps where ggml takes 31: the s_i only seed
// the search at the stored d, and 31 gained nothing there, see BENCHMARKS: iq2, iq3);
// --fast: 3 steps.
constexpr int kTrials = 3;
constexpr int kFastTrials = 1;
constexpr float kTrialRange = 0.2f;
// d tried at (1 + 0.02 j) times the first, |j| <= kFactorSteps; integers l0 +- kReach.
constexpr int kFactorSteps = 1;
constexpr int kReach = 1;

enum class Db { kIq2, kIq3xxs, kIq3s };  // how db follows from d and l

struct Kind {
  const char* name;
  const char* description;
  int block_bytes;  // per 256 values
  int dims;         // values per point
  int index_bits;   // of a point's index
  bool parity;      // 7 sign bits stored per 8 values
  int scale_group;  // values per l
  Db db;
  // The search structure, built on first use (quantizing only: a few hundred ms for
  // IQ2_S's), and ggml's grid word of point p, which the decoder reads.
  const iq::Lattice& (*lattice)();
  uint64_t (*word)(int p);
};

constexpr Kind kIq2xxs = {"iq2xxs", "iq2xxs: llama.cpp's IQ2_XXS, 8-value points of a 256-point grid with signs, "
                                    "4-bit scales per 32 under an f16 scale per 256 (2.0625 bpw)",
                          66, 8, 8, true, 32, Db::kIq2, iq::iq2xxs_lattice, [](int p) { return io::kIq2xxsGrid[p]; }};
constexpr Kind kIq2xs = {"iq2xs", "iq2xs: llama.cpp's IQ2_XS, 8-value points of a 512-point grid with signs, "
                                  "4-bit scales per 16 under an f16 scale per 256 (2.3125 bpw)",
                         74, 8, 9, true, 16, Db::kIq2, iq::iq2xs_lattice, [](int p) { return io::kIq2xsGrid[p]; }};
constexpr Kind kIq2s = {"iq2s", "iq2s: llama.cpp's IQ2_S, 8-value points of a 1024-point grid with signs, "
                                "4-bit scales per 16 under an f16 scale per 256 (2.5625 bpw)",
                        82, 8, 10, false, 16, Db::kIq2, iq::iq2s_lattice, [](int p) { return io::kIq2sGrid[p]; }};
constexpr Kind kIq3xxs = {"iq3xxs", "iq3xxs: llama.cpp's IQ3_XXS, 4-value points of a 256-point grid with signs, "
                                    "4-bit scales per 32 under an f16 scale per 256 (3.0625 bpw)",
                          98, 4, 8, true, 32, Db::kIq3xxs, iq::iq3xxs_lattice,
                          [](int p) { return uint64_t{io::kIq3xxsGrid[p]}; }};
constexpr Kind kIq3s = {"iq3s", "iq3s: llama.cpp's IQ3_S, 4-value points of a 512-point grid with signs, "
                                "4-bit scales per 32 under an f16 scale per 256 (3.4375 bpw)",
                        110, 4, 9, false, 32, Db::kIq3s, iq::iq3s_lattice,
                        [](int p) { return uint64_t{io::kIq3sGrid[p]}; }};

// ggml's scale-group scale, bit for bit.
float sub_scale(Db db, float d, int l) {
  switch (db) {
    case Db::kIq2: return d * (0.5f + static_cast<float>(l)) * 0.25f;
    case Db::kIq3xxs: return d * (0.5f + static_cast<float>(l)) * 0.5f;
    case Db::kIq3s: break;
  }
  return d * static_cast<float>(1 + 2 * l);
}
double sub_factor(Db db, int l) {
  switch (db) {
    case Db::kIq2: return (0.5 + l) * 0.25;
    case Db::kIq3xxs: return (0.5 + l) * 0.5;
    case Db::kIq3s: break;
  }
  return 1.0 + 2.0 * l;
}
// The integer l whose factor is nearest to `f`.
int sub_integer(Db db, double f) {
  const double l = db == Db::kIq2 ? 4.0 * f - 0.5 : db == Db::kIq3xxs ? 2.0 * f - 0.5 : (f - 1.0) / 2.0;
  return std::clamp(static_cast<int>(std::lround(std::clamp(l, -1.0, 16.0))), 0, kLMax);
}

struct Fit {
  float d = 0;
  int l[kMaxScales] = {};
  uint16_t point[kMaxPoints] = {};
  double err = 0;
};

class IqGridScheme final : public Scheme {
 public:
  explicit IqGridScheme(const Kind& kind)
      : k_(kind),
        dims_(kind.dims),
        scales_(static_cast<int>(kSuper / kind.scale_group)),
        group_points_(kind.scale_group / kind.dims),
        points_(static_cast<int>(kSuper) / kind.dims),
        high_bits_(kind.index_bits - 8),
        sign_bits_(kind.parity ? 7 : 8) {}

  std::string name() const override { return k_.name; }
  std::string description() const override { return k_.description; }
  bool takes_group_size() const override { return false; }
  int64_t row_block(int64_t, const QuantOptions&) const override { return kSuper; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions&) const override {
    const Layout l = make_layout(Shape{rows, cols}, kSuper);
    return static_cast<double>(l.rows * l.groups_per_row * k_.block_bytes) * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.group_size != 0 && o.group_size != kSuper) throw usage_error(name() + " uses super-blocks of 256");
    const Layout l = make_layout(shape, kSuper);
    Quantized q = new_quantized(name(), shape, l);
    const PaddedInput in = pad_input(x, l, o.importance);
    const iq::Lattice& lattice = k_.lattice();
    const Row row{l.padded_cols, dims_, k_.scale_group, high_bits_, sign_bits_};
    Tensor grid = new_part(DType::kU8, {l.rows, row.points});
    Tensor grid_high = high_bits_ ? new_part(DType::kU8, {l.rows, row.high_bytes()}) : Tensor();
    Tensor signs = new_part(DType::kU8, {l.rows, row.sign_bytes()});
    Tensor sub_scales = new_part(DType::kU8, {l.rows, row.scales / 2});
    Tensor d = new_part(DType::kF16, {l.rows, l.groups_per_row});
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<uint8_t> high(static_cast<size_t>(row.points)), sign(static_cast<size_t>(row.signs)),
          ls(static_cast<size_t>(row.scales));
      uint8_t* row_grid = grid.mutable_data() + r * row.points;
      Fit best, trial;
      float m[kSuper];
      for (int64_t s = 0; s < l.groups_per_row; ++s) {
        const float* xs = in.data + r * l.padded_cols + s * kSuper;
        const float* ws = in.weights.data() + s * kSuper;
        fit_signs(xs, ws, sign.data() + s * kSuper / 8, m);
        fit_super(lattice, m, ws, o.fast, best, trial);
        store_scale(d, static_cast<uint64_t>(r * l.groups_per_row + s), best.d);  // already an f16 value
        for (int i = 0; i < scales_; ++i) ls[static_cast<size_t>(s * scales_ + i)] = static_cast<uint8_t>(best.l[i]);
        for (int p = 0; p < points_; ++p) {
          row_grid[s * points_ + p] = static_cast<uint8_t>(best.point[p] & 0xFF);
          high[static_cast<size_t>(s * points_ + p)] = static_cast<uint8_t>(best.point[p] >> 8);
        }
      }
      if (high_bits_) {
        pack_bits(high.data(), row.points, high_bits_, grid_high.mutable_data() + r * row.high_bytes(), o.reference);
      }
      if (k_.parity) {
        for (uint8_t& b : sign) b &= 0x7F;  // bit 7 is implied: the count of set bits is even
      }
      pack_bits(sign.data(), row.signs, sign_bits_, signs.mutable_data() + r * row.sign_bytes(), o.reference);
      pack_bits(ls.data(), row.scales, 4, sub_scales.mutable_data() + r * row.scales / 2, o.reference);
    });
    q.parts["grid"] = grid;
    if (high_bits_) q.parts["grid_high"] = grid_high;
    q.parts["signs"] = signs;
    q.parts["sub_scales"] = sub_scales;
    q.parts["d"] = d;
    return q;
  }

  void dequantize(const Quantized& q, float* out) const override { decode(q, out, false); }
  void dequantize_reference(const Quantized& q, float* out) const override { decode(q, out, true); }

 private:
  // Counts per padded row.
  struct Row {
    int64_t points, signs, scales;
    int high_bits, sign_bits;
    Row(int64_t padded_cols, int dims, int scale_group, int high, int sign)
        : points(padded_cols / dims), signs(padded_cols / 8), scales(padded_cols / scale_group), high_bits(high),
          sign_bits(sign) {}
    int64_t high_bytes() const { return points * high_bits / 8; }
    int64_t sign_bytes() const { return signs * sign_bits / 8; }
  };

  // The sign byte of each 8 values (bit j: value j negative) and the magnitudes m the
  // grid is fit to: |x|, or -|x| for a value whose sign is given up.
  void fit_signs(const float* x, const float* w, uint8_t* sign, float* m) const {
    for (int k = 0; k < kSuper / 8; ++k) {
      unsigned bits = 0;
      for (int j = 0; j < 8; ++j) bits |= static_cast<unsigned>(x[8 * k + j] < 0) << j;
      if (k_.parity && std::popcount(bits) % 2 != 0) {
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

  // A scale group's points at the stored scale db and their weighted squared error.
  double encode_group(const iq::Lattice& lattice, const float* m, const float* w, float db, uint16_t* point) const {
    double err = 0;
    const float inv = db > 0 ? 1.0f / db : 0.0f;
    for (int g = 0; g < group_points_; ++g) {
      const int p = db > 0 ? lattice.nearest(m + dims_ * g, w + dims_ * g, db, inv) : 0;
      point[g] = static_cast<uint16_t>(p);
      for (int j = 0; j < dims_; ++j) {
        const float e = m[dims_ * g + j] - db * lattice.value(p, j);
        err += static_cast<double>(w[dims_ * g + j] * (e * e));
      }
    }
    return err;
  }

  // A scale group's real scale: the least-squares scale of the best trial (0 when every
  // m is at most 0).
  float fit_group_scale(const iq::Lattice& lattice, const float* m, const float* w, bool fast) const {
    float largest = 0;
    for (int i = 0; i < k_.scale_group; ++i) largest = std::max(largest, m[i]);
    if (!(largest > 0) || !std::isfinite(largest)) return 0;
    const int trials = fast ? kFastTrials : kTrials;
    double best_score = 0;
    float best = 0;
    for (int t = -trials; t <= trials; ++t) {
      const float factor = 1.0f + kTrialRange * static_cast<float>(t) / static_cast<float>(trials);
      const float inv = lattice.top() * factor / largest;
      const float scale = 1.0f / inv;
      double sqx = 0, sqq = 0;
      for (int g = 0; g < group_points_; ++g) {
        const int p = lattice.nearest(m + dims_ * g, w + dims_ * g, scale, inv);
        for (int j = 0; j < dims_; ++j) {
          const double v = lattice.value(p, j);
          sqx += static_cast<double>(w[dims_ * g + j]) * m[dims_ * g + j] * v;
          sqq += static_cast<double>(w[dims_ * g + j]) * v * v;
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
  void fit_at(const iq::Lattice& lattice, float d, const float* s, const float* m, const float* w, int reach,
              Fit& f) const {
    f.d = d;
    f.err = 0;
    uint16_t point[kMaxPoints];
    for (int i = 0; i < scales_; ++i) {
      const int l0 = d > 0 ? sub_integer(k_.db, s[i] / d) : 0;
      double best = -1;
      for (int k = 0; k <= 2 * reach; ++k) {
        const int l = l0 + (k % 2 ? -(k + 1) / 2 : k / 2);  // l0, l0 - 1, l0 + 1, ...
        if (l < 0 || l > kLMax) continue;
        const double e =
            encode_group(lattice, m + i * k_.scale_group, w + i * k_.scale_group, sub_scale(k_.db, d, l), point);
        if (best < 0 || e < best) {
          best = e;
          f.l[i] = l;
          std::memcpy(f.point + i * group_points_, point, sizeof(uint16_t) * static_cast<size_t>(group_points_));
        }
      }
      f.err += best;
    }
  }

  void fit_super(const iq::Lattice& lattice, const float* m, const float* w, bool fast, Fit& best, Fit& trial) const {
    float s[kMaxScales];
    float largest = 0;
    for (int i = 0; i < scales_; ++i) {
      s[i] = fit_group_scale(lattice, m + i * k_.scale_group, w + i * k_.scale_group, fast);
      largest = std::max(largest, s[i]);
    }
    const int reach = fast ? 0 : kReach;
    const int steps = fast ? 0 : kFactorSteps;
    const auto top = static_cast<float>(sub_factor(k_.db, kLMax));
    for (int k = 0; k <= 2 * steps; ++k) {
      const int j = k % 2 ? -(k + 1) / 2 : k / 2;  // 0, -1, 1
      const float d = kquant::round_f16(largest / top * (1.0f + 0.02f * static_cast<float>(j)));
      fit_at(lattice, d, s, m, w, reach, k == 0 ? best : trial);
      if (k > 0 && trial.err < best.err) best = trial;
    }
    if (fast) return;
    // The least-squares d for these integers and points: sum w m v / sum w v^2, v = c(l) grid.
    double smv = 0, svv = 0;
    for (int i = 0; i < scales_; ++i) {
      const double c = sub_factor(k_.db, best.l[i]);
      for (int g = 0; g < group_points_; ++g) {
        for (int j = 0; j < dims_; ++j) {
          const int64_t n = (i * group_points_ + g) * dims_ + j;
          const double v = c * lattice.value(best.point[i * group_points_ + g], j);
          smv += static_cast<double>(w[n]) * m[n] * v;
          svv += static_cast<double>(w[n]) * v * v;
        }
      }
    }
    if (!(svv > 0) || !(smv > 0)) return;
    fit_at(lattice, kquant::round_f16(static_cast<float>(smv / svv)), s, m, w, reach, trial);
    if (trial.err < best.err) best = trial;
  }

  void decode(const Quantized& q, float* out, bool reference) const {
    const Layout l = make_layout(q.shape, kSuper);
    check_shape_param(q, l);
    const auto rows = static_cast<uint64_t>(l.rows);
    const Row row{l.padded_cols, dims_, k_.scale_group, high_bits_, sign_bits_};
    const Tensor& grid = part(q, "grid", DType::kU8, rows * static_cast<uint64_t>(row.points));
    const Tensor* grid_high =
        high_bits_ ? &part(q, "grid_high", DType::kU8, rows * static_cast<uint64_t>(row.high_bytes())) : nullptr;
    const Tensor& signs = part(q, "signs", DType::kU8, rows * static_cast<uint64_t>(row.sign_bytes()));
    const Tensor& sub_scales = part(q, "sub_scales", DType::kU8, rows * static_cast<uint64_t>(row.scales / 2));
    const Tensor& d = part(q, "d", DType::kF16, rows * static_cast<uint64_t>(l.groups_per_row));
    const bool padded = l.cols != l.padded_cols;
    parallel_row_tasks(l, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> high(static_cast<size_t>(row.points)), sign(static_cast<size_t>(row.signs)),
          ls(static_cast<size_t>(row.scales));
      std::vector<float> row_d(static_cast<size_t>(l.groups_per_row));
      std::vector<float> y_row(padded ? static_cast<size_t>(l.padded_cols) : 0);
      for (int64_t r = begin; r < end; ++r) {
        const uint8_t* row_grid = grid.data() + r * row.points;
        if (grid_high) {
          unpack_bits(grid_high->data() + r * row.high_bytes(), row.points, high_bits_, high.data(), reference);
        }
        unpack_bits(signs.data() + r * row.sign_bytes(), row.signs, sign_bits_, sign.data(), reference);
        if (k_.parity) {
          for (uint8_t& b : sign) b = io::kIqSigns[b];
        }
        unpack_bits(sub_scales.data() + r * row.scales / 2, row.scales, 4, ls.data(), reference);
        load_scales(d, static_cast<uint64_t>(r * l.groups_per_row), static_cast<uint64_t>(l.groups_per_row),
                    row_d.data());
        float* y = padded ? y_row.data() : out + r * l.cols;
        for (int64_t i = 0; i < row.scales; ++i) {
          const float db = sub_scale(k_.db, row_d[static_cast<size_t>(i / scales_)], ls[static_cast<size_t>(i)]);
          for (int64_t g = i * group_points_; g < (i + 1) * group_points_; ++g) {
            const uint64_t word = k_.word(row_grid[g] | (grid_high ? high[static_cast<size_t>(g)] << 8 : 0));
            for (int j = 0; j < dims_; ++j) {
              const int64_t n = g * dims_ + j;
              const float v = db * static_cast<float>((word >> (8 * j)) & 0xFF);
              y[n] = (sign[static_cast<size_t>(n / 8)] >> (n % 8)) & 1 ? -v : v;
            }
          }
        }
        if (padded) std::copy(y_row.begin(), y_row.begin() + l.cols, out + r * l.cols);
      }
    });
  }

  const Kind& k_;
  int dims_, scales_, group_points_, points_, high_bits_, sign_bits_;
};

}  // namespace

std::unique_ptr<Scheme> make_iq2xxs_scheme() { return std::make_unique<IqGridScheme>(kIq2xxs); }
std::unique_ptr<Scheme> make_iq2xs_scheme() { return std::make_unique<IqGridScheme>(kIq2xs); }
std::unique_ptr<Scheme> make_iq2s_scheme() { return std::make_unique<IqGridScheme>(kIq2s); }
std::unique_ptr<Scheme> make_iq3xxs_scheme() { return std::make_unique<IqGridScheme>(kIq3xxs); }
std::unique_ptr<Scheme> make_iq3s_scheme() { return std::make_unique<IqGridScheme>(kIq3s); }

}  // namespace tk::quant
