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

// One group's symmetric search, step by step (candidates, then each one's sums, then
// the refits), so that eight groups can be searched side by side in lanes.
class SymmetricSearch {
 public:
  static constexpr int kMaxCandidates = 2 * (2 * kSymmetricTries + 1);

  // The candidate iscales and their count; 0 when the scale is already final (an
  // all-zero group, or `fast`: the absmax scale).
  int start(const GroupStats& s, int nmax, bool fast, int tries, float* iscales) {
    const float amax = s.amax_signed;
    best_d_ = 0;
    best_score_ = -1;
    if (amax == 0) return 0;
    best_d_ = amax / static_cast<float>(-nmax);
    if (fast) return 0;
    // Both orientations: amax towards the extra negative level -nmax (ggml's choice) and
    // towards nmax - 1; with few levels the better one differs from group to group.
    tries = std::clamp(tries, 0, kSymmetricTries);
    const int side = 2 * tries + 1;
    for (int k = 0; k < side; ++k) {
      const float step = 0.1f * static_cast<float>(k - tries);
      iscales[k] = -(static_cast<float>(nmax) + step) / amax;
      iscales[side + k] = (static_cast<float>(nmax - 1) + step) / amax;
    }
    return 2 * side;
  }

  // Score: the error reduction lx^2 / l2 of the least-squares scale lx / l2.
  void consider(const TrialSums& t) {
    if (t.l2 <= 0) return;
    const double score = t.lx * t.lx / t.l2;
    if (score > best_score_) {
      best_score_ = score;
      best_d_ = static_cast<float>(t.lx / t.l2);
    }
  }

  float best() const { return best_d_; }

 private:
  float best_d_ = 0;
  double best_score_ = -1;
};

// One group's asymmetric search, step by step: a first trial at the min-max scale, the
// candidates, then the refits.
class AsymmetricSearch {
 public:
  static constexpr int kMaxCandidates = kAsymmetricSteps + 1;

  // False when the scale is already final (a flat group, or `fast`).
  bool start(const GroupStats& s, int nmax, bool nonpositive_min, bool fast) {
    s_ = &s;
    nonpositive_min_ = nonpositive_min;
    min_ = (nonpositive_min && s.min > 0) ? 0.0f : s.min;
    range_ = s.max - min_;
    if (s.max == min_) {
      best_ = {0, min_};
      return false;
    }
    best_ = {range_ / static_cast<float>(nmax), min_};
    return !fast;
  }
  // The iscale and min of the next trial of the best scale (the first trial and refits).
  float best_iscale() const { return 1.0f / best_.d; }
  void first(const TrialSums& t) { best_err_ = error_asymmetric(*s_, t, best_.d, best_.m); }

  // Candidates iscale = (nmax - 1 + 0.1 k) / (max - min), all at the group's min.
  int candidates(int nmax, int steps, float* iscales, float* mins) const {
    const int count = std::clamp(steps, 0, kAsymmetricSteps) + 1;
    for (int k = 0; k < count; ++k) {
      iscales[k] = (static_cast<float>(nmax) - 1.0f + 0.1f * static_cast<float>(k)) / range_;
      mins[k] = min_;
    }
    return count;
  }

  // The least-squares fit's error is swx2 - gain / det, so a candidate can only win when
  // gain > (swx2 - best_err) * det: most are turned down without a division.
  void consider(const TrialSums& t) {
    const GroupStats& s = *s_;
    const double det = s.sw * t.l2 - t.l * t.l;
    if (!(det > 0)) return;
    const double d_num = s.sw * t.lx - s.swx * t.l, m_num = t.l2 * s.swx - t.l * t.lx;
    const double bound = s.swx2 - best_err_;
    double d, m;
    if (nonpositive_min_ && m_num > 0) {
      if (!(t.lx > 0 && t.lx * t.lx > bound * t.l2)) return;
      d = t.lx / t.l2;
      m = 0;
    } else {
      if (!(d_num > 0 && t.lx * d_num + s.swx * m_num > bound * det)) return;
      d = d_num / det;
      m = m_num / det;
    }
    const double err = error_asymmetric(s, t, d, m);
    if (err < best_err_ && d > 0) {
      best_err_ = err;
      best_ = {static_cast<float>(d), static_cast<float>(m)};
    }
  }

  AffineScale best() const { return best_; }

 private:
  const GroupStats* s_ = nullptr;
  bool nonpositive_min_ = false;
  float min_ = 0, range_ = 0;
  AffineScale best_;
  double best_err_ = 0;
};

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
  SymmetricSearch search;
  float iscales[SymmetricSearch::kMaxCandidates];
  TrialSums sums[SymmetricSearch::kMaxCandidates];
  const int count = search.start(s, nmax, fast, tries, iscales);
  if (count == 0) return search.best();
  const float lo = static_cast<float>(-nmax), hi = static_cast<float>(nmax - 1);
  trial_symmetric_batch(x, w, n, iscales, count, lo, hi, sums, reference);
  for (int k = 0; k < count; ++k) search.consider(sums[k]);
  for (int r = 0; r < kRefits && search.best() != 0; ++r) {
    search.consider(trial_symmetric(x, w, n, 1.0f / search.best(), lo, hi, reference));
  }
  return search.best();
}

void search_symmetric_lanes(const GroupStats* s, const float* xt, const float* wt, int64_t n, int nmax, bool fast,
                            bool reference, int tries, float* d) {
  SymmetricSearch search[kLanes];
  float iscales[kLanes][SymmetricSearch::kMaxCandidates];
  int count[kLanes];
  int most = 0;
  for (int g = 0; g < kLanes; ++g) {
    count[g] = search[g].start(s[g], nmax, fast, tries, iscales[g]);
    most = std::max(most, count[g]);
  }
  const float lo = static_cast<float>(-nmax), hi = static_cast<float>(nmax - 1);
  float v[kLanes];
  TrialSums sums[kLanes];
  // Candidate k of every group at once (a group with fewer tries 0, its sums unused).
  for (int k = 0; k < most; ++k) {
    for (int g = 0; g < kLanes; ++g) v[g] = k < count[g] ? iscales[g][k] : 0.0f;
    trial_symmetric_lanes(xt, wt, n, v, lo, hi, sums, reference);
    for (int g = 0; g < kLanes; ++g) {
      if (k < count[g]) search[g].consider(sums[g]);
    }
  }
  for (int r = 0; r < kRefits && most > 0; ++r) {
    bool active[kLanes], any = false;
    for (int g = 0; g < kLanes; ++g) {
      active[g] = count[g] > 0 && search[g].best() != 0;
      v[g] = active[g] ? 1.0f / search[g].best() : 0.0f;
      any = any || active[g];
    }
    if (!any) break;
    trial_symmetric_lanes(xt, wt, n, v, lo, hi, sums, reference);
    for (int g = 0; g < kLanes; ++g) {
      if (active[g]) search[g].consider(sums[g]);
    }
  }
  for (int g = 0; g < kLanes; ++g) d[g] = search[g].best();
}

AffineScale search_asymmetric(const float* x, const float* w, int64_t n, int nmax, bool nonpositive_min,
                              bool fast, bool reference, int steps) {
  return search_asymmetric(group_stats(x, w, n, reference), x, w, n, nmax, nonpositive_min, fast, reference, steps);
}

AffineScale search_asymmetric(const GroupStats& s, const float* x, const float* w, int64_t n, int nmax,
                              bool nonpositive_min, bool fast, bool reference, int steps) {
  AsymmetricSearch search;
  if (!search.start(s, nmax, nonpositive_min, fast)) return search.best();
  const float hi = static_cast<float>(nmax);
  search.first(trial_asymmetric(x, w, n, search.best_iscale(), search.best().m, hi, reference));
  float iscales[AsymmetricSearch::kMaxCandidates], mins[AsymmetricSearch::kMaxCandidates];
  TrialSums sums[AsymmetricSearch::kMaxCandidates];
  const int count = search.candidates(nmax, steps, iscales, mins);
  trial_asymmetric_batch(x, w, n, iscales, mins, count, hi, sums, reference);
  for (int k = 0; k < count; ++k) search.consider(sums[k]);
  for (int r = 0; r < kRefits; ++r) {
    search.consider(trial_asymmetric(x, w, n, search.best_iscale(), search.best().m, hi, reference));
  }
  return search.best();
}

void search_asymmetric_lanes(const GroupStats* s, const float* xt, const float* wt, int64_t n, int nmax,
                             bool nonpositive_min, bool fast, bool reference, int steps, AffineScale* out) {
  AsymmetricSearch search[kLanes];
  bool active[kLanes], any = false;
  for (int g = 0; g < kLanes; ++g) {
    active[g] = search[g].start(s[g], nmax, nonpositive_min, fast);
    any = any || active[g];
  }
  if (any) {
    const float hi = static_cast<float>(nmax);
    float v[kLanes], m[kLanes];
    TrialSums sums[kLanes];
    // Inactive groups run along with iscale 0; their sums are unused.
    auto trial_best = [&] {
      for (int g = 0; g < kLanes; ++g) {
        v[g] = active[g] ? search[g].best_iscale() : 0.0f;
        m[g] = search[g].best().m;
      }
      trial_asymmetric_lanes(xt, wt, n, v, m, hi, sums, reference);
    };
    trial_best();
    for (int g = 0; g < kLanes; ++g) {
      if (active[g]) search[g].first(sums[g]);
    }
    float iscales[kLanes][AsymmetricSearch::kMaxCandidates], mins[kLanes][AsymmetricSearch::kMaxCandidates];
    int count = 0;
    for (int g = 0; g < kLanes; ++g) {
      if (active[g]) count = search[g].candidates(nmax, steps, iscales[g], mins[g]);
    }
    for (int k = 0; k < count; ++k) {
      for (int g = 0; g < kLanes; ++g) {
        v[g] = active[g] ? iscales[g][k] : 0.0f;
        m[g] = active[g] ? mins[g][k] : 0.0f;
      }
      trial_asymmetric_lanes(xt, wt, n, v, m, hi, sums, reference);
      for (int g = 0; g < kLanes; ++g) {
        if (active[g]) search[g].consider(sums[g]);
      }
    }
    for (int r = 0; r < kRefits; ++r) {
      trial_best();
      for (int g = 0; g < kLanes; ++g) {
        if (active[g]) search[g].consider(sums[g]);
      }
    }
  }
  for (int g = 0; g < kLanes; ++g) out[g] = search[g].best();
}

}  // namespace tk::quant::detail
