// Error-minimising scale search over candidate scales around the absmax (the method of
// ggml's make_qx_quants and make_qkx2_quants), with a least-squares refit of the scale
// (and offset) for each candidate's codes and a final refit from the best scale's own
// codes. All decisions use double sums from the lane-ordered kernels, so the reference
// and optimised paths choose the same scale.
#include <cmath>

#include "tk/quant/quant_internal.h"

namespace tk::quant::detail {
namespace {

constexpr int kSymmetricTries = 9;   // candidates iscale = -(nmax + 0.1 k) / amax, |k| <= 9, and mirrored
constexpr int kAsymmetricSteps = 20; // candidates (nmax - 1 + 0.1 k) / (max - min), k <= 20
constexpr int kRefits = 2;

}  // namespace

double error_symmetric(const GroupStats& s, const TrialSums& t, double d) {
  return s.swx2 - 2 * d * t.lx + d * d * t.l2;
}

double error_asymmetric(const GroupStats& s, const TrialSums& t, double d, double m) {
  return s.swx2 - 2 * d * t.lx - 2 * m * s.swx + d * d * t.l2 + 2 * d * m * t.l + m * m * s.sw;
}

float search_symmetric(const float* x, const float* w, int64_t n, int nmax, bool fast, bool reference) {
  const GroupStats s = group_stats(x, w, n, reference);
  const float amax = s.amax_signed;
  if (amax == 0) return 0;
  float best_d = amax / static_cast<float>(-nmax);
  if (fast) return best_d;
  const float lo = static_cast<float>(-nmax), hi = static_cast<float>(nmax - 1);
  // Score: the error reduction lx^2 / l2 of the least-squares scale lx / l2.
  double best_score = -1;
  auto consider = [&](const TrialSums& t) {
    if (t.l2 <= 0) return;
    const double score = t.lx * t.lx / t.l2;
    if (score > best_score) {
      best_score = score;
      best_d = static_cast<float>(t.lx / t.l2);
    }
  };
  // Both orientations: amax towards the extra negative level -nmax (ggml's choice) and
  // towards nmax - 1; with few levels the better one differs from group to group.
  constexpr int kSide = 2 * kSymmetricTries + 1;
  constexpr int kCount = 2 * kSide;
  float iscales[kCount];
  TrialSums sums[kCount];
  for (int k = 0; k < kSide; ++k) {
    const float step = 0.1f * static_cast<float>(k - kSymmetricTries);
    iscales[k] = -(static_cast<float>(nmax) + step) / amax;
    iscales[kSide + k] = (static_cast<float>(nmax - 1) + step) / amax;
  }
  trial_symmetric_batch(x, w, n, iscales, kCount, lo, hi, sums, reference);
  for (const TrialSums& t : sums) consider(t);
  for (int r = 0; r < kRefits && best_d != 0; ++r) consider(trial_symmetric(x, w, n, 1.0f / best_d, lo, hi, reference));
  return best_d;
}

AffineScale search_asymmetric(const float* x, const float* w, int64_t n, int nmax, bool nonpositive_min,
                              bool fast, bool reference) {
  const GroupStats s = group_stats(x, w, n, reference);
  const float min = (nonpositive_min && s.min > 0) ? 0.0f : s.min;
  const float max = s.max;
  if (max == min) return {0, min};
  AffineScale best{(max - min) / static_cast<float>(nmax), min};
  if (fast) return best;
  const float hi = static_cast<float>(nmax);
  double best_err = error_asymmetric(s, trial_asymmetric(x, w, n, 1.0f / best.d, min, hi, reference), best.d,
                                     best.m);
  auto consider = [&](const TrialSums& t) {
    const double det = s.sw * t.l2 - t.l * t.l;
    if (!(det > 0)) return;
    double d = (s.sw * t.lx - s.swx * t.l) / det;
    double m = (t.l2 * s.swx - t.l * t.lx) / det;
    if (nonpositive_min && m > 0) {
      m = 0;
      d = t.lx / t.l2;
    }
    const double err = error_asymmetric(s, t, d, m);
    if (err < best_err && d > 0) {
      best_err = err;
      best = {static_cast<float>(d), static_cast<float>(m)};
    }
  };
  constexpr int kCount = kAsymmetricSteps + 1;
  float iscales[kCount], mins[kCount];
  TrialSums sums[kCount];
  for (int k = 0; k < kCount; ++k) {
    iscales[k] = (static_cast<float>(nmax) - 1.0f + 0.1f * static_cast<float>(k)) / (max - min);
    mins[k] = min;
  }
  trial_asymmetric_batch(x, w, n, iscales, mins, kCount, hi, sums, reference);
  for (const TrialSums& t : sums) consider(t);
  for (int r = 0; r < kRefits; ++r) consider(trial_asymmetric(x, w, n, 1.0f / best.d, best.m, hi, reference));
  return best;
}

}  // namespace tk::quant::detail
