// Error-minimising scale search over candidate scales around the absmax (the method of
// ggml's make_qx_quants and make_qkx2_quants), with a least-squares refit of the scale
// (and offset) for each candidate's codes and a final refit from the best scale's own
// codes. All decisions use double sums from the lane-ordered kernels, so the reference
// and optimised paths choose the same scale.
#include <algorithm>
#include <cmath>

#include "tk/quant/quant_internal.h"

namespace tk::quant::detail {
namespace {

constexpr int kRefits = 2;

}  // namespace

double error_symmetric(const GroupStats& s, const TrialSums& t, double d) {
  return s.swx2 - 2 * d * t.lx + d * d * t.l2;
}

double error_asymmetric(const GroupStats& s, const TrialSums& t, double d, double m) {
  return s.swx2 - 2 * d * t.lx - 2 * m * s.swx + d * d * t.l2 + 2 * d * m * t.l + m * m * s.sw;
}

float search_symmetric(const float* x, const float* w, int64_t n, int nmax, bool fast, bool reference, int tries) {
  return search_symmetric(group_stats(x, w, n, reference), x, w, n, nmax, fast, reference, tries);
}

float search_symmetric(const GroupStats& s, const float* x, const float* w, int64_t n, int nmax, bool fast,
                       bool reference, int tries) {
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
  constexpr int kMaxCount = 2 * (2 * kSymmetricTries + 1);
  const int side = 2 * std::clamp(tries, 0, kSymmetricTries) + 1;
  float iscales[kMaxCount];
  TrialSums sums[kMaxCount];
  for (int k = 0; k < side; ++k) {
    const float step = 0.1f * static_cast<float>(k - tries);
    iscales[k] = -(static_cast<float>(nmax) + step) / amax;
    iscales[side + k] = (static_cast<float>(nmax - 1) + step) / amax;
  }
  trial_symmetric_batch(x, w, n, iscales, 2 * side, lo, hi, sums, reference);
  for (int k = 0; k < 2 * side; ++k) consider(sums[k]);
  for (int r = 0; r < kRefits && best_d != 0; ++r) consider(trial_symmetric(x, w, n, 1.0f / best_d, lo, hi, reference));
  return best_d;
}

AffineScale search_asymmetric(const float* x, const float* w, int64_t n, int nmax, bool nonpositive_min,
                              bool fast, bool reference, int steps) {
  return search_asymmetric(group_stats(x, w, n, reference), x, w, n, nmax, nonpositive_min, fast, reference, steps);
}

AffineScale search_asymmetric(const GroupStats& s, const float* x, const float* w, int64_t n, int nmax,
                              bool nonpositive_min, bool fast, bool reference, int steps) {
  const float min = (nonpositive_min && s.min > 0) ? 0.0f : s.min;
  const float max = s.max;
  if (max == min) return {0, min};
  AffineScale best{(max - min) / static_cast<float>(nmax), min};
  if (fast) return best;
  const float hi = static_cast<float>(nmax);
  double best_err = error_asymmetric(s, trial_asymmetric(x, w, n, 1.0f / best.d, min, hi, reference), best.d,
                                     best.m);
  // The least-squares fit's error is swx2 - gain / det, so a candidate can only win when
  // gain > (swx2 - best_err) * det: most are turned down without a division.
  auto consider = [&](const TrialSums& t) {
    const double det = s.sw * t.l2 - t.l * t.l;
    if (!(det > 0)) return;
    const double d_num = s.sw * t.lx - s.swx * t.l, m_num = t.l2 * s.swx - t.l * t.lx;
    const double bound = s.swx2 - best_err;
    double d, m;
    if (nonpositive_min && m_num > 0) {
      if (!(t.lx > 0 && t.lx * t.lx > bound * t.l2)) return;
      d = t.lx / t.l2;
      m = 0;
    } else {
      if (!(d_num > 0 && t.lx * d_num + s.swx * m_num > bound * det)) return;
      d = d_num / det;
      m = m_num / det;
    }
    const double err = error_asymmetric(s, t, d, m);
    if (err < best_err && d > 0) {
      best_err = err;
      best = {static_cast<float>(d), static_cast<float>(m)};
    }
  };
  constexpr int kMaxCount = kAsymmetricSteps + 1;
  const int count = std::clamp(steps, 0, kAsymmetricSteps) + 1;
  float iscales[kMaxCount], mins[kMaxCount];
  TrialSums sums[kMaxCount];
  for (int k = 0; k < count; ++k) {
    iscales[k] = (static_cast<float>(nmax) - 1.0f + 0.1f * static_cast<float>(k)) / (max - min);
    mins[k] = min;
  }
  trial_asymmetric_batch(x, w, n, iscales, mins, count, hi, sums, reference);
  for (int k = 0; k < count; ++k) consider(sums[k]);
  for (int r = 0; r < kRefits; ++r) consider(trial_asymmetric(x, w, n, 1.0f / best.d, best.m, hi, reference));
  return best;
}

}  // namespace tk::quant::detail
