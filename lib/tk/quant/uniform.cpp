// Uniform integer schemes int2..int8: per-tensor, per-channel (row) or per-group scales,
// symmetric (codes -2^(b-1) .. 2^(b-1)-1 stored with offset 2^(b-1), y = (code - off) d)
// or asymmetric (codes 0 .. 2^b-1, y = code d + m, the offset m stored like the scale;
// with QuantOptions::integer_zero_point, y = (code - z) d with an integer z instead).
//
// Parts: "codes" U8 [rows, padded_cols * b / 8] (LSB-first bit stream per row),
// "scales" [rows, groups] (per-channel: [rows, 1], per-tensor: [1]) in the scale dtype,
// and when asymmetric "mins" of the same shape, or "zeros" (U8, param zero_point=int).
// Params: bits, granularity, group_size, padded_cols, symmetric (and zero_point). Rows are padded with zeros to a multiple of the group (of 8
// for per-channel and per-tensor scales).
#include <algorithm>
#include <cmath>

#include "tk/core/error.h"
#include "tk/device/device.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"
#ifdef TK_HAVE_CUDA
#include "tk/quant/cuda/groups.h"
#endif

namespace tk::quant {
namespace {

using namespace detail;

constexpr int64_t kDefaultGroup = 32;

const char* granularity_name(Granularity g) {
  switch (g) {
    case Granularity::kTensor: return "tensor";
    case Granularity::kChannel: return "channel";
    default: return "group";
  }
}

Granularity parse_granularity(const std::string& text) {
  if (text == "tensor") return Granularity::kTensor;
  if (text == "channel") return Granularity::kChannel;
  if (text == "group") return Granularity::kGroup;
  throw invalid_input("bad granularity '" + text + "'");
}

class IntScheme final : public GpuDecodedScheme<IntScheme> {
 public:
  explicit IntScheme(int bits) : bits_(bits) {}

  std::string name() const override { return "int" + std::to_string(bits_); }
  std::string description() const override {
    return "int" + std::to_string(bits_) +
           ": uniform integer codes, per-tensor/channel/group scales (default group 32, symmetric, f16 scale)";
  }

  int64_t row_block(int64_t, const QuantOptions& o) const override {
    return granularity(o) == Granularity::kGroup ? layout_for(Shape{1, 8}, o).group : 8;
  }
  bool rows_independent(const QuantOptions& o) const override { return granularity(o) != Granularity::kTensor; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions& o) const override {
    const Layout l = layout_for(Shape{rows, cols}, o);
    const double numel = static_cast<double>(rows * cols);
    return static_cast<double>(stored_bytes(l, o)) * 8.0 / numel;
  }

  // On the GPU: scales per group or row (a per-tensor scale is one search over the whole
  // tensor, which one GPU thread would run alone).
  bool gpu_path(const QuantOptions& o) const override {
    return device::cuda_compiled() && granularity(o) != Granularity::kTensor;
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (!is_scale_dtype(o.scale_dtype)) throw usage_error("int schemes store scales as f16, bf16 or f32");
    const Layout l = layout_for(shape, o);
    const Granularity g = granularity(o);
    Quantized q = new_quantized(name(), shape, l);
    q.params["bits"] = std::to_string(bits_);
    q.params["granularity"] = granularity_name(g);
    q.params["symmetric"] = o.symmetric ? "1" : "0";
    const bool zero_points = !o.symmetric && o.integer_zero_point;
    if (zero_points) q.params["zero_point"] = "int";
    const Shape scale_shape = g == Granularity::kTensor ? Shape{1} : Shape{l.rows, l.groups_per_row};
    Tensor codes = new_part(DType::kU8, {l.rows, l.padded_cols * bits_ / 8});
    Tensor scales = new_part(o.scale_dtype, scale_shape);
    Tensor mins = o.symmetric ? Tensor() : new_part(zero_points ? DType::kU8 : o.scale_dtype, scale_shape);
    // The offset of a group: its float min, or its zero point z (m = -z d, exact).
    auto store_offset = [&](uint64_t i, const AffineScale& s) {
      if (zero_points) {
        mins.mutable_data()[i] = static_cast<uint8_t>(zero_point_of(s));
      } else {
        store_scale(mins, i, s.m);
      }
    };
    const PaddedInput in = pad_input(x, l, o.importance);

    AffineScale tensor_scale;
    if (g == Granularity::kTensor) {
      tensor_scale = fit_tensor_scale(in, l, o);
      store_scale(scales, 0, tensor_scale.d);
      if (!o.symmetric) store_offset(0, tensor_scale);
    }
#ifdef TK_HAVE_CUDA
    if (o.device >= 0 && gpu_path(o)) {
      quantize_gpu(in, l, o, codes, [&](uint64_t i, const AffineScale& s) {
        store_scale(scales, i, s.d);
        if (!o.symmetric) store_offset(i, s);
      });
    } else
#endif
    {
      // Groups of at most 256 are searched eight at a time, one per vector lane (the
      // same scales as one at a time, search.cpp); the rest of a row one at a time.
      const bool lanes = g == Granularity::kGroup && !o.reference && l.group <= 256;
      parallel_for(l.rows, [&](int64_t r) {
        std::vector<uint8_t> row_codes(static_cast<size_t>(l.padded_cols));
        const float* xr = in.data + r * l.padded_cols;
        int64_t gi = 0;
        if (lanes) {
          LaneScratch lane;
          for (; gi + kLanes <= l.groups_per_row; gi += kLanes) {
            const int64_t c0 = gi * l.group;
            AffineScale s[kLanes];
            fit_scales_lanes(xr + c0, o.importance ? in.weights.data() + c0 : nullptr, l.group, o, lane, s);
            for (int k = 0; k < kLanes; ++k) {
              store_scale(scales, r * l.groups_per_row + gi + k, s[k].d);
              if (!o.symmetric) store_offset(r * l.groups_per_row + gi + k, s[k]);
              encode(xr + c0 + k * l.group, l.group, s[k], o, row_codes.data() + c0 + k * l.group);
            }
          }
        }
        for (; gi < l.groups_per_row; ++gi) {
          const int64_t c0 = gi * l.group;
          AffineScale s = tensor_scale;
          if (g != Granularity::kTensor) {
            s = fit_scale(xr + c0, in.weights.data() + c0, l.group, o);
            store_scale(scales, r * l.groups_per_row + gi, s.d);
            if (!o.symmetric) store_offset(r * l.groups_per_row + gi, s);
          }
          encode(xr + c0, l.group, s, o, row_codes.data() + c0);
        }
        pack_bits(row_codes.data(), l.padded_cols, bits_,
                  codes.mutable_data() + r * l.padded_cols * bits_ / 8, o.reference);
      });
    }
    q.parts["codes"] = codes;
    q.parts["scales"] = scales;
    if (!o.symmetric) q.parts[zero_points ? "zeros" : "mins"] = mins;
    return q;
  }

 private:
  friend class GpuDecodedScheme<IntScheme>;

  // Every stored layout decodes on the GPU but integer zero points (compressed-tensors'
  // rounding, a CPU loop).
  static bool decodes_on_gpu(const Quantized& q) { return !q.params.count("zero_point"); }

  int nmax() const { return 1 << (bits_ - 1); }
  int top() const { return (1 << bits_) - 1; }

  Granularity granularity(const QuantOptions& o) const {
    return o.granularity == Granularity::kDefault ? Granularity::kGroup : o.granularity;
  }

  Layout layout_for(const Shape& shape, const QuantOptions& o) const {
    const Granularity g = granularity(o);
    if (g == Granularity::kGroup) {
      const int64_t group = o.group_size == 0 ? kDefaultGroup : o.group_size;
      if (group % 8 != 0 || group <= 0) {
        throw usage_error("group size must be a positive multiple of 8, not " + std::to_string(group));
      }
      return make_layout(shape, group);
    }
    const Layout rows = make_layout(shape, 8);
    return make_layout(shape, std::max<int64_t>(8, rows.padded_cols));
  }

  uint64_t stored_bytes(const Layout& l, const QuantOptions& o) const {
    const uint64_t scale_count =
        granularity(o) == Granularity::kTensor ? 1 : static_cast<uint64_t>(l.rows * l.groups_per_row);
    const uint64_t scale_bytes = scale_count * static_cast<uint64_t>(dtype_bits(o.scale_dtype) / 8);
    const uint64_t offset_bytes = o.symmetric ? 0 : o.integer_zero_point ? scale_count : scale_bytes;
    return static_cast<uint64_t>(l.rows * l.padded_cols * bits_ / 8) + scale_bytes + offset_bytes;
  }

  // The stored (rounded) scale of one group of n values.
  AffineScale fit_scale(const float* x, const float* w, int64_t n, const QuantOptions& o) const {
    AffineScale s;
    if (o.symmetric) {
      s.d = search_symmetric(x, w, n, nmax(), o.fast, o.reference, kIntSymmetricTries);
    } else {
      s = search_asymmetric(x, w, n, top(), false, o.fast, o.reference, kIntAsymmetricSteps);
    }
    return stored_scale(s, o);
  }

  // Eight groups of n <= 256 values in lanes (to_lanes), and their weights.
  struct LaneScratch {
    alignas(32) float x[kLanes * 256];
    alignas(32) float w[kLanes * 256];
  };

  // fit_scale for eight consecutive groups of n values at x (weights w, null: all 1).
  void fit_scales_lanes(const float* x, const float* w, int64_t n, const QuantOptions& o, LaneScratch& lane,
                        AffineScale* out) const {
    to_lanes(x, n, lane.x);
    if (w) to_lanes(w, n, lane.w);
    const float* wt = w ? lane.w : nullptr;
    GroupStats stats[kLanes];
    group_stats_lanes(lane.x, wt, n, stats, false);
    if (o.symmetric) {
      float d[kLanes];
      search_symmetric_lanes(stats, lane.x, wt, n, nmax(), o.fast, false, kIntSymmetricTries, d);
      for (int k = 0; k < kLanes; ++k) out[k] = AffineScale{d[k], 0.0f};
    } else {
      search_asymmetric_lanes(stats, lane.x, wt, n, top(), false, o.fast, false, kIntAsymmetricSteps, out);
    }
    for (int k = 0; k < kLanes; ++k) out[k] = stored_scale(out[k], o);
  }

  // A searched scale as stored: rounded to the scale dtype, or as d and a zero point.
  AffineScale stored_scale(AffineScale s, const QuantOptions& o) const {
    s.d = round_to_scale_dtype(s.d, o.scale_dtype);
    if (!o.symmetric && o.integer_zero_point) return with_zero_point(s, o.scale_dtype);
    s.m = round_to_scale_dtype(s.m, o.scale_dtype);
    return s;
  }

  // The affine scale (d, m) as d and an integer zero point z in [0, 2^b - 1] with
  // m = -z d: z is -m / d rounded, so that the group's range keeps its place on the
  // codes. A constant group (d = 0) takes its value at the top or bottom code.
  AffineScale with_zero_point(AffineScale s, DType scale_dtype) const {
    if (s.d == 0 && s.m != 0) {
      s.d = round_to_scale_dtype(std::fabs(s.m) / static_cast<float>(top()), scale_dtype);
      const float z = s.m > 0 ? 0.0f : static_cast<float>(top());
      s.m = -z * s.d;
      return s;
    }
    const float z = s.d == 0 ? 0.0f : std::clamp(std::nearbyint(-s.m / s.d), 0.0f, static_cast<float>(top()));
    s.m = -z * s.d;
    return s;
  }
  // The zero point of a scale made by with_zero_point.
  int zero_point_of(const AffineScale& s) const {
    return s.d == 0 ? 0 : static_cast<int>(std::clamp(std::nearbyint(-s.m / s.d), 0.0f, static_cast<float>(top())));
  }

  // One scale for the whole tensor: the padded tensor is one long group whose weights
  // repeat per row.
  AffineScale fit_tensor_scale(const PaddedInput& in, const Layout& l, const QuantOptions& o) const {
    std::vector<float> w(static_cast<size_t>(l.rows * l.padded_cols));
    for (int64_t r = 0; r < l.rows; ++r) {
      std::copy(in.weights.begin(), in.weights.end(), w.begin() + r * l.padded_cols);
    }
    if (w.empty()) return {};
    return fit_scale(in.data, w.data(), static_cast<int64_t>(w.size()), o);
  }

  static float inverse(float d) { return d == 0 ? 0.0f : 1.0f / d; }

  void encode(const float* x, int64_t n, const AffineScale& s, const QuantOptions& o, uint8_t* codes) const {
    const float inv = inverse(s.d);
    if (o.symmetric) {
      codes_symmetric(x, n, inv, static_cast<float>(-nmax()), static_cast<float>(nmax() - 1), nmax(), codes,
                      o.reference);
    } else {
      codes_asymmetric(x, n, inv, s.m, static_cast<float>(top()), codes, o.reference);
    }
  }

#ifdef TK_HAVE_CUDA
  // quantize()'s scales and codes on device o.device: the same searches, roundings and
  // codes as the CPU's (the device runs group_search.h), stored through `store`.
  template <typename Store>
  void quantize_gpu(const PaddedInput& in, const Layout& l, const QuantOptions& o, Tensor& codes,
                    Store&& store) const {
    gpu::Groups groups(o.device, in.data, in.weights.data(), l.rows, l.padded_cols, l.group);
    const std::vector<AffineScale> found = groups.search(o.symmetric, o.symmetric ? nmax() : top(), o.fast);
    std::vector<float> inv(found.size()), mins(o.symmetric ? 0 : found.size());
    for (size_t i = 0; i < found.size(); ++i) {
      const AffineScale s = stored_scale(found[i], o);
      store(i, s);
      inv[i] = inverse(s.d);
      if (!o.symmetric) mins[i] = s.m;
    }
    groups.encode(inv.data(), o.symmetric ? nullptr : mins.data(), o.symmetric ? nmax() : top(), bits_,
                  codes.mutable_data());
  }
#endif

  void decode(const Quantized& q, float* out, bool reference, [[maybe_unused]] int device = -1,
              [[maybe_unused]] const Measure* measure = nullptr) const {
    const Granularity g = parse_granularity(param(q, "granularity"));
    const bool symmetric = param_int(q, "symmetric", 0, 1) == 1;
    if (param_int(q, "bits", 2, 8) != bits_) throw invalid_input("bits do not match the scheme", q.scheme);
    const int64_t group = param_int(q, "group_size", 8, INT64_MAX / 64);
    if (group % 8 != 0) throw invalid_input("group size is not a multiple of 8", q.scheme);
    const Layout l = make_layout(q.shape, group);
    check_shape_param(q, l);
    if (g != Granularity::kGroup && l.groups_per_row > 1) throw invalid_input("group size too small", q.scheme);
    auto it = q.parts.find("scales");
    if (it == q.parts.end() || !is_scale_dtype(it->second.dtype())) {
      throw invalid_input("missing or malformed part 'scales'", q.scheme);
    }
    const DType sd = it->second.dtype();
    const uint64_t scale_count = g == Granularity::kTensor ? 1 : static_cast<uint64_t>(l.rows * l.groups_per_row);
    const Tensor& codes = part(q, "codes", DType::kU8, static_cast<uint64_t>(l.rows * l.padded_cols * bits_ / 8));
    const Tensor& scales = part(q, "scales", sd, scale_count);
    if (!symmetric && q.params.count("zero_point")) {
      if (param(q, "zero_point") != "int") throw invalid_input("bad zero_point '" + param(q, "zero_point") + "'", q.scheme);
      decode_zero_points(q, l, g, scales, part(q, "zeros", DType::kU8, scale_count), out);
      return;
    }
    const Tensor* mins = symmetric ? nullptr : &part(q, "mins", sd, scale_count);
    const int offset = symmetric ? nmax() : 0;
#ifdef TK_HAVE_CUDA
    if (device >= 0) {
      decode_gpu(q, l, g, scales, mins, offset, out, device, measure);
      return;
    }
#endif
    const bool stream = prefer_streaming_stores(static_cast<uint64_t>(l.rows * l.cols) * sizeof(float));
    // Rows are decoded a few at a time so that the scratch below is allocated once per task.
    parallel_row_tasks(l, [&](int64_t begin, int64_t end) {
      std::vector<float> row(l.cols == l.padded_cols ? 0 : static_cast<size_t>(l.padded_cols));
      std::vector<float> d(static_cast<size_t>(l.groups_per_row)), m(mins ? d.size() : 0);
      if (g == Granularity::kTensor) {
        std::fill(d.begin(), d.end(), load_scale(scales, 0));
        if (mins) std::fill(m.begin(), m.end(), load_scale(*mins, 0));
      }
      for (int64_t r = begin; r < end; ++r) {
        if (g != Granularity::kTensor) {
          const auto first = static_cast<uint64_t>(r * l.groups_per_row);
          const auto count = static_cast<uint64_t>(l.groups_per_row);
          load_scales(scales, first, count, d.data());
          if (mins) load_scales(*mins, first, count, m.data());
        }
        // A padded row is decoded in place when its padding lands on rows of this task
        // still to be decoded (they overwrite it), else into the scratch row.
        const bool in_place = r * l.cols + l.padded_cols <= end * l.cols;
        float* y = in_place ? out + r * l.cols : row.data();
        decode_packed_affine(codes.data() + r * l.padded_cols * bits_ / 8, l.padded_cols, bits_, offset, l.group,
                             d.data(), mins ? m.data() : nullptr, y, stream && in_place, reference);
        if (!in_place) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
      }
    });
  }

#ifdef TK_HAVE_CUDA
  // decode() on device `device`: the scales as f32 (exact), then every row there.
  void decode_gpu(const Quantized& q, const Layout& l, Granularity g, const Tensor& scales, const Tensor* mins,
                  int offset, float* out, int device, const Measure* measure) const {
    const auto groups = static_cast<uint64_t>(l.rows * l.groups_per_row);
    std::vector<float> d(groups), m(mins ? groups : 0);
    if (g == Granularity::kTensor) {
      std::fill(d.begin(), d.end(), load_scale(scales, 0));
      if (mins) std::fill(m.begin(), m.end(), load_scale(*mins, 0));
    } else {
      load_scales(scales, 0, groups, d.data());
      if (mins) load_scales(*mins, 0, groups, m.data());
    }
    gpu::decode_affine(device, q.parts.at("codes").data(), l.rows, l.padded_cols, l.cols, bits_, offset, l.group,
                       d.data(), mins ? m.data() : nullptr, out, measure);
  }
#endif

  // y = (code - z) d, as compressed-tensors decodes: the difference of integers times the
  // scale, rounded once. Not a hot path (one layout's twin), so one loop serves the
  // reference and the optimised decoder alike.
  void decode_zero_points(const Quantized& q, const Layout& l, Granularity g, const Tensor& scales,
                          const Tensor& zeros, float* out) const {
    const Tensor& codes = q.parts.at("codes");
    const int64_t row_bytes = l.padded_cols * bits_ / 8;
    for (uint64_t i = 0; i < zeros.nbytes(); ++i)
      if (zeros.data()[i] > top()) throw invalid_input("zero point out of range", q.scheme);
    parallel_for(l.rows, [&](int64_t r) {
      std::vector<uint8_t> c(static_cast<size_t>(l.padded_cols));
      unpack_bits(codes.data() + r * row_bytes, l.padded_cols, bits_, c.data(), true);
      for (int64_t col = 0; col < l.cols; ++col) {
        const uint64_t gi = g == Granularity::kTensor ? 0 : static_cast<uint64_t>(r * l.groups_per_row + col / l.group);
        const int z = zeros.data()[gi];
        out[r * l.cols + col] = static_cast<float>(c[col] - z) * load_scale(scales, gi);
      }
    });
  }

  int bits_;
};

}  // namespace

std::unique_ptr<Scheme> make_int_scheme(int bits) { return std::make_unique<IntScheme>(bits); }

}  // namespace tk::quant
