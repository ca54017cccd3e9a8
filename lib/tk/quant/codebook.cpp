// kmeans:BITS — per-tensor, per-row or per-group 1-D k-means codebooks.
#include "tk/quant/codebook.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "tk/core/error.h"
#include "tk/quant/codebook_internal.h"
#include "tk/quant/decode_tables.h"

namespace tk::quant {

std::unique_ptr<Scheme> make_vq_scheme(int dim, int bits);  // vq.cpp

namespace {

using namespace cbdetail;

constexpr int kLloydMaxIterations = 300;
constexpr int64_t kDefaultGroupSize = 256;

// Sorted distinct values of one segment with their summed weights and prefix sums,
// so a Lloyd step is O(K log n): cluster j is a contiguous range of the sorted values.
struct SortedSegment {
  std::vector<float> value;
  std::vector<double> weight;
  std::vector<double> sum_w, sum_wx, sum_wxx;  // prefixes, size n + 1

  explicit SortedSegment(std::vector<std::pair<float, float>> pairs) {
    std::sort(pairs.begin(), pairs.end());
    for (const auto& [v, w] : pairs) {
      if (!value.empty() && value.back() == v) {
        weight.back() += w;
      } else {
        value.push_back(v);
        weight.push_back(w);
      }
    }
    size_t n = value.size();
    sum_w.assign(n + 1, 0);
    sum_wx.assign(n + 1, 0);
    sum_wxx.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      double wx = weight[i] * value[i];
      sum_w[i + 1] = sum_w[i] + weight[i];
      sum_wx[i + 1] = sum_wx[i] + wx;
      sum_wxx[i + 1] = sum_wxx[i] + wx * value[i];
    }
  }
  size_t size() const { return value.size(); }
  // Weighted SSE of the range [a, b) around its mean.
  double range_sse(size_t a, size_t b) const {
    double w = sum_w[b] - sum_w[a];
    if (w <= 0) return 0;
    double wx = sum_wx[b] - sum_wx[a];
    return std::max(0.0, (sum_wxx[b] - sum_wxx[a]) - wx * wx / w);
  }
};

// k-means++ seeding (weighted D^2 sampling) on a seeded subsample of the segment.
std::vector<double> seed_centers(const SortedSegment& seg, int k, uint64_t seed) {
  SeededRandom random(seed);
  size_t n = seg.size();
  size_t m = std::min<size_t>(n, std::max<size_t>(1024, 8 * static_cast<size_t>(k)));
  std::vector<size_t> sample(m);
  if (m == n) {
    std::iota(sample.begin(), sample.end(), 0);
  } else {
    for (size_t& s : sample) s = random.below(n);
  }
  // total: the sum of mass in index order from 0 (each caller has it at hand).
  auto draw = [&](const std::vector<double>& mass, double total) {
    double target = random.uniform() * total;
    for (size_t i = 0; i < mass.size(); ++i) {
      target -= mass[i];
      if (target < 0) return i;
    }
    return mass.size() - 1;
  };
  std::vector<double> mass(m), dist2(m, HUGE_VAL);
  for (size_t i = 0; i < m; ++i) mass[i] = seg.weight[sample[i]];
  std::vector<double> centers;
  double c = seg.value[sample[draw(mass, std::accumulate(mass.begin(), mass.end(), 0.0))]];
  for (int j = 0; j < k; ++j) {
    centers.push_back(c);
    double total = 0;
    for (size_t i = 0; i < m; ++i) {
      double d = seg.value[sample[i]] - c;
      dist2[i] = std::min(dist2[i], d * d);
      mass[i] = seg.weight[sample[i]] * dist2[i];
      total += mass[i];
    }
    if (total <= 0) break;  // the sample has no more distinct values
    c = seg.value[sample[draw(mass, total)]];
  }
  std::sort(centers.begin(), centers.end());
  centers.erase(std::unique(centers.begin(), centers.end()), centers.end());
  return centers;
}

// Cluster boundaries: cluster j is [bound[j], bound[j + 1]) of the sorted values; a
// value on a midpoint belongs to the lower cluster (the nearest-level tie rule).
std::vector<size_t> cluster_bounds(const SortedSegment& seg, const std::vector<double>& c) {
  std::vector<size_t> bound(c.size() + 1, 0);
  bound.back() = seg.size();
  for (size_t j = 0; j + 1 < c.size(); ++j) {
    double mid = 0.5 * (c[j] + c[j + 1]);
    bound[j + 1] = std::upper_bound(seg.value.begin(), seg.value.end(), mid,
                                    [](double m, float v) { return m < v; }) -
                   seg.value.begin();
  }
  return bound;
}

// Move each empty cluster's center into the range with the largest SSE (split at its
// mean), so no level stays unused while another cluster is coarse.
void revive_empty(const SortedSegment& seg, std::vector<double>& c,
                  const std::vector<size_t>& bound) {
  for (size_t j = 0; j < c.size(); ++j) {
    if (bound[j] != bound[j + 1]) continue;
    size_t worst = 0;
    double worst_sse = -1;
    for (size_t i = 0; i < c.size(); ++i) {
      double sse = seg.range_sse(bound[i], bound[i + 1]);
      if (bound[i + 1] - bound[i] > 1 && sse > worst_sse) worst = i, worst_sse = sse;
    }
    if (worst_sse <= 0) return;
    size_t a = bound[worst], b = bound[worst + 1];
    c[j] = 0.5 * (seg.value[a] + seg.value[(a + b) / 2]);
    c[worst] = 0.5 * (seg.value[(a + b) / 2] + seg.value[b - 1]);
  }
  std::sort(c.begin(), c.end());
}

// Lloyd iterations from `c` to a fixed point; returns the weighted SSE.
double lloyd(const SortedSegment& seg, std::vector<double>& c) {
  std::vector<size_t> bound = cluster_bounds(seg, c);
  for (int iter = 0; iter < kLloydMaxIterations; ++iter) {
    revive_empty(seg, c, bound);
    for (size_t j = 0; j < c.size(); ++j) {
      double w = seg.sum_w[bound[j + 1]] - seg.sum_w[bound[j]];
      if (w > 0) c[j] = (seg.sum_wx[bound[j + 1]] - seg.sum_wx[bound[j]]) / w;
    }
    std::vector<size_t> next = cluster_bounds(seg, c);
    if (next == bound) break;
    bound = std::move(next);
  }
  double sse = 0;
  for (size_t j = 0; j < c.size(); ++j) sse += seg.range_sse(bound[j], bound[j + 1]);
  return sse;
}

// Centers at the weighted quantiles (j + 1/2) / k: Lloyd's other classic start.
std::vector<double> quantile_centers(const SortedSegment& seg, int k) {
  std::vector<double> c;
  double total = seg.sum_w.back();
  for (int j = 0; j < k; ++j) {
    double target = (j + 0.5) / k * total;
    size_t i = std::lower_bound(seg.sum_w.begin() + 1, seg.sum_w.end(), target) - (seg.sum_w.begin() + 1);
    c.push_back(seg.value[std::min(i, seg.size() - 1)]);
  }
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

// Weighted 1-D k-means of one segment: at most k ascending levels. Lloyd runs from a
// k-means++ start and from a quantile start (each costs O(K log n) per iteration on
// the sorted values) and the lower SSE wins, the k-means++ one on a tie.
std::vector<double> fit_levels(const SortedSegment& seg, int k, uint64_t seed) {
  if (seg.size() <= static_cast<size_t>(k)) {
    return std::vector<double>(seg.value.begin(), seg.value.end());
  }
  std::vector<double> a = seed_centers(seg, k, seed), b = quantile_centers(seg, k);
  double sse_a = lloyd(seg, a), sse_b = lloyd(seg, b);
  return sse_b < sse_a ? b : a;
}

struct KmeansLayout {
  int64_t rows = 0, cols = 0, padded_cols = 0;
  int64_t segment = 0;   // elements per codebook (padded layout)
  int64_t segments = 0;
  Granularity granularity = Granularity::kChannel;
};

const char* granularity_name(Granularity g) {
  switch (g) {
    case Granularity::kTensor: return "tensor";
    case Granularity::kChannel: return "channel";
    default: return "group";
  }
}

KmeansLayout plan_layout(int64_t rows, int64_t cols, int bits, const QuantOptions& options) {
  KmeansLayout l;
  l.rows = rows;
  l.cols = cols;
  l.granularity = options.granularity;
  if (l.granularity == Granularity::kDefault) {
    // Per row when the row's codebook costs at most 1/8 bit per weight, else one per
    // tensor; a group size given alone asks for groups.
    if (options.group_size > 0) {
      l.granularity = Granularity::kGroup;
    } else {
      l.granularity = (16 << bits) * 8 <= cols ? Granularity::kChannel : Granularity::kTensor;
    }
  }
  l.padded_cols = cols;
  if (l.granularity == Granularity::kGroup) {
    int64_t g = options.group_size > 0 ? options.group_size : kDefaultGroupSize;
    l.padded_cols = (cols + g - 1) / g * g;
    l.segment = g;
  } else if (l.granularity == Granularity::kChannel) {
    l.segment = cols;
  } else {
    l.segment = rows * cols;
  }
  l.segments = l.segment == 0 ? 0 : rows * l.padded_cols / l.segment;
  return l;
}

uint64_t outlier_count(uint64_t n, double fraction) {
  if (fraction <= 0) return 0;
  return std::min<uint64_t>(n, static_cast<uint64_t>(std::llround(fraction * static_cast<double>(n))));
}

// Flat positions of the largest importance-weighted magnitudes, ascending.
std::vector<uint64_t> pick_outliers(const float* x, uint64_t n, int64_t cols,
                                    const float* importance, uint64_t count) {
  if (count == 0) return {};
  std::vector<uint64_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  auto score = [&](uint64_t i) {
    double w = importance ? importance[i % cols] : 1.0;
    return w * static_cast<double>(x[i]) * x[i];
  };
  auto before = [&](uint64_t a, uint64_t b) {
    double sa = score(a), sb = score(b);
    return sa != sb ? sa > sb : a < b;
  };
  std::nth_element(idx.begin(), idx.begin() + count, idx.end(), before);
  idx.resize(count);
  std::sort(idx.begin(), idx.end());
  return idx;
}

class KmeansScheme final : public Scheme {
 public:
  explicit KmeansScheme(int bits) : bits_(bits) {}
  std::string name() const override { return "kmeans:" + std::to_string(bits_); }
  std::string description() const override {
    return "k-means codebook of " + std::to_string(1 << bits_) +
           " f16 levels per tensor, row or group; optional f16 outliers";
  }
  int64_t row_block(int64_t cols, const QuantOptions& options) const override {
    const KmeansLayout l = plan_layout(1, cols, bits_, options);
    return l.granularity == Granularity::kGroup ? l.segment : 1;
  }
  bool rows_independent(const QuantOptions& options) const override {
    return options.granularity == Granularity::kChannel || options.granularity == Granularity::kGroup;
  }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions& options) const override {
    KmeansLayout l = plan_layout(rows, cols, bits_, options);
    uint64_t n = static_cast<uint64_t>(rows * cols);
    if (n == 0) return 0;
    double bytes = static_cast<double>(packed_bytes(rows * l.padded_cols, bits_)) +
                   2.0 * l.segments * (1 << bits_) + 6.0 * outlier_count(n, options.outlier_fraction);
    return bytes * 8 / static_cast<double>(n);
  }
  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& options) const override;
  void dequantize(const Quantized& q, float* out) const override { restore(q, out, false); }
  void dequantize_reference(const Quantized& q, float* out) const override { restore(q, out, true); }

 private:
  void restore(const Quantized& q, float* out, bool reference) const;
  int bits_;
};

Quantized KmeansScheme::quantize(const float* x, const Shape& shape, const QuantOptions& options) const {
  int64_t rows = 0, cols = 0;
  rows_cols(shape, &rows, &cols);
  if (options.group_size < 0) throw usage_error("group size must be positive", name());
  KmeansLayout l = plan_layout(rows, cols, bits_, options);
  uint64_t n = static_cast<uint64_t>(rows * cols);
  const int k = 1 << bits_;
  std::vector<uint64_t> outliers =
      pick_outliers(x, n, cols, options.importance, outlier_count(n, options.outlier_fraction));
  std::vector<uint8_t> is_outlier(n, 0);
  for (uint64_t i : outliers) is_outlier[i] = 1;

  std::vector<float> levels(static_cast<size_t>(l.segments) * k);
  std::vector<uint8_t> codes(static_cast<size_t>(rows * l.padded_cols));
#pragma omp parallel for schedule(dynamic)
  for (int64_t s = 0; s < l.segments; ++s) {
    std::vector<std::pair<float, float>> pairs;
    pairs.reserve(l.segment);
    int64_t first = s * l.segment;
    for (int64_t p = first; p < first + l.segment; ++p) {
      int64_t r = p / l.padded_cols, c = p % l.padded_cols;
      if (c >= cols) continue;
      uint64_t i = static_cast<uint64_t>(r * cols + c);
      if (is_outlier[i]) continue;
      pairs.emplace_back(x[i], options.importance ? options.importance[c] : 1.0f);
    }
    SortedSegment seg(std::move(pairs));
    std::vector<double> centers = fit_levels(seg, k, derive_seed(options.seed, s));
    float* lv = levels.data() + s * k;
    for (int j = 0; j < k; ++j) {
      double v = centers.empty() ? 0.0 : centers[std::min<size_t>(j, centers.size() - 1)];
      lv[j] = f16_to_f32(f32_to_f16(static_cast<float>(v)));
    }
    std::sort(lv, lv + k);
    std::vector<double> mid = codebook_midpoints(lv, k);
    for (int64_t p = first; p < first + l.segment; ++p) {
      int64_t r = p / l.padded_cols, c = p % l.padded_cols;
      float v = c < cols ? x[r * cols + c] : 0.0f;
      codes[p] = static_cast<uint8_t>(options.reference ? codebook_nearest_reference(lv, k, v)
                                                                   : codebook_nearest_sorted(lv, mid.data(), k, v));
    }
  }

  Quantized q;
  q.scheme = name();
  q.shape = shape;
  q.params["bits"] = std::to_string(bits_);
  q.params["granularity"] = granularity_name(l.granularity);
  q.params["padded_cols"] = std::to_string(l.padded_cols);
  if (l.granularity == Granularity::kGroup) q.params["group_size"] = std::to_string(l.segment);
  q.params["outliers"] = std::to_string(outliers.size());
  std::vector<uint8_t> packed(packed_bytes(codes.size(), bits_), 0);
  pack_codes(codes.data(), codes.size(), bits_, packed.data());
  q.parts["codes"] = make_u8(packed);
  q.parts["codebook"] = make_f16(levels, {l.segments, k});
  if (!outliers.empty()) {
    Tensor index = Tensor::empty(DType::kU32, {static_cast<int64_t>(outliers.size())});
    std::vector<float> values(outliers.size());
    uint32_t* dst = index.mutable_data_as<uint32_t>();
    uint64_t prev = 0;
    for (size_t i = 0; i < outliers.size(); ++i) {
      uint64_t delta = outliers[i] - prev;
      if (delta > UINT32_MAX) throw usage_error("outliers more than 2^32 positions apart", name());
      dst[i] = static_cast<uint32_t>(delta);
      prev = outliers[i];
      values[i] = x[outliers[i]];
    }
    q.parts["outlier_index"] = std::move(index);
    q.parts["outlier_value"] = make_f16(values, {static_cast<int64_t>(values.size())});
  }
  return q;
}

Granularity parse_granularity(const Quantized& q) {
  auto it = q.params.find("granularity");
  if (it == q.params.end()) throw invalid_input("missing parameter 'granularity'", q.scheme);
  if (it->second == "tensor") return Granularity::kTensor;
  if (it->second == "channel") return Granularity::kChannel;
  if (it->second == "group") return Granularity::kGroup;
  throw invalid_input("bad parameter granularity='" + it->second + "'", q.scheme);
}

void KmeansScheme::restore(const Quantized& q, float* out, bool reference) const {
  int64_t rows = 0, cols = 0;
  rows_cols(q.shape, &rows, &cols);
  if (require_param(q, "bits", bits_, bits_) != bits_) throw internal_error("bits", q.scheme);
  QuantOptions options;
  options.granularity = parse_granularity(q);
  if (options.granularity == Granularity::kGroup) {
    options.group_size = require_param(q, "group_size", 1, INT32_MAX);
  }
  KmeansLayout l = plan_layout(rows, cols, bits_, options);
  if (require_param(q, "padded_cols", 0, INT64_MAX) != l.padded_cols) {
    throw invalid_input("padded_cols does not match the shape and group size", q.scheme);
  }
  const int k = 1 << bits_;
  uint64_t total = static_cast<uint64_t>(rows * l.padded_cols);
  uint64_t code_bytes = packed_bytes(total, bits_);
  const Tensor& codes = require_part(q, "codes", DType::kU8, {static_cast<int64_t>(code_bytes)});
  const Tensor& book = require_part(q, "codebook", DType::kF16, {l.segments, k});
  int64_t n_out = require_param(q, "outliers", 0, rows * cols);

  // A codebook of up to 256 KiB as f32 is converted once. A larger one (small groups of
  // many levels: 8 bits, group 128 is 8 bytes a weight) would not stay in the cache, so
  // each segment's levels are converted just before its codes decode, into an L1-resident
  // table; for small tables the per-call cost of that loses.
  const uint64_t book_values = static_cast<uint64_t>(l.segments) * k;
  const bool per_segment = book_values * sizeof(float) > (256u << 10);
  std::vector<float> all_levels(per_segment ? 0 : book_values);
  if (!per_segment) convert_to_f32(DType::kF16, book.data(), 0, book_values, all_levels.data());
  const bool padded = l.padded_cols != cols;
  const int64_t per_row = padded ? l.padded_cols / l.segment : 0;
  auto decode = reference ? codebook_decode_reference : codebook_decode;
#pragma omp parallel
  {
    std::vector<float> row(padded ? l.padded_cols : 0);
    std::vector<float> levels(per_segment ? k : 0);
    auto decode_segment = [&](int64_t segment, uint64_t first, float* dst) {
      const float* table = all_levels.data() + (per_segment ? 0 : segment * k);
      if (per_segment) {
        convert_to_f32(DType::kF16, book.data(), static_cast<uint64_t>(segment * k), k, levels.data());
        table = levels.data();
      }
      decode(codes.data(), code_bytes, bits_, first, l.segment, table, dst);
    };
#pragma omp for schedule(static)
    for (int64_t r = 0; r < (padded ? rows : l.segments); ++r) {
      if (!padded) {
        decode_segment(r, r * l.segment, out + r * l.segment);
        continue;
      }
      for (int64_t g = 0; g < per_row; ++g) {
        decode_segment(r * per_row + g, r * l.padded_cols + g * l.segment, row.data() + g * l.segment);
      }
      std::memcpy(out + r * cols, row.data(), cols * sizeof(float));
    }
  }
  if (n_out == 0) return;
  const Tensor& index = require_part(q, "outlier_index", DType::kU32, {n_out});
  const Tensor& value = require_part(q, "outlier_value", DType::kF16, {n_out});
  uint64_t pos = 0;
  for (int64_t i = 0; i < n_out; ++i) {
    uint64_t delta = index.data_as<uint32_t>()[i];
    if ((i > 0 && delta == 0) || pos + delta >= static_cast<uint64_t>(rows * cols)) {
      throw invalid_input("outlier positions out of order or out of range", q.scheme);
    }
    pos += delta;
    out[pos] = f16_to_f32(value.data_as<uint16_t>()[i]);
  }
}

// Fill a table mapping each byte to its 8 / bits decoded levels.
template <int kBits>
void decode_bytes(const uint8_t* codes, uint64_t bytes, const float* levels, float* out) {
  constexpr int kPer = 8 / kBits;
  constexpr int kMask = (1 << kBits) - 1;
  if (bytes < 512) {  // the table would cost more than it saves
    for (uint64_t b = 0; b < bytes; ++b) {
      for (int e = 0; e < kPer; ++e) out[b * kPer + e] = levels[(codes[b] >> (e * kBits)) & kMask];
    }
    return;
  }
  alignas(64) float table[256][kPer];
  for (int v = 0; v < 256; ++v) {
    for (int e = 0; e < kPer; ++e) table[v][e] = levels[(v >> (e * kBits)) & kMask];
  }
  for (uint64_t b = 0; b < bytes; ++b) std::memcpy(out + b * kPer, table[codes[b]], sizeof(table[0]));
}

}  // namespace

int codebook_nearest_reference(const float* levels, int count, float x) {
  int best = 0;
  double best_d = std::fabs(static_cast<double>(x) - levels[0]);
  for (int j = 1; j < count; ++j) {
    double d = std::fabs(static_cast<double>(x) - levels[j]);
    if (d < best_d) best = j, best_d = d;
  }
  return best;
}

std::vector<double> codebook_midpoints(const float* levels, int count) {
  std::vector<double> mid(std::max(count - 1, 0));
  for (int j = 0; j + 1 < count; ++j) mid[j] = 0.5 * (static_cast<double>(levels[j]) + levels[j + 1]);
  return mid;
}

int codebook_nearest_sorted(const float* levels, const double* midpoints, int count, float x) {
  // Number of midpoints strictly below x: a value on a midpoint takes the lower level.
  int lo = 0, n = count - 1;
  double v = x;
  while (n > 0) {
    int half = n / 2;
    if (midpoints[lo + half] < v) {
      lo += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  while (lo > 0 && levels[lo - 1] == levels[lo]) --lo;
  return lo;
}

void codebook_decode_reference(const uint8_t* codes, uint64_t code_bytes, int bits,
                               uint64_t first, uint64_t count, const float* levels, float* out) {
  for (uint64_t i = 0; i < count; ++i) out[i] = levels[cbdetail::unpack_code(codes, code_bytes, bits, first + i)];
}

void codebook_decode(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first,
                     uint64_t count, const float* levels, float* out) {
  if (detail::decode_levels(codes, code_bytes, bits, first, count, levels, out)) return;
  if (bits == 8) {
    for (uint64_t i = 0; i < count; ++i) out[i] = levels[codes[first + i]];
    return;
  }
  const uint64_t per_byte = (bits == 1 || bits == 2 || bits == 4) ? 8 / bits : 0;
  uint64_t head = 0;
  if (per_byte) head = std::min(count, (per_byte - first % per_byte) % per_byte);
  uint64_t body = per_byte ? (count - head) / per_byte : 0;
  codebook_decode_reference(codes, code_bytes, bits, first, head, levels, out);
  const uint8_t* start = codes + (first + head) / std::max<uint64_t>(per_byte, 1);
  float* dst = out + head;
  if (bits == 4) decode_bytes<4>(start, body, levels, dst);
  if (bits == 2) decode_bytes<2>(start, body, levels, dst);
  if (bits == 1) decode_bytes<1>(start, body, levels, dst);
  uint64_t done = head + body * per_byte;
  if (per_byte) {
    codebook_decode_reference(codes, code_bytes, bits, first + done, count - done, levels, out + done);
    return;
  }
  // Other widths: a 64-bit window per code, read without crossing the stream's end.
  uint64_t safe_end = code_bytes >= 8 ? ((code_bytes - 8) * 8) / bits : 0;
  uint64_t i = 0;
  const uint32_t mask = (1u << bits) - 1;
  for (; i < count && first + i < safe_end; ++i) {
    uint64_t bit = (first + i) * bits;
    uint64_t window;
    std::memcpy(&window, codes + (bit >> 3), 8);
    out[i] = levels[(window >> (bit & 7)) & mask];
  }
  codebook_decode_reference(codes, code_bytes, bits, first + i, count - i, levels, out + i);
}

std::vector<uint8_t> codebook_pack(const std::vector<uint16_t>& codes, int bits) {
  std::vector<uint8_t> out(cbdetail::packed_bytes(codes.size(), bits), 0);
  cbdetail::pack_codes(codes.data(), codes.size(), bits, out.data());
  return out;
}

std::unique_ptr<Scheme> make_codebook_scheme(std::string_view spec) {
  std::vector<std::string_view> parts = cbdetail::split_spec(spec);
  if (parts[0] == "kmeans") {
    if (parts.size() != 2) throw usage_error("expected kmeans:BITS", std::string(spec));
    return std::make_unique<KmeansScheme>(cbdetail::parse_spec_int(parts[1], 1, 8, spec));
  }
  if (parts[0] == "vq") {
    if (parts.size() != 3) throw usage_error("expected vq:DIM:BITS", std::string(spec));
    return make_vq_scheme(cbdetail::parse_spec_int(parts[1], 1, 16, spec),
                          cbdetail::parse_spec_int(parts[2], 1, 14, spec));
  }
  return nullptr;
}

std::vector<std::string> codebook_scheme_names() {
  return {"kmeans:BITS (BITS 1..8; k-means codebook per tensor, row or group)",
          "vq:DIM:BITS (DIM 1..16, BITS 1..14; vector codebook of DIM-long sub-vectors)"};
}

}  // namespace tk::quant
