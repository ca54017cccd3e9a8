// Error-minimising scale search over candidate scales around the absmax (the method of
// ggml's make_qx_quants and make_qkx2_quants), with a least-squares refit of the scale
// (and offset) for each candidate's codes and a final refit from the best scale's own
// codes. All decisions use double sums from the lane-ordered kernels, so the reference
// and optimised paths choose the same scale.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tk/core/isa.h"
#if TK_X86
#include <immintrin.h>
#endif

#include "tk/quant/quant_internal.h"

namespace tk::quant::detail {
namespace {

// out[g] = num / den[g] where active[g], else 0: in one vector division where AVX2 is
// there (the same quotients).
static_assert(sizeof(bool) == 1, "divide_lanes reads eight bools as eight bytes");
#if TK_X86
TK_BEGIN_AVX2
void divide_lanes_avx2(float num, const float* den, const bool* active, float* out) {
  const __m256i flags = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(active)));
  const __m256 mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(flags, _mm256_setzero_si256()));
  _mm256_storeu_ps(out, _mm256_and_ps(mask, _mm256_div_ps(_mm256_set1_ps(num), _mm256_loadu_ps(den))));
}

// The lanes searches' decisions four lanes at a time in doubles: the scalar loops'
// operations in the same order (no fused products), so the same bits.

// All ones in the lanes where active[g].
inline __m256d lane_mask(const bool* active) {
  return _mm256_castsi256_pd(_mm256_set_epi64x(active[3] ? -1 : 0, active[2] ? -1 : 0, active[1] ? -1 : 0,
                                               active[0] ? -1 : 0));
}
inline __m256d gt(__m256d a, __m256d b) { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }
// A double's value rounded to float, as four floats.
inline __m128 to_float(__m256d v) { return _mm256_cvtpd_ps(v); }
// take_value where the 64-bit mask `take` is set (its upper halves as a 4 x 32-bit mask).
inline __m128 select(__m128 keep, __m128 take_value, __m256d take) {
  const __m256 halves = _mm256_permutevar8x32_ps(_mm256_castpd_ps(take), _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7));
  return _mm_blendv_ps(keep, take_value, _mm256_castps256_ps128(halves));
}

void consider_symmetric_avx2(const LaneSums& t, const bool* active, double* best_score, float* best_d) {
  const __m256d zero = _mm256_setzero_pd();
  for (int h = 0; h < kLanes; h += 4) {
    const __m256d lx = _mm256_load_pd(t.lx + h), l2 = _mm256_load_pd(t.l2 + h);
    const __m256d score = _mm256_div_pd(_mm256_mul_pd(lx, lx), l2);
    const __m256d best = _mm256_loadu_pd(best_score + h);
    const __m256d take = _mm256_and_pd(lane_mask(active + h), _mm256_and_pd(gt(l2, zero), gt(score, best)));
    _mm256_storeu_pd(best_score + h, _mm256_blendv_pd(best, score, take));
    const __m128 d = to_float(_mm256_div_pd(lx, l2));
    _mm_storeu_ps(best_d + h, select(_mm_loadu_ps(best_d + h), d, take));
  }
}

void consider_asymmetric_avx2(const LaneSums& t, const bool* active, bool nonpositive_min, const double* sw,
                              const double* swx, const double* swx2, double* best_err, float* best_d, float* best_m) {
  const __m256d zero = _mm256_setzero_pd(), two = _mm256_set1_pd(2.0);
  const __m256d clamp_allowed = nonpositive_min ? _mm256_castsi256_pd(_mm256_set1_epi64x(-1)) : zero;
  for (int h = 0; h < kLanes; h += 4) {
    const __m256d lx = _mm256_load_pd(t.lx + h), l2 = _mm256_load_pd(t.l2 + h), l = _mm256_load_pd(t.l + h);
    const __m256d vsw = _mm256_loadu_pd(sw + h), vswx = _mm256_loadu_pd(swx + h), vswx2 = _mm256_loadu_pd(swx2 + h);
    const __m256d err0 = _mm256_loadu_pd(best_err + h);
    const __m256d det = _mm256_sub_pd(_mm256_mul_pd(vsw, l2), _mm256_mul_pd(l, l));
    const __m256d d_num = _mm256_sub_pd(_mm256_mul_pd(vsw, lx), _mm256_mul_pd(vswx, l));
    const __m256d m_num = _mm256_sub_pd(_mm256_mul_pd(l2, vswx), _mm256_mul_pd(l, lx));
    const __m256d bound = _mm256_sub_pd(vswx2, err0);
    const __m256d clamp_min = _mm256_and_pd(clamp_allowed, gt(m_num, zero));
    const __m256d gains_clamped = _mm256_and_pd(gt(lx, zero), gt(_mm256_mul_pd(lx, lx), _mm256_mul_pd(bound, l2)));
    const __m256d gains_free =
        _mm256_and_pd(gt(d_num, zero), gt(_mm256_add_pd(_mm256_mul_pd(lx, d_num), _mm256_mul_pd(vswx, m_num)),
                                          _mm256_mul_pd(bound, det)));
    const __m256d gains = _mm256_blendv_pd(gains_free, gains_clamped, clamp_min);
    const __m256d d = _mm256_blendv_pd(_mm256_div_pd(d_num, det), _mm256_div_pd(lx, l2), clamp_min);
    const __m256d m = _mm256_blendv_pd(_mm256_div_pd(m_num, det), zero, clamp_min);
    // error_asymmetric's order: swx2 - 2d lx - 2m swx + d d l2 + 2d m l + m m sw.
    const __m256d d2 = _mm256_mul_pd(two, d);
    __m256d err = _mm256_sub_pd(vswx2, _mm256_mul_pd(d2, lx));
    err = _mm256_sub_pd(err, _mm256_mul_pd(_mm256_mul_pd(two, m), vswx));
    err = _mm256_add_pd(err, _mm256_mul_pd(_mm256_mul_pd(d, d), l2));
    err = _mm256_add_pd(err, _mm256_mul_pd(_mm256_mul_pd(d2, m), l));
    err = _mm256_add_pd(err, _mm256_mul_pd(_mm256_mul_pd(m, m), vsw));
    __m256d take = _mm256_and_pd(lane_mask(active + h), _mm256_and_pd(gt(det, zero), gains));
    take = _mm256_and_pd(take, _mm256_and_pd(_mm256_cmp_pd(err, err0, _CMP_LT_OQ), gt(d, zero)));
    _mm256_storeu_pd(best_err + h, _mm256_blendv_pd(err0, err, take));
    _mm_storeu_ps(best_d + h, select(_mm_loadu_ps(best_d + h), to_float(d), take));
    _mm_storeu_ps(best_m + h, select(_mm_loadu_ps(best_m + h), to_float(m), take));
  }
}
TK_END_TARGET
#endif

// One group's searches with the CPU's trial kernels. Compiled as they stand and, inlined,
// into the _avx2 twins below, where their candidate loops vectorise for AVX2 (the same
// values: no step is reordered or fused).
[[gnu::always_inline]] inline float symmetric_search(const GroupStats& s, const float* x, const float* w, int64_t n,
                                                     int nmax, bool fast, bool reference, int tries) {
  const float lo = static_cast<float>(-nmax), hi = static_cast<float>(nmax - 1);
  return detail::symmetric_search(
      s, nmax, fast, tries,
      [&](float iscale, float) { return trial_symmetric(x, w, n, iscale, lo, hi, reference); },
      [&](const float* iscales, const float*, int count, TrialSums* out) {
        trial_symmetric_batch(x, w, n, iscales, count, lo, hi, out, reference);
      });
}

[[gnu::always_inline]] inline AffineScale asymmetric_search(const GroupStats& s, const float* x, const float* w,
                                                            int64_t n, int nmax, bool nonpositive_min, bool fast,
                                                            bool reference, int steps) {
  const float hi = static_cast<float>(nmax);
  return detail::asymmetric_search(
      s, nmax, nonpositive_min, fast, steps,
      [&](float iscale, float min) { return trial_asymmetric(x, w, n, iscale, min, hi, reference); },
      [&](const float* iscales, const float* mins, int count, TrialSums* out) {
        trial_asymmetric_batch(x, w, n, iscales, mins, count, hi, out, reference);
      });
}

#if TK_X86
TK_BEGIN_AVX2
float symmetric_search_avx2(const GroupStats& s, const float* x, const float* w, int64_t n, int nmax, bool fast,
                            int tries) {
  return symmetric_search(s, x, w, n, nmax, fast, false, tries);
}
AffineScale asymmetric_search_avx2(const GroupStats& s, const float* x, const float* w, int64_t n, int nmax,
                                   bool nonpositive_min, bool fast, int steps) {
  return asymmetric_search(s, x, w, n, nmax, nonpositive_min, fast, false, steps);
}
TK_END_TARGET
#endif

void divide_lanes(float num, const float* den, const bool* active, float* out, bool reference) {
#if TK_X86
  if (!reference && use_avx2()) return divide_lanes_avx2(num, den, active, out);
#endif
  for (int g = 0; g < kLanes; ++g) out[g] = active[g] ? num / den[g] : 0.0f;
}

}  // namespace

float search_symmetric(const float* x, const float* w, int64_t n, int nmax, bool fast, bool reference, int tries) {
  return search_symmetric(group_stats(x, w, n, reference), x, w, n, nmax, fast, reference, tries);
}

float search_symmetric(const GroupStats& s, const float* x, const float* w, int64_t n, int nmax, bool fast,
                       bool reference, int tries) {
#if TK_X86
  if (!reference && use_avx2()) return symmetric_search_avx2(s, x, w, n, nmax, fast, tries);
#endif
  return symmetric_search(s, x, w, n, nmax, fast, reference, tries);
}

// The lanes searches keep each group's state in arrays over the lanes and decide with
// branch-free loops over them (the vectoriser's shape); every value is the same IEEE
// operation as in the one-group classes above, so the results are the same bits.
void search_symmetric_lanes(const GroupStats* s, const float* xt, const float* wt, int64_t n, int nmax, bool fast,
                            bool reference, int tries, float* d) {
  tries = std::clamp(tries, 0, kSymmetricTries);
  const int side = 2 * tries + 1;
  alignas(32) float amax[kLanes], best_d[kLanes], v[kLanes];
  alignas(32) double best_score[kLanes];
  bool any = false;
  for (int g = 0; g < kLanes; ++g) {
    amax[g] = s[g].amax_signed;
    best_d[g] = amax[g] == 0 ? 0.0f : amax[g] / static_cast<float>(-nmax);
    best_score[g] = -1;
    any = any || amax[g] != 0;
  }
  if (!any || fast) {
    std::copy(best_d, best_d + kLanes, d);
    return;
  }
  const float lo = static_cast<float>(-nmax), hi = static_cast<float>(nmax - 1);
  LaneSums sums;
  // Candidate k of every group at once; an all-zero group runs along with iscale 0 and
  // keeps d = 0 (its sums are all zero, so l2 > 0 fails).
  auto consider = [&](const bool* active) {
#if TK_X86
    if (!reference && use_avx2()) {
      consider_symmetric_avx2(sums, active, best_score, best_d);
      return;
    }
#endif
    for (int g = 0; g < kLanes; ++g) {
      const double lx = sums.lx[g], l2 = sums.l2[g];
      const double score = lx * lx / l2;
      const bool take = active[g] && l2 > 0 && score > best_score[g];
      best_score[g] = take ? score : best_score[g];
      best_d[g] = take ? static_cast<float>(lx / l2) : best_d[g];
    }
  };
  bool nonzero[kLanes];
  for (int g = 0; g < kLanes; ++g) nonzero[g] = amax[g] != 0;
  for (int k = 0; k < 2 * side; ++k) {
    const float step = 0.1f * static_cast<float>(k % side - tries);
    const float top = k < side ? -(static_cast<float>(nmax) + step) : static_cast<float>(nmax - 1) + step;
    divide_lanes(top, amax, nonzero, v, reference);
    trial_symmetric_lanes(xt, wt, n, v, lo, hi, sums, reference);
    consider(nonzero);
  }
  for (int r = 0; r < kSearchRefits; ++r) {
    bool active[kLanes];
    any = false;
    for (int g = 0; g < kLanes; ++g) {
      active[g] = nonzero[g] && best_d[g] != 0;
      any = any || active[g];
    }
    if (!any) break;
    divide_lanes(1.0f, best_d, active, v, reference);
    trial_symmetric_lanes(xt, wt, n, v, lo, hi, sums, reference);
    consider(active);
  }
  std::copy(best_d, best_d + kLanes, d);
}

AffineScale search_asymmetric(const float* x, const float* w, int64_t n, int nmax, bool nonpositive_min,
                              bool fast, bool reference, int steps) {
  return search_asymmetric(group_stats(x, w, n, reference), x, w, n, nmax, nonpositive_min, fast, reference, steps);
}

AffineScale search_asymmetric(const GroupStats& s, const float* x, const float* w, int64_t n, int nmax,
                              bool nonpositive_min, bool fast, bool reference, int steps) {
#if TK_X86
  if (!reference && use_avx2()) return asymmetric_search_avx2(s, x, w, n, nmax, nonpositive_min, fast, steps);
#endif
  return asymmetric_search(s, x, w, n, nmax, nonpositive_min, fast, reference, steps);
}

void search_asymmetric_lanes(const GroupStats* s, const float* xt, const float* wt, int64_t n, int nmax,
                             bool nonpositive_min, bool fast, bool reference, int steps, AffineScale* out) {
  alignas(32) double sw[kLanes], swx[kLanes], swx2[kLanes], best_err[kLanes];
  alignas(32) float min[kLanes], range[kLanes], best_d[kLanes], best_m[kLanes], v[kLanes];
  bool active[kLanes], any = false;
  for (int g = 0; g < kLanes; ++g) {
    sw[g] = s[g].sw;
    swx[g] = s[g].swx;
    swx2[g] = s[g].swx2;
    min[g] = (nonpositive_min && s[g].min > 0) ? 0.0f : s[g].min;
    range[g] = s[g].max - min[g];
    active[g] = s[g].max != min[g];
    best_d[g] = active[g] ? range[g] / static_cast<float>(nmax) : 0.0f;
    best_m[g] = min[g];
    any = any || active[g];
  }
  if (any && !fast) {
    const float hi = static_cast<float>(nmax);
    LaneSums t;
    // Inactive groups run along with iscale 0; their sums are unused.
    auto trial_best = [&] {
      divide_lanes(1.0f, best_d, active, v, reference);
      trial_asymmetric_lanes(xt, wt, n, v, best_m, hi, t, reference);
    };
    // As AsymmetricSearch::consider, for every lane at once.
    auto consider = [&] {
#if TK_X86
      if (!reference && use_avx2()) {
        consider_asymmetric_avx2(t, active, nonpositive_min, sw, swx, swx2, best_err, best_d, best_m);
        return;
      }
#endif
      for (int g = 0; g < kLanes; ++g) {
        const double lx = t.lx[g], l2 = t.l2[g], l = t.l[g];
        const double det = sw[g] * l2 - l * l;
        const double d_num = sw[g] * lx - swx[g] * l, m_num = l2 * swx[g] - l * lx;
        const double bound = swx2[g] - best_err[g];
        const bool clamp_min = nonpositive_min && m_num > 0;
        const bool gains = clamp_min ? (lx > 0 && lx * lx > bound * l2)
                                     : (d_num > 0 && lx * d_num + swx[g] * m_num > bound * det);
        const double d = clamp_min ? lx / l2 : d_num / det;
        const double m = clamp_min ? 0.0 : m_num / det;
        const double err = error_asymmetric(swx2[g], swx[g], sw[g], lx, l2, l, d, m);
        const bool take = active[g] && det > 0 && gains && err < best_err[g] && d > 0;
        best_err[g] = take ? err : best_err[g];
        best_d[g] = take ? static_cast<float>(d) : best_d[g];
        best_m[g] = take ? static_cast<float>(m) : best_m[g];
      }
    };
    trial_best();
    for (int g = 0; g < kLanes; ++g) {
      best_err[g] = error_asymmetric(swx2[g], swx[g], sw[g], t.lx[g], t.l2[g], t.l[g], best_d[g], best_m[g]);
    }
    const int count = std::clamp(steps, 0, kAsymmetricSteps) + 1;
    for (int k = 0; k < count; ++k) {
      const float top = static_cast<float>(nmax) - 1.0f + 0.1f * static_cast<float>(k);
      divide_lanes(top, range, active, v, reference);
      trial_asymmetric_lanes(xt, wt, n, v, min, hi, t, reference);
      consider();
    }
    for (int r = 0; r < kSearchRefits; ++r) {
      trial_best();
      consider();
    }
  }
  for (int g = 0; g < kLanes; ++g) out[g] = {best_d[g], best_m[g]};
}

}  // namespace tk::quant::detail
