// The error-minimising scale search of one group, as the scalar reference computes it:
// its sums, candidates and decisions. The CPU calls these for the reference path (the
// optimised kernels give the same bits, see quant_internal.h) and the GPU code of the
// integer schemes (cuda/) runs the same source on the device (TK_HD), so that GPU and
// CPU choose the same scales.
//
// Lane order: element i of a chunk of 256 goes to lane i % 8, and each chunk's lanes are
// reduced in one fixed order (reduce8) into a double.
#pragma once

#include <cmath>
#include <cstdint>

#include "tk/core/hd.h"

namespace tk::quant::detail {

// Weighted sums of a trial quantization.
struct TrialSums {
  double lx = 0;  // sum w * x * L
  double l2 = 0;  // sum w * L * L
  double l = 0;   // sum w * L (asymmetric only)
};

// Weighted sums of the group itself.
struct GroupStats {
  double sw = 0, swx = 0, swx2 = 0;
  float max = 0, min = 0;  // largest and smallest value
  float amax_signed = 0;   // the first value of largest magnitude, with its sign
};

// An affine scale: x ~ d * L + m (m = 0 for symmetric codes).
struct AffineScale {
  float d = 0, m = 0;
};

// Symmetric candidates: iscale = -(nmax + 0.1 k) / amax for |k| <= tries, and the same
// mirrored towards nmax - 1. Asymmetric: (nmax - 1 + 0.1 k) / (max - min), 0 <= k <= steps.
constexpr int kSymmetricTries = 9;
constexpr int kAsymmetricSteps = 20;
// The integer schemes (int2..int8, stored as Q4_0 .. Q8_0 in GGUF) try fewer: 2 x 5
// symmetric candidates and 7 asymmetric ones, with the refits, keep all but 0.03-0.15 dB
// of the full search's gain over the absmax scale on Gaussian and Student-t matrices,
// at about 3 times its speed. In llama.cpp's KL divergence on SmolLM2-135M, budgets gave
// files as close or closer at four of four sizes, and int4 for every matrix of a model
// off every grid 2.6% further (docs/BENCHMARKS.md, "The integer search").
constexpr int kIntSymmetricTries = 2;
constexpr int kIntAsymmetricSteps = 6;
// Least-squares refits from the best scale's own codes, after the candidates.
constexpr int kSearchRefits = 2;
constexpr int64_t kLaneChunk = 256;

// A running maximum of magnitudes: std::fmax(m, v) for m never NaN (a NaN v leaves m), as
// one compare and select that vectorises on every x86-64 (std::fmax is a library call
// below AVX-512, and a loop calling it does not vectorise).
TK_HD inline float max_magnitude(float m, float v) {
  const float a = v < 0 ? -v : v;
  return a > m ? a : m;
}

// The fixed reduction order of 8 lanes.
TK_HD inline double reduce8(const float* a) {
  return static_cast<double>(((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])));
}
// What MAXPS / MINPS compute (the second operand when equal or unordered), so that the
// sign of a zero comes out the same in the scalar and vector versions.
TK_HD inline float max_ps(float a, float b) { return a > b ? a : b; }
TK_HD inline float min_ps(float a, float b) { return a < b ? a : b; }
TK_HD inline float clamp_ps(float v, float lo, float hi) { return min_ps(max_ps(v, lo), hi); }
// Round to nearest, ties to even (the default rounding mode on the host).
TK_HD inline float round_even(float v) {
#if defined(__CUDA_ARCH__)
  return rintf(v);
#else
  return std::nearbyint(v);
#endif
}

// The code of one value from a stored scale: clamp(round(x * inv), lo, hi) + offset
// (symmetric), or clamp(round((x - min) * inv), 0, hi) (asymmetric).
TK_HD inline uint8_t code_symmetric(float x, float inv, float lo, float hi, int offset) {
  return static_cast<uint8_t>(static_cast<int>(clamp_ps(round_even(x * inv), lo, hi)) + offset);
}
TK_HD inline uint8_t code_asymmetric(float x, float inv, float min, float hi) {
  return static_cast<uint8_t>(static_cast<int>(clamp_ps(round_even((x - min) * inv), 0.0f, hi)));
}

// Eight `bits`-wide codes (bits <= 8) as `bits` bytes of an LSB-first bit stream: code i
// in bits [i * bits, (i + 1) * bits) of the little-endian stream.
TK_HD inline void pack8(const uint8_t* codes, int bits, uint8_t* out) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(codes[i] & ((1u << bits) - 1)) << (i * bits);
  for (int k = 0; k < bits; ++k) out[k] = static_cast<uint8_t>(v >> (8 * k));
}

// The inverse of pack8: eight `bits`-wide codes from `bits` bytes of the stream.
TK_HD inline void unpack8(const uint8_t* in, int bits, uint8_t* codes) {
  uint64_t v = 0;
  for (int k = 0; k < bits; ++k) v |= static_cast<uint64_t>(in[k]) << (8 * k);
  for (int i = 0; i < 8; ++i) codes[i] = static_cast<uint8_t>((v >> (i * bits)) & ((1u << bits) - 1));
}

// Weighted squared error of codes from the scale (symmetric or asymmetric), from the
// group's sums (swx2, swx, sw) and the codes' (lx, l2, l).
TK_HD inline double error_symmetric(double swx2, double lx, double l2, double d) {
  return swx2 - 2 * d * lx + d * d * l2;
}
TK_HD inline double error_asymmetric(double swx2, double swx, double sw, double lx, double l2, double l, double d,
                                     double m) {
  return swx2 - 2 * d * lx - 2 * m * swx + d * d * l2 + 2 * d * m * l + m * m * sw;
}
TK_HD inline double error_symmetric(const GroupStats& s, const TrialSums& t, double d) {
  return error_symmetric(s.swx2, t.lx, t.l2, d);
}
TK_HD inline double error_asymmetric(const GroupStats& s, const TrialSums& t, double d, double m) {
  return error_asymmetric(s.swx2, s.swx, s.sw, t.lx, t.l2, t.l, d, m);
}

// Symmetric trial: L = clamp(round(iscale * x), lo, hi).
TK_HD inline TrialSums trial_symmetric_ref(const float* x, const float* w, int64_t n, float iscale, float lo,
                                           float hi) {
  TrialSums out;
  for (int64_t c = 0; c < n; c += kLaneChunk) {
    float lx[8] = {}, l2[8] = {};
    const int64_t end = n < c + kLaneChunk ? n : c + kLaneChunk;
    for (int64_t i = c; i < end; ++i) {
      const float l = clamp_ps(round_even(iscale * x[i]), lo, hi);
      const float t = w[i] * l;
      lx[i % 8] += t * x[i];
      l2[i % 8] += t * l;
    }
    out.lx += reduce8(lx);
    out.l2 += reduce8(l2);
  }
  return out;
}

// Asymmetric trial: L = clamp(round(iscale * (x - min)), 0, hi).
TK_HD inline TrialSums trial_asymmetric_ref(const float* x, const float* w, int64_t n, float iscale, float min,
                                            float hi) {
  TrialSums out;
  for (int64_t c = 0; c < n; c += kLaneChunk) {
    float lx[8] = {}, l2[8] = {}, l1[8] = {};
    const int64_t end = n < c + kLaneChunk ? n : c + kLaneChunk;
    for (int64_t i = c; i < end; ++i) {
      const float l = clamp_ps(round_even(iscale * (x[i] - min)), 0.0f, hi);
      const float t = w[i] * l;
      lx[i % 8] += t * x[i];
      l2[i % 8] += t * l;
      l1[i % 8] += t;
    }
    out.lx += reduce8(lx);
    out.l2 += reduce8(l2);
    out.l += reduce8(l1);
  }
  return out;
}

// The group's sums, max and min in the lane order (amax_signed left 0: first_amax).
TK_HD inline GroupStats group_stats_ref(const float* x, const float* w, int64_t n) {
  GroupStats s;
  s.max = x[0];
  s.min = x[0];
  for (int64_t c = 0; c < n; c += kLaneChunk) {
    float sw[8] = {}, swx[8] = {}, swx2[8] = {};
    const int64_t end = n < c + kLaneChunk ? n : c + kLaneChunk;
    for (int64_t i = c; i < end; ++i) {
      const float t = w[i] * x[i];
      sw[i % 8] += w[i];
      swx[i % 8] += t;
      swx2[i % 8] += t * x[i];
      s.max = max_ps(s.max, x[i]);
      s.min = min_ps(s.min, x[i]);
    }
    s.sw += reduce8(sw);
    s.swx += reduce8(swx);
    s.swx2 += reduce8(swx2);
  }
  return s;
}

// The first value of largest magnitude (the rule is "first": scalar in every version).
TK_HD inline float first_amax(const float* x, int64_t n) {
  float best = 0, best_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = x[i] < 0 ? -x[i] : x[i];
    if (a > best_abs) {
      best_abs = a;
      best = x[i];
    }
  }
  return best;
}

// The group's stats as every version reports them: a zero max or min is +0 (min_ps and
// max_ps keep the first of two equal zeros), and amax_signed set.
TK_HD inline GroupStats normalised_stats(GroupStats s, const float* x, int64_t n) {
  if (s.max == 0) s.max = 0.0f;
  if (s.min == 0) s.min = 0.0f;
  s.amax_signed = first_amax(x, n);
  return s;
}

// One group's symmetric search, step by step (candidates, then each one's sums, then
// the refits), so that eight groups can be searched side by side in lanes.
class SymmetricSearch {
 public:
  static constexpr int kMaxCandidates = 2 * (2 * kSymmetricTries + 1);

  // The candidate iscales and their count; 0 when the scale is already final (an
  // all-zero group, or `fast`: the absmax scale).
  TK_HD int start(const GroupStats& s, int nmax, bool fast, int tries, float* iscales) {
    const float amax = s.amax_signed;
    best_d_ = 0;
    best_score_ = -1;
    if (amax == 0) return 0;
    best_d_ = amax / static_cast<float>(-nmax);
    if (fast) return 0;
    // Both orientations: amax towards the extra negative level -nmax (ggml's choice) and
    // towards nmax - 1; with few levels the better one differs from group to group.
    tries = tries < 0 ? 0 : tries > kSymmetricTries ? kSymmetricTries : tries;
    const int side = 2 * tries + 1;
    for (int k = 0; k < side; ++k) {
      const float step = 0.1f * static_cast<float>(k - tries);
      iscales[k] = -(static_cast<float>(nmax) + step) / amax;
      iscales[side + k] = (static_cast<float>(nmax - 1) + step) / amax;
    }
    return 2 * side;
  }

  // Score: the error reduction lx^2 / l2 of the least-squares scale lx / l2.
  TK_HD void consider(const TrialSums& t) {
    if (t.l2 <= 0) return;
    const double score = t.lx * t.lx / t.l2;
    if (score > best_score_) {
      best_score_ = score;
      best_d_ = static_cast<float>(t.lx / t.l2);
    }
  }

  TK_HD float best() const { return best_d_; }

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
  TK_HD bool start(const GroupStats& s, int nmax, bool nonpositive_min, bool fast) {
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
  TK_HD float best_iscale() const { return 1.0f / best_.d; }
  TK_HD void first(const TrialSums& t) { best_err_ = error_asymmetric(*s_, t, best_.d, best_.m); }

  // Candidates iscale = (nmax - 1 + 0.1 k) / (max - min), all at the group's min.
  TK_HD int candidates(int nmax, int steps, float* iscales, float* mins) const {
    const int count = (steps < 0 ? 0 : steps > kAsymmetricSteps ? kAsymmetricSteps : steps) + 1;
    for (int k = 0; k < count; ++k) {
      iscales[k] = (static_cast<float>(nmax) - 1.0f + 0.1f * static_cast<float>(k)) / range_;
      mins[k] = min_;
    }
    return count;
  }

  // The least-squares fit's error is swx2 - gain / det, so a candidate can only win when
  // gain > (swx2 - best_err) * det: most are turned down without a division.
  TK_HD void consider(const TrialSums& t) {
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

  TK_HD AffineScale best() const { return best_; }

 private:
  const GroupStats* s_ = nullptr;
  bool nonpositive_min_ = false;
  float min_ = 0, range_ = 0;
  AffineScale best_;
  double best_err_ = 0;
};

// Room for the sums of N trials, left uninitialised: the batches set every entry they
// fill (zeroing 38 entries per group took a quarter of a search's own time on the CPU).
template <int N> union TrialBuffer {
  TK_HD TrialBuffer() {}
  TrialSums at[N];
};

// The searches, given how to try candidates: `batch(iscales, mins, count, sums)` fills the
// sums of `count` trials (mins null for symmetric ones) and `trial(iscale, min)` gives
// one. The CPU passes its kernels (reference or vector, the same bits), the GPU the
// scalar references above.
template <typename Trial, typename Batch>
TK_HD float symmetric_search(const GroupStats& s, int nmax, bool fast, int tries, Trial&& trial, Batch&& batch) {
  SymmetricSearch search;
  float iscales[SymmetricSearch::kMaxCandidates];
  TrialBuffer<SymmetricSearch::kMaxCandidates> sums;
  const int count = search.start(s, nmax, fast, tries, iscales);
  if (count == 0) return search.best();
  batch(iscales, static_cast<const float*>(nullptr), count, sums.at);
  for (int k = 0; k < count; ++k) search.consider(sums.at[k]);
  for (int r = 0; r < kSearchRefits && search.best() != 0; ++r) search.consider(trial(1.0f / search.best(), 0.0f));
  return search.best();
}

template <typename Trial, typename Batch>
TK_HD AffineScale asymmetric_search(const GroupStats& s, int nmax, bool nonpositive_min, bool fast, int steps,
                                    Trial&& trial, Batch&& batch) {
  AsymmetricSearch search;
  if (!search.start(s, nmax, nonpositive_min, fast)) return search.best();
  search.first(trial(search.best_iscale(), search.best().m));
  float iscales[AsymmetricSearch::kMaxCandidates], mins[AsymmetricSearch::kMaxCandidates];
  TrialBuffer<AsymmetricSearch::kMaxCandidates> sums;
  const int count = search.candidates(nmax, steps, iscales, mins);
  batch(iscales, static_cast<const float*>(mins), count, sums.at);
  for (int k = 0; k < count; ++k) search.consider(sums.at[k]);
  for (int r = 0; r < kSearchRefits; ++r) search.consider(trial(search.best_iscale(), search.best().m));
  return search.best();
}

}  // namespace tk::quant::detail
