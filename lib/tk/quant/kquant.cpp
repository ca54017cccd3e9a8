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
// search of search.cpp (eight sub-blocks side by side, one per vector lane); the super-block scale is then tried at a few factors around
// max|scale| / 2^(s-1) (or max / (2^s - 1)), and for each the integer sub-scales next to
// the rounded ones are tried with the sub-block's codes recomputed; the combination
// with the least (weighted) squared error after all rounding is kept. The reference
// (kquant_math.h, also the GPU's) takes one sub-block at a time; the optimised path
// below takes eight side by side and gives the same bytes.
//
// Parts: "codes" U8 [rows, padded_cols * b / 8], "sub_scales" U8 [rows, sub-blocks * s /
// 8] (and "sub_mins"), both LSB-first bit streams (symmetric q stored as q + 2^(s-1)),
// "d" F16 [rows, padded_cols / 256] (and "dmin"). Rows are padded to a multiple of 256.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "tk/core/isa.h"
#if TK_X86
#include <immintrin.h>
#endif

#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/device/device.h"
#include "tk/quant/kquant_math.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"
#ifdef TK_HAVE_CUDA
#include "tk/quant/cuda/groups.h"
#endif

namespace tk::quant {
namespace {

using namespace detail;

using kquant::kMaxFactors;
using kquant::kMaxSubs;
using kquant::kSuper;
using SuperChoice = kquant::Choice;

struct KFormat {
  const char* name;
  kquant::Format f;
};

// q3k tries more super-block scales: its 3-bit codes in sub-blocks of 16 gain most.
// q4k and q6k, the types whose speed the issue compares with llama.cpp's, try one
// super-block scale (refit by least squares afterwards) and fewer sub-block candidates
// (16 and 6): they give up 0.02 and 0.2 dB for 2.5-3x the speed and stay above their
// targets. Every type searches and tries its sub-blocks eight at a time, one per vector
// lane (the lanes kernels of quant_internal.h), so each candidate costs the same whole
// vectors whatever the count.
constexpr KFormat kFormats[] = {
    {"q2k", {2, 16, 4, true, 3, 1, 20}},  {"q3k", {3, 16, 6, false, 10, 1, 9}}, {"q4k", {4, 32, 6, true, 0, 1, 15}},
    {"q5k", {5, 32, 6, true, 3, 1, 20}},  {"q6k", {6, 16, 8, false, 0, 1, 1}},  {"q8k", {8, 16, 6, false, 3, 1, 9}},
};

#if TK_X86
TK_BEGIN_AVX2
inline __m256i load_ints(const int* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
// The lanes of v where `take` is set, into p[0..3].
inline void keep_lanes(double* p, __m256d v, __m256d take) {
  _mm256_store_pd(p, _mm256_blendv_pd(_mm256_load_pd(p), v, take));
}
TK_END_TARGET
#endif

class KScheme final : public GpuDecodedScheme<KScheme> {
 public:
  bool takes_group_size() const override { return false; }
  explicit KScheme(const KFormat& f) : name_(f.name), f_(f.f), subs_(f.f.subs()) {}

  std::string name() const override { return name_; }
  std::string description() const override {
    return name_ + ": " + std::to_string(f_.bits) + "-bit codes in 256-value super-blocks with " +
           std::to_string(f_.scale_bits) + "-bit sub-block scales" + (f_.asymmetric ? " and mins" : "");
  }

  int64_t row_block(int64_t, const QuantOptions&) const override { return kSuper; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions&) const override {
    const Layout l = make_layout(Shape{rows, cols}, kSuper);
    return static_cast<double>(stored_bytes(l)) * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.group_size != 0 && o.group_size != kSuper) throw usage_error(name() + " uses super-blocks of 256");
    const Layout l = make_layout(shape, kSuper);
    Quantized q = new_quantized(name(), shape, l);
    const int64_t n_super = l.groups_per_row;
    const int64_t row_subs = n_super * subs_;
    Tensor codes = new_part(DType::kU8, {l.rows, l.padded_cols * f_.bits / 8});
    Tensor sub_scales = new_part(DType::kU8, {l.rows, row_subs * f_.scale_bits / 8});
    Tensor sub_mins = f_.asymmetric ? new_part(DType::kU8, {l.rows, row_subs * f_.scale_bits / 8}) : Tensor();
    Tensor d = new_part(DType::kF16, {l.rows, n_super});
    Tensor dmin = f_.asymmetric ? new_part(DType::kF16, {l.rows, n_super}) : Tensor();
    const PaddedInput in = pad_input(x, l, o.importance);
    // Per super-block column: are all its weights 1 (no importance, no padding)? Then the
    // trials leave the weight products out.
    std::vector<char> unit(static_cast<size_t>(n_super));
    for (int64_t s = 0; s < n_super; ++s) {
      const float* ws = in.weights.data() + s * kSuper;
      unit[s] = std::all_of(ws, ws + kSuper, [](float v) { return v == 1.0f; });
    }
    std::vector<float> ds(static_cast<size_t>(l.rows * n_super)), dmins(ds.size());
    std::vector<uint8_t> qs(static_cast<size_t>(l.rows * row_subs)), qms(qs.size());
#ifdef TK_HAVE_CUDA
    if (o.device >= 0) {
      gpu::Groups(o.device, in.data, in.weights.data(), l.rows, l.padded_cols, kSuper)
          .encode_kquant(f_, o.fast, codes.mutable_data(), ds.data(), dmins.data(), qs.data(), qms.data());
    } else
#endif
      parallel_for(l.rows, [&](int64_t r) {
        std::vector<uint8_t> row_codes(static_cast<size_t>(l.padded_cols));
        Candidates scratch(candidate_count(o));
        for (int64_t s = 0; s < n_super; ++s) {
          const int64_t c0 = s * kSuper;
          const float* xs = in.data + r * l.padded_cols + c0;
          const float* ws = in.weights.data() + c0;
          const SuperChoice c = choose_super(xs, ws, unit[s] != 0, o, scratch);
          if (o.reference) {
            kquant::encode(f_, xs, c, row_codes.data() + c0);
          } else {
            encode_super(xs, c, row_codes.data() + c0);
          }
          const int64_t g = r * n_super + s;
          for (int i = 0; i < subs_; ++i) {
            qs[g * subs_ + i] = static_cast<uint8_t>(c.q[i] + (f_.asymmetric ? 0 : f_.qlo_abs()));
            qms[g * subs_ + i] = static_cast<uint8_t>(c.qm[i]);
          }
          ds[g] = c.d;
          dmins[g] = c.dmin;
        }
        pack_bits(row_codes.data(), l.padded_cols, f_.bits, codes.mutable_data() + r * l.padded_cols * f_.bits / 8,
                  o.reference);
      });
    // The scales as stored: f16 (exact, already rounded to it) and the integers packed.
    for (size_t g = 0; g < ds.size(); ++g) {
      d.mutable_data_as<uint16_t>()[g] = scale_to_f16(ds[g]);
      if (f_.asymmetric) dmin.mutable_data_as<uint16_t>()[g] = scale_to_f16(dmins[g]);
    }
    const int64_t sb = row_subs * f_.scale_bits / 8;
    for (int64_t r = 0; r < l.rows; ++r) {
      pack_bits(qs.data() + r * row_subs, row_subs, f_.scale_bits, sub_scales.mutable_data() + r * sb, o.reference);
      if (f_.asymmetric) {
        pack_bits(qms.data() + r * row_subs, row_subs, f_.scale_bits, sub_mins.mutable_data() + r * sb, o.reference);
      }
    }
    q.parts["codes"] = codes;
    q.parts["sub_scales"] = sub_scales;
    q.parts["d"] = d;
    if (f_.asymmetric) {
      q.parts["sub_mins"] = sub_mins;
      q.parts["dmin"] = dmin;
    }
    return q;
  }


 private:
  friend class GpuDecodedScheme<KScheme>;


  uint64_t stored_bytes(const Layout& l) const {
    const int64_t scale_bytes = l.groups_per_row * subs_ * f_.scale_bits / 8 + 2 * l.groups_per_row;
    const int64_t per_row = l.padded_cols * f_.bits / 8 + scale_bytes * (f_.asymmetric ? 2 : 1);
    return static_cast<uint64_t>(l.rows * per_row);
  }

  // One SuperChoice per candidate super scale, made once per row and only as many as
  // are tried: they are large, and zeroing all of them for every super-block (or all 21
  // for every row, where one is tried) cost more than the search of some types.
  using Candidates = std::vector<SuperChoice>;
  size_t candidate_count(const QuantOptions& o) const { return static_cast<size_t>(f_.candidates(o.fast)); }

  // The super-block's choice: the reference's (kquant_math.h), or the same found eight
  // sub-blocks at a time (choose, below).
  SuperChoice choose_super(const float* x, const float* w, bool unit, const QuantOptions& o, Candidates& c) const {
    if (o.reference) {
      GroupStats st[kMaxSubs];
      SuperChoice room;
      return kquant::choose(f_, x, w, o.fast, st, room);
    }
#if TK_X86
    if (use_avx2()) return choose_avx2(x, w, unit, o, c);
#endif
    return choose(x, w, unit, o, c);
  }

  // A super-block's values (and weights) as kSuper / (8 * sub) sets of eight sub-blocks
  // in lanes (see to_lanes); weights null when all are 1.
  struct LaneBlock {
    alignas(32) float x[kSuper];
    alignas(32) float w[kSuper];
    const float* wt = nullptr;
  };

  void to_lane_block(const float* x, const float* w, bool unit, LaneBlock& b) const {
    for (int i0 = 0; i0 < subs_; i0 += kLanes) {
      to_lanes(x + i0 * f_.sub, f_.sub, b.x + i0 * f_.sub);
      if (!unit) to_lanes(w + i0 * f_.sub, f_.sub, b.w + i0 * f_.sub);
    }
    b.wt = unit ? nullptr : b.w;
  }
  const float* lane_x(const LaneBlock& b, int i0) const { return b.x + i0 * f_.sub; }
  const float* lane_w(const LaneBlock& b, int i0) const { return b.wt ? b.wt + i0 * f_.sub : nullptr; }

  // The sums of sub-blocks i0 .. i0 + 7, each for its own scale and offset.
  void trial_lanes(const LaneBlock& b, int i0, const float* iscales, const float* mins, LaneSums& out) const {
    if (f_.asymmetric) {
      trial_asymmetric_lanes(lane_x(b, i0), lane_w(b, i0), f_.sub, iscales, mins, static_cast<float>(f_.top()), out,
                             false);
    } else {
      trial_symmetric_lanes(lane_x(b, i0), lane_w(b, i0), f_.sub, iscales, static_cast<float>(-f_.nmax()),
                            static_cast<float>(f_.nmax() - 1), out, false);
    }
  }

  // Each of eight sub-blocks' best integers so far (err -1: none yet), with their sums.
  struct LaneBest {
    alignas(32) double err[kLanes], lx[kLanes], l2[kLanes], l[kLanes], q[kLanes], qm[kLanes];
  };
  // One trial of the integer choice: for each sub-block g, q = q0[g] + a and qm = m0[g] +
  // bm when they are within [q0, q1] and [m0, m1], at super scales d and dmin.
  struct IntegerTrial {
    float d, dmin;
    const int *q0, *q1, *m0, *m1;
    int a, bm;
  };

  // Try one integer pair per sub-block and keep it where its error is less (the first
  // of equal errors). sw, swx, swx2: the sub-blocks' stats.
  void integer_trial(const LaneBlock& b, int i0, const IntegerTrial& tr, const double* sw, const double* swx,
                     const double* swx2, LaneBest& best) const {
    alignas(32) float iscales[kLanes], mins[kLanes], scales[kLanes];
    bool valid[kLanes], any = false;
    for (int g = 0; g < kLanes; ++g) {
      valid[g] = tr.q0[g] + tr.a <= tr.q1[g] && tr.m0[g] + tr.bm <= tr.m1[g];
      any = any || valid[g];
      scales[g] = tr.d * static_cast<float>(tr.q0[g] + tr.a);
      iscales[g] = (!valid[g] || scales[g] == 0) ? 0.0f : 1.0f / scales[g];
      mins[g] = -(tr.dmin * static_cast<float>(tr.m0[g] + tr.bm));
    }
    if (!any) return;
    LaneSums t;
    trial_lanes(b, i0, iscales, mins, t);
    // A zero scale gives all-zero codes (iscale 0), which the sums then describe.
    for (int g = 0; g < kLanes; ++g) {
      const double scale = scales[g];
      const double e = f_.asymmetric
                           ? error_asymmetric(swx2[g], swx[g], sw[g], t.lx[g], t.l2[g], t.l[g], scale, mins[g])
                           : error_symmetric(swx2[g], t.lx[g], t.l2[g], scale);
      if (valid[g] && (best.err[g] < 0 || e < best.err[g])) {
        best.err[g] = e;
        best.lx[g] = t.lx[g];
        best.l2[g] = t.l2[g];
        best.l[g] = t.l[g];
        best.q[g] = tr.q0[g] + tr.a;
        best.qm[g] = tr.m0[g] + tr.bm;
      }
    }
  }

#if TK_X86
  // integer_trial in vectors: the same operations in the same order.
  TK_TARGET_AVX2 void integer_trial_avx2(const LaneBlock& b, int i0, const IntegerTrial& tr, const double* sw, const double* swx,
                          const double* swx2, LaneBest& best) const {
    const __m256i q = _mm256_add_epi32(load_ints(tr.q0), _mm256_set1_epi32(tr.a));
    const __m256i qm = _mm256_add_epi32(load_ints(tr.m0), _mm256_set1_epi32(tr.bm));
    const __m256i invalid = _mm256_or_si256(_mm256_cmpgt_epi32(q, load_ints(tr.q1)), _mm256_cmpgt_epi32(qm, load_ints(tr.m1)));
    if (_mm256_movemask_ps(_mm256_castsi256_ps(invalid)) == 0xff) return;
    const __m256 scales = _mm256_mul_ps(_mm256_set1_ps(tr.d), _mm256_cvtepi32_ps(q));
    const __m256 use = _mm256_andnot_ps(_mm256_castsi256_ps(invalid),
                                        _mm256_cmp_ps(scales, _mm256_setzero_ps(), _CMP_NEQ_UQ));
    alignas(32) float iscales[kLanes], mins[kLanes];
    _mm256_store_ps(iscales, _mm256_and_ps(use, _mm256_div_ps(_mm256_set1_ps(1.0f), scales)));
    const __m256 min = _mm256_mul_ps(_mm256_set1_ps(tr.dmin), _mm256_cvtepi32_ps(qm));
    _mm256_store_ps(mins, _mm256_xor_ps(min, _mm256_set1_ps(-0.0f)));
    LaneSums t;
    trial_lanes(b, i0, iscales, mins, t);
    const __m256d zero = _mm256_setzero_pd(), two = _mm256_set1_pd(2.0);
    for (int h = 0; h < kLanes; h += 4) {
      const __m256d d = _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(scales) : _mm256_extractf128_ps(scales, 1));
      const __m256d lx = _mm256_load_pd(t.lx + h), l2 = _mm256_load_pd(t.l2 + h), l = _mm256_load_pd(t.l + h);
      const __m256d vswx2 = _mm256_loadu_pd(swx2 + h);
      const __m256d d2 = _mm256_mul_pd(two, d);
      // error_symmetric / error_asymmetric's order.
      __m256d e = _mm256_sub_pd(vswx2, _mm256_mul_pd(d2, lx));
      if (f_.asymmetric) {
        const __m256d m = _mm256_cvtps_pd(_mm_load_ps(mins + h));
        e = _mm256_sub_pd(e, _mm256_mul_pd(_mm256_mul_pd(two, m), _mm256_loadu_pd(swx + h)));
        e = _mm256_add_pd(e, _mm256_mul_pd(_mm256_mul_pd(d, d), l2));
        e = _mm256_add_pd(e, _mm256_mul_pd(_mm256_mul_pd(d2, m), l));
        e = _mm256_add_pd(e, _mm256_mul_pd(_mm256_mul_pd(m, m), _mm256_loadu_pd(sw + h)));
      } else {
        e = _mm256_add_pd(e, _mm256_mul_pd(_mm256_mul_pd(d, d), l2));
      }
      const __m128i inv_half = h == 0 ? _mm256_castsi256_si128(invalid) : _mm256_extracti128_si256(invalid, 1);
      const __m256d valid = _mm256_castsi256_pd(_mm256_xor_si256(_mm256_cvtepi32_epi64(inv_half),
                                                                 _mm256_set1_epi64x(-1)));
      const __m256d be = _mm256_load_pd(best.err + h);
      const __m256d better = _mm256_or_pd(_mm256_cmp_pd(be, zero, _CMP_LT_OQ), _mm256_cmp_pd(e, be, _CMP_LT_OQ));
      const __m256d take = _mm256_and_pd(valid, better);
      keep_lanes(best.err + h, e, take);
      keep_lanes(best.lx + h, lx, take);
      keep_lanes(best.l2 + h, l2, take);
      keep_lanes(best.l + h, l, take);
      const __m128i qh = h == 0 ? _mm256_castsi256_si128(q) : _mm256_extracti128_si256(q, 1);
      const __m128i qmh = h == 0 ? _mm256_castsi256_si128(qm) : _mm256_extracti128_si256(qm, 1);
      keep_lanes(best.q + h, _mm256_cvtepi32_pd(qh), take);
      keep_lanes(best.qm + h, _mm256_cvtepi32_pd(qmh), take);
    }
  }
#endif

  // For every candidate super scale (dmin stays fixed), pick each sub-block's integers
  // with the least error; keep the super scale whose total error is least. Sub-blocks
  // are searched and tried eight at a time, one per vector lane.
  // Compiled as it stands and, inlined with what it calls, into choose_avx2 (the same
  // values: no step is reordered or fused).
  [[gnu::always_inline]] inline SuperChoice choose(const float* x, const float* w, bool unit, const QuantOptions& o,
                                                   Candidates& c) const {
    LaneBlock b;
    to_lane_block(x, w, unit, b);
    std::array<GroupStats, kMaxSubs> st;
    std::array<AffineScale, kMaxSubs> best;
    for (int i0 = 0; i0 < subs_; i0 += kLanes) {
      group_stats_lanes(lane_x(b, i0), lane_w(b, i0), f_.sub, &st[i0], false);
      if (f_.asymmetric) {
        search_asymmetric_lanes(&st[i0], lane_x(b, i0), lane_w(b, i0), f_.sub, f_.top(), true, o.fast, false,
                                f_.search_tries, &best[i0]);
      } else {
        float d[kLanes];
        search_symmetric_lanes(&st[i0], lane_x(b, i0), lane_w(b, i0), f_.sub, f_.nmax(), o.fast, false,
                               f_.search_tries, d);
        for (int g = 0; g < kLanes; ++g) best[i0 + g].d = d[g];
      }
    }
    float largest, largest_min;
    kquant::largest_scales(f_, best.data(), &largest, &largest_min);
    if (largest == 0 && largest_min == 0) return SuperChoice{};
    float ds[kMaxFactors];
    const int n_super = kquant::super_scales(f_, largest, o.fast, ds);
    const float dmin = f_.asymmetric ? kquant::round_f16(largest_min / static_cast<float>(f_.qtop())) : 0.0f;
    for (int k = 0; k < n_super; ++k) {
      c[k] = SuperChoice{};
      c[k].d = ds[k];
      c[k].dmin = dmin;
    }
    const int qlo = f_.qlo(), qhi = f_.qhi();
    const int width = f_.width(o.fast);  // integers tried per scale (and per min)
    for (int i0 = 0; i0 < subs_; i0 += kLanes) {
      alignas(32) double sw[kLanes], swx[kLanes], swx2[kLanes];
      for (int g = 0; g < kLanes; ++g) {
        sw[g] = st[i0 + g].sw;
        swx[g] = st[i0 + g].swx;
        swx2[g] = st[i0 + g].swx2;
      }
      for (int k = 0; k < n_super; ++k) {
        int q0[kLanes], q1[kLanes], m0[kLanes] = {}, m1[kLanes] = {};
        for (int g = 0; g < kLanes; ++g) {
          kquant::neighbours(f_, best[i0 + g].d, ds[k], qlo, qhi, o.fast, &q0[g], &q1[g]);
          if (f_.asymmetric) kquant::neighbours(f_, -best[i0 + g].m, dmin, 0, qhi, o.fast, &m0[g], &m1[g]);
        }
        // Trial (a, bm): integer q0 + a and min integer m0 + bm of every sub-block at once,
        // in the order q, then qm; a sub-block whose range is shorter sits it out.
        LaneBest lb{};
        std::fill(lb.err, lb.err + kLanes, -1.0);
        for (int a = 0; a < width; ++a) {
          for (int bm = 0; bm < (f_.asymmetric ? width : 1); ++bm) {
            const IntegerTrial trial{ds[k], dmin, q0, q1, m0, m1, a, bm};
#if TK_X86
            if (use_avx2()) {
              integer_trial_avx2(b, i0, trial, sw, swx, swx2, lb);
              continue;
            }
#endif
            integer_trial(b, i0, trial, sw, swx, swx2, lb);
          }
        }
        for (int g = 0; g < kLanes; ++g) {
          c[k].q[i0 + g] = static_cast<int>(lb.q[g]);
          c[k].qm[i0 + g] = static_cast<int>(lb.qm[g]);
          c[k].sums[i0 + g] = {lb.lx[g], lb.l2[g], lb.l[g]};
          c[k].err += lb.err[g];
        }
      }
    }
    int pick = 0;
    for (int k = 1; k < n_super; ++k) {
      if (c[k].err < c[pick].err) pick = k;
    }
    return o.fast ? c[pick] : refit(b, st, c[pick]);
  }

#if TK_X86
  TK_TARGET_AVX2 SuperChoice choose_avx2(const float* x, const float* w, bool unit, const QuantOptions& o,
                                         Candidates& c) const {
    return choose(x, w, unit, o, c);
  }
#endif

  // Refit d (and dmin) by least squares with every code and integer fixed; keep the
  // rounded refit when, codes recomputed, its error is lower.
  SuperChoice refit(const LaneBlock& b, const std::array<GroupStats, kMaxSubs>& st, const SuperChoice& c) const {
    SuperChoice r;
    if (!kquant::refit_scales(f_, st.data(), c, r)) return c;
    r.err = 0;
    for (int i0 = 0; i0 < subs_; i0 += kLanes) {
      float iscales[kLanes], mins[kLanes];
      for (int g = 0; g < kLanes; ++g) {
        const float scale = r.d * static_cast<float>(r.q[i0 + g]);
        iscales[g] = scale == 0 ? 0.0f : 1.0f / scale;
        mins[g] = -(r.dmin * static_cast<float>(r.qm[i0 + g]));
      }
      LaneSums t;
      trial_lanes(b, i0, iscales, mins, t);
      for (int g = 0; g < kLanes; ++g) {
        const int i = i0 + g;
        r.sums[i] = t.at(g);
        const float scale = r.d * static_cast<float>(r.q[i]);
        r.err += f_.asymmetric ? error_asymmetric(st[i], r.sums[i], scale, mins[g])
                               : error_symmetric(st[i], r.sums[i], scale);
      }
    }
    return r.err < c.err ? r : c;
  }

  void encode_super(const float* x, const SuperChoice& c, uint8_t* codes) const {
    for (int i = 0; i < subs_; ++i) {
      const float scale = c.d * static_cast<float>(c.q[i]);
      const float inv = scale == 0 ? 0.0f : 1.0f / scale;
      if (f_.asymmetric) {
        codes_asymmetric(x + i * f_.sub, f_.sub, inv, -(c.dmin * static_cast<float>(c.qm[i])),
                         static_cast<float>(f_.top()), codes + i * f_.sub, false);
      } else {
        codes_symmetric(x + i * f_.sub, f_.sub, inv, static_cast<float>(-f_.nmax()), static_cast<float>(f_.nmax() - 1),
                        f_.nmax(), codes + i * f_.sub, false);
      }
    }
  }

  void decode(const Quantized& q, float* out, bool reference, [[maybe_unused]] int device = -1,
              [[maybe_unused]] const Measure* measure = nullptr) const {
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
    const int offset = f_.asymmetric ? 0 : f_.nmax();
    const int bias = f_.asymmetric ? 0 : f_.qlo_abs();
#ifdef TK_HAVE_CUDA
    if (device >= 0) {
      // Every sub-block's scale (and min) here, exact; the codes there.
      const auto subs = static_cast<size_t>(l.rows * row_subs);
      std::vector<uint8_t> qs(subs), qm(sub_mins ? subs : 0);
      std::vector<float> scale(subs), min(sub_mins ? subs : 0), all_d(static_cast<size_t>(l.rows * n_super));
      std::vector<float> all_dmin(dmin ? all_d.size() : 0);
      for (int64_t r = 0; r < l.rows; ++r) {
        unpack_bits(sub_scales.data() + r * sb, row_subs, f_.scale_bits, qs.data() + r * row_subs, false);
        if (sub_mins) unpack_bits(sub_mins->data() + r * sb, row_subs, f_.scale_bits, qm.data() + r * row_subs, false);
      }
      load_scales(d, 0, all_d.size(), all_d.data());
      expand_sub_scales(qs.data(), l.rows * n_super, subs_, bias, all_d.data(), false, scale.data(), false);
      if (sub_mins) {
        load_scales(*dmin, 0, all_dmin.size(), all_dmin.data());
        expand_sub_scales(qm.data(), l.rows * n_super, subs_, 0, all_dmin.data(), true, min.data(), false);
      }
      gpu::decode_affine(device, codes.data(), l.rows, l.padded_cols, l.cols, f_.bits, offset, f_.sub, scale.data(),
                         sub_mins ? min.data() : nullptr, out, measure);
      return;
    }
#endif
    const bool stream = prefer_streaming_stores(static_cast<uint64_t>(l.rows * l.cols) * sizeof(float));
    // Rows are decoded a few at a time so that the scratch below is allocated once per task.
    parallel_row_tasks(l, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> qs(static_cast<size_t>(row_subs)), qm(sub_mins ? qs.size() : 0);
      std::vector<float> scale(static_cast<size_t>(row_subs)), min(sub_mins ? scale.size() : 0);
      std::vector<float> row_d(static_cast<size_t>(n_super)), row_dmin(dmin ? row_d.size() : 0);
      std::vector<float> row(l.cols == l.padded_cols ? 0 : static_cast<size_t>(l.padded_cols));
      for (int64_t r = begin; r < end; ++r) {
        // A padded row is decoded in place when its padding lands on rows of this task
        // still to be decoded (they overwrite it), else into the scratch row.
        const bool in_place = r * l.cols + l.padded_cols <= end * l.cols;
        float* y = in_place ? out + r * l.cols : row.data();
        const auto first = static_cast<uint64_t>(r * n_super), count = static_cast<uint64_t>(n_super);
        unpack_bits(sub_scales.data() + r * sb, row_subs, f_.scale_bits, qs.data(), reference);
        load_scales(d, first, count, row_d.data());
        expand_sub_scales(qs.data(), n_super, subs_, bias, row_d.data(), false, scale.data(), reference);
        if (sub_mins) {
          unpack_bits(sub_mins->data() + r * sb, row_subs, f_.scale_bits, qm.data(), reference);
          load_scales(*dmin, first, count, row_dmin.data());
          expand_sub_scales(qm.data(), n_super, subs_, 0, row_dmin.data(), true, min.data(), reference);
        }
        decode_packed_affine(codes.data() + r * l.padded_cols * f_.bits / 8, l.padded_cols, f_.bits, offset, f_.sub,
                             scale.data(), sub_mins ? min.data() : nullptr, y, stream && in_place, reference);
        if (!in_place) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
      }
    });
  }

  std::string name_;
  kquant::Format f_;
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
