// Pieces shared by the scheme families of lib/tk/quant: the row/group layout, reading
// parts and params back, scale storage, bit packing, and the error-search kernels.
//
// Every kernel here has a scalar reference and an optimised (AVX2/BMI2) version that
// give the same bits: sums run in 8 lanes (element i goes to lane i % 8) over chunks of
// 256 elements, each chunk reduced in one fixed order into a double, products are
// never fused (the build is ISO C++, so the compiler does not contract a*b+c), and
// rounding is to nearest even in both. `reference` selects the scalar version.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tk/device/device.h"
#include "tk/quant/group_search.h"
#include "tk/quant/scheme.h"

namespace tk::quant::detail {

// A tensor viewed as rows x cols, each row cut into groups of `group` values and padded
// with zeros to padded_cols = groups_per_row * group.
struct Layout {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t group = 0;
  int64_t padded_cols = 0;
  int64_t groups_per_row = 0;
};
// `group` must be positive. A 0-rank tensor is one row of one value.
Layout make_layout(const Shape& shape, int64_t group);
int64_t round_up(int64_t value, int64_t multiple);

// The tensor as rows x padded_cols f32, zero padded (a copy only when cols != padded_cols),
// and the matching per-column error weights (importance or ones, 0 in the padding).
struct PaddedInput {
  const float* data = nullptr;
  std::vector<float> storage;
  std::vector<float> weights;  // padded_cols
};
PaddedInput pad_input(const float* x, const Layout& layout, const float* importance);
// Copy the first `cols` of each padded row of `padded` into `out` (rows x cols).
void unpad_output(const float* padded, const Layout& layout, float* out);

// Params and parts.
std::string param(const Quantized& q, const std::string& key);
int64_t param_int(const Quantized& q, const std::string& key, int64_t lo, int64_t hi);
// The part `name`, checked to have `dtype` and exactly `numel` elements.
const Tensor& part(const Quantized& q, const std::string& name, DType dtype, uint64_t numel);
Tensor new_part(DType dtype, Shape shape);
// The recorded shape must give the layout the params describe.
void check_shape_param(const Quantized& q, const Layout& layout);
// A Quantized for `scheme` of `shape` with the layout's params (group_size, padded_cols).
Quantized new_quantized(std::string scheme, const Shape& shape, const Layout& layout);

// Scales stored as F16, BF16 or F32: round a value to what the dtype holds (saturating
// at its largest finite value), and store or load it (index i of a part of that dtype).
uint16_t scale_to_f16(float value);
float round_to_scale_dtype(float value, DType dtype);
void store_scale(Tensor& part, uint64_t i, float value);
float load_scale(const Tensor& part, uint64_t i);
// Elements [first, first + count) of a scale part as f32, converted in bulk (the same
// values as load_scale, a good deal faster than one at a time).
void load_scales(const Tensor& part, uint64_t first, uint64_t count, float* out);
DType parse_scale_dtype(const std::string& text);
bool is_scale_dtype(DType dtype);

// LSB-first bit stream of `bits`-wide codes (as the F4/F6 dtypes store them). n must be
// a multiple of 8, so every 8 codes fill exactly `bits` bytes.
void pack_bits(const uint8_t* codes, int64_t n, int bits, uint8_t* out, bool reference);
void unpack_bits(const uint8_t* in, int64_t n, int bits, uint8_t* codes, bool reference);

// Weighted sums of a trial quantization (TrialSums, group_search.h).
// Symmetric: L = clamp(round(iscale * x), lo, hi).
TrialSums trial_symmetric(const float* x, const float* w, int64_t n, float iscale, float lo, float hi,
                          bool reference);
// Asymmetric: L = clamp(round(iscale * (x - min)), 0, hi).
TrialSums trial_asymmetric(const float* x, const float* w, int64_t n, float iscale, float min, float hi,
                           bool reference);
// The same for `count` scales (and offsets) on one group: out[k] for iscales[k].
void trial_symmetric_batch(const float* x, const float* w, int64_t n, const float* iscales, int count, float lo,
                           float hi, TrialSums* out, bool reference);
void trial_asymmetric_batch(const float* x, const float* w, int64_t n, const float* iscales, const float* mins,
                            int count, float hi, TrialSums* out, bool reference);
// Eight groups side by side ("lanes"): value i of group g at xt[i * kLanes + g], so
// that one vector holds one value of each group and a candidate scale per group is
// tried on all eight in full vectors. n (values per group) is a multiple of 8 and at
// most 256: one chunk of the lane order above, so each group's sums are the same bits
// as the one-group kernels give.
constexpr int kLanes = 8;
// Eight contiguous groups of n values (x[g * n + i]) into lanes.
void to_lanes(const float* x, int64_t n, float* xt);
// TrialSums of eight groups, one array per sum, so that per-group decisions on them
// are loops over the lanes that compile to vector code.
struct LaneSums {
  alignas(32) double lx[kLanes];
  alignas(32) double l2[kLanes];
  alignas(32) double l[kLanes];  // asymmetric only (0 otherwise)
  TrialSums at(int g) const { return {lx[g], l2[g], l[g]}; }
};
// Group g's sums for iscales[g] (and mins[g]); wt null: every weight is 1.
void trial_symmetric_lanes(const float* xt, const float* wt, int64_t n, const float* iscales, float lo, float hi,
                           LaneSums& out, bool reference);
void trial_asymmetric_lanes(const float* xt, const float* wt, int64_t n, const float* iscales, const float* mins,
                            float hi, LaneSums& out, bool reference);
// Codes from a stored scale: code = clamp(round(x * inv), lo, hi) + offset (symmetric),
// or clamp(round((x - min) * inv), 0, hi) (asymmetric, offset 0, lo 0).
void codes_symmetric(const float* x, int64_t n, float inv, float lo, float hi, int offset, uint8_t* codes,
                     bool reference);
void codes_asymmetric(const float* x, int64_t n, float inv, float min, float hi, uint8_t* codes,
                      bool reference);
// Dequantize n packed codes (n and group multiples of 8): y = float(code - offset) *
// d[i / group] + m[i / group] (m null: + 0). `stream`: y will not be read again soon
// (the output is much larger than the cache), so it may bypass the cache.
void decode_packed_affine(const uint8_t* packed, int64_t n, int bits, int offset, int64_t group, const float* d,
                          const float* m, float* y, bool stream, bool reference);
// Whether an output of `bytes` is large enough, against the cache a core can use, for
// decoders to write it with streaming (non-temporal) stores.
bool prefer_streaming_stores(uint64_t bytes);
// The sub-block scales of `supers` super-blocks of `subs` (8 or 16) sub-blocks each:
// out[s * subs + i] = d[s] * float(q[s * subs + i] - bias), negated when `negate`.
void expand_sub_scales(const uint8_t* q, int64_t supers, int subs, int bias, const float* d, bool negate, float* out,
                       bool reference);
// Dequantize n packed codes through a table: y = table[code] * scales[i / group]. The
// table has 2^bits entries (bits <= 4: 16 entries must be readable).
void decode_packed_table(const uint8_t* packed, int64_t n, int bits, const float* table, int64_t group,
                         const float* scales, float* y, bool reference);

// Weighted sums of the group itself (GroupStats, group_search.h), in the same lane order.
GroupStats group_stats(const float* x, const float* w, int64_t n, bool reference);
// The stats of eight groups in lanes (wt null: unit weights), equal to group_stats'.
void group_stats_lanes(const float* xt, const float* wt, int64_t n, GroupStats* out, bool reference);

// Error-minimising scales (ggml's make_qx_quants / make_qkx2_quants, extended).
// Symmetric codes in [-nmax, nmax - 1]; returns d with x ~ d * L (0 for an all-zero
// group). `fast`: the absmax scale max / -nmax. Candidates iscale = -(nmax + 0.1 k) /
// amax for |k| <= tries, and the same mirrored towards nmax - 1.
float search_symmetric(const float* x, const float* w, int64_t n, int nmax, bool fast, bool reference,
                       int tries = kSymmetricTries);
// The same with the group's stats already computed.
float search_symmetric(const GroupStats& s, const float* x, const float* w, int64_t n, int nmax, bool fast,
                       bool reference, int tries);
// Asymmetric codes in [0, nmax]; x ~ d * L + m. `nonpositive_min` keeps m <= 0.
// Candidates iscale = (nmax - 1 + 0.1 k) / (max - min) for 0 <= k <= steps.
AffineScale search_asymmetric(const float* x, const float* w, int64_t n, int nmax, bool nonpositive_min,
                              bool fast, bool reference, int steps = kAsymmetricSteps);
AffineScale search_asymmetric(const GroupStats& s, const float* x, const float* w, int64_t n, int nmax,
                              bool nonpositive_min, bool fast, bool reference, int steps);
// The same searches for eight groups in lanes (wt null: unit weights): the same scales
// as the one-group versions give each group, from full-vector trials.
void search_symmetric_lanes(const GroupStats* s, const float* xt, const float* wt, int64_t n, int nmax, bool fast,
                            bool reference, int tries, float* d);
void search_asymmetric_lanes(const GroupStats* s, const float* xt, const float* wt, int64_t n, int nmax,
                             bool nonpositive_min, bool fast, bool reference, int steps, AffineScale* out);

// Run fn(i) for i in [0, n) over OpenMP threads; each i writes its own outputs.
template <typename Fn> void parallel_for(int64_t n, Fn&& fn) {
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// The layout's rows in parallel tasks of whole rows, about 2^16 values each (at least
// one row): fn(begin, end) once per task, so per-row scratch is allocated once per task
// rather than once per row (that cost as much as decoding a short row).
template <typename Fn> void parallel_row_tasks(const Layout& l, Fn&& fn) {
  constexpr int64_t kValuesPerTask = int64_t{1} << 16;
  const int64_t per_task = std::max<int64_t>(1, kValuesPerTask / std::max<int64_t>(1, l.padded_cols));
  parallel_for((l.rows + per_task - 1) / per_task,
               [&](int64_t t) { fn(t * per_task, std::min(l.rows, (t + 1) * per_task)); });
}

// The nearest of 16 ascending levels, by comparing with their midpoints (ties to the
// lower level): a branch-free count that the vectoriser turns into compares and adds
// (nf4, iq4nl).
class Nearest16 {
 public:
  explicit Nearest16(const float* levels) {
    for (int k = 0; k < 15; ++k) mid_[k] = (levels[k] + levels[k + 1]) * 0.5f;
  }
  [[gnu::always_inline]] inline uint8_t operator()(float v) const {
    int c = 0;
    for (int k = 0; k < 15; ++k) c += v > mid_[k] ? 1 : 0;
    return static_cast<uint8_t>(c);
  }

 private:
  float mid_[15];
};

// Encode n f32 values into one code byte each in a narrow float dtype (F8_*, F6_*, F4),
// rounding to nearest even and saturating at the largest finite value (NaN keeps the
// format's NaN code, or -0 for F4/F6 which have none).
void encode_minifloat(DType dtype, const float* v, int64_t n, uint8_t* codes, bool reference);

// The Scheme hooks of a scheme that decodes on a GPU, through one Derived::decode(q, out,
// reference, device, measure): device -1 decodes on the CPU, and with a measure the rows'
// error sums come back in place of the values. Every option has a GPU path and every q
// decodes there unless Derived overrides gpu_path or declares decodes_on_gpu(q).
// Derived declares this base a friend.
template <typename Derived> class GpuDecodedScheme : public Scheme {
 public:
  void dequantize(const Quantized& q, float* out) const override { derived().decode(q, out, false); }
  void dequantize_reference(const Quantized& q, float* out) const override { derived().decode(q, out, true); }
  bool gpu_path(const QuantOptions&) const override { return device::cuda_compiled(); }
  void dequantize_on(const Quantized& q, float* out, int device) const override {
    derived().decode(q, out, false, on_gpu(q) ? device : -1);
  }
  bool measure_on(const Quantized& q, const float* x, const float* weights, int64_t block, int device,
                  RowSums* rows) const override {
    if (device < 0 || !on_gpu(q)) return false;
    const Measure m{x, weights, block, rows};
    derived().decode(q, nullptr, false, device, &m);
    return true;
  }

 protected:
  bool decodes_on_gpu(const Quantized&) const { return true; }

 private:
  const Derived& derived() const { return static_cast<const Derived&>(*this); }
  bool on_gpu(const Quantized& q) const { return device::cuda_compiled() && derived().decodes_on_gpu(q); }
};

}  // namespace tk::quant::detail
