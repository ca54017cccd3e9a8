// One K-quant super-block as the reference computes it (kquant.cpp describes the
// scheme): each sub-block's stats and searched scale, the candidate super scales, each
// sub-block's best integers at each, the least-squares refit, and the codes. Sub-blocks
// are taken one at a time with the one-group kernels of group_search.h, which the CPU's
// lanes kernels equal bit for bit (tests: LanesEqualOneGroupKernels). The CPU's
// reference path and the GPU (cuda/kquant.cu) run this one source (TK_HD); the CPU's
// optimised path searches eight sub-blocks side by side and gives the same bytes (tests:
// OptimisedEqualsReference).
#pragma once

#include <cstdint>

#include "tk/core/float_format.h"
#include "tk/core/hd.h"
#include "tk/quant/group_search.h"

namespace tk::quant::detail::kquant {

constexpr int64_t kSuper = 256;
constexpr int kMaxSubs = 16;
constexpr int kMaxFactors = 21;

struct Format {
  int bits;
  int sub;
  int scale_bits;
  bool asymmetric;
  int factor_steps;  // super-block scale factors tried: 1 + 0.02 j, |j| <= factor_steps
  int reach;         // sub-block integers tried: the rounded one +- reach
  int search_tries;  // sub-block scale candidates (search_symmetric's tries, search_asymmetric's steps)

  TK_HD int subs() const { return static_cast<int>(kSuper / sub); }
  TK_HD int nmax() const { return 1 << (bits - 1); }
  TK_HD int top() const { return (1 << bits) - 1; }
  TK_HD int qlo_abs() const { return 1 << (scale_bits - 1); }
  TK_HD int qtop() const { return (1 << scale_bits) - 1; }
  // The range of the sub-block integers q.
  TK_HD int qlo() const { return asymmetric ? 0 : -qlo_abs(); }
  TK_HD int qhi() const { return asymmetric ? qtop() : qlo_abs() - 1; }
  // Candidate super scales tried, and integers tried per scale (and per min).
  TK_HD int candidates(bool fast) const { return fast ? 1 : 2 * factor_steps + 1; }
  TK_HD int width(bool fast) const { return fast ? 1 : 2 * reach + 1; }
};

// One super-block's choice: sub-block scales as stored integers and the f16 scales.
// Choice{} is all zero. (No default member initialisers: GCC 12 fails on assigning
// Choice{} with them inside the AVX2 twin.)
struct Choice {
  float d, dmin;
  int q[kMaxSubs], qm[kMaxSubs];
  TrialSums sums[kMaxSubs];  // of each sub-block's codes
  double err;
};

// The larger of a and b, the first of two equal values (+0 and -0), NaN left out: the
// bytes std::fmax gave the CPU here (which zero it returns is the compiler's choice:
// GCC treats fmax as commutative). One definition for both sides, so that the sign of a
// stored zero dmin agrees.
TK_HD inline float fmax_hd(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  return a >= b ? a : b;
}

// The value of an f16 code (finite codes; Inf and NaN as f32 Inf and NaN).
TK_HD inline float f16_value(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m 2^-24, exact
    return sign ? -v : v;
  }
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

// v rounded to f16 (saturating) and back: the stored value of a scale.
TK_HD inline float round_f16(float v) { return f16_value(float_format_encode(tk::detail::f16_format(), v, true)); }

// The candidate super-block scales (as stored: f16) for the largest sub-block scale.
TK_HD inline int super_scales(const Format& f, float largest, bool fast, float* out) {
  const int count = f.candidates(fast);
  const float limit = static_cast<float>(f.asymmetric ? f.qtop() : -f.qlo_abs());
  for (int k = 0; k < count; ++k) {
    const int j = (k + 1) / 2 * (k % 2 == 1 ? -1 : 1);  // 0, -1, 1, -2, 2, ...
    out[k] = round_f16(largest / limit * (1.0f + 0.02f * static_cast<float>(j)));
  }
  return count;
}

// Sub-block scale integers tried around the rounded one: [*first, *last].
TK_HD inline void neighbours(const Format& f, float value, float d, int lo, int hi, bool fast, int* first,
                             int* last) {
  int r = 0;
  if (d != 0) {
    r = static_cast<int>(round_even(value / d));
    r = r < lo ? lo : (r > hi ? hi : r);
  }
  const int reach = fast ? 0 : f.reach;
  *first = r - reach > lo ? r - reach : lo;
  *last = r + reach < hi ? r + reach : hi;
}

// The largest sub-block scale (asymmetric: and min) of a super-block's searched scales.
TK_HD inline void largest_scales(const Format& f, const AffineScale* best, float* largest, float* largest_min) {
  *largest = 0;
  *largest_min = 0;
  for (int i = 0; i < f.subs(); ++i) {
    if (f.asymmetric) {
      *largest = fmax_hd(*largest, best[i].d);
      *largest_min = fmax_hd(*largest_min, -best[i].m);
    } else if ((best[i].d < 0 ? -best[i].d : best[i].d) > (*largest < 0 ? -*largest : *largest)) {
      *largest = best[i].d;
    }
  }
}

// A sub-block's codes' sums at scale `scale` (iscale its inverse, 0 for all-zero codes)
// and min, and their error.
TK_HD inline TrialSums trial(const Format& f, const float* x, const float* w, float iscale, float min) {
  if (f.asymmetric) return trial_asymmetric_ref(x, w, f.sub, iscale, min, static_cast<float>(f.top()));
  return trial_symmetric_ref(x, w, f.sub, iscale, static_cast<float>(-f.nmax()), static_cast<float>(f.nmax() - 1));
}
TK_HD inline double trial_error(const Format& f, const GroupStats& s, const TrialSums& t, float scale, float min) {
  return f.asymmetric ? error_asymmetric(s.swx2, s.swx, s.sw, t.lx, t.l2, t.l, scale, min)
                      : error_symmetric(s.swx2, t.lx, t.l2, scale);
}

// A sub-block's scale d q, its inverse (0 for a zero scale: all-zero codes) and its min
// -(dmin qm).
struct SubScale {
  float scale, iscale, min;
};
TK_HD inline SubScale sub_scale(float d, int q, float dmin, int qm) {
  const float scale = d * static_cast<float>(q);
  return {scale, scale == 0 ? 0.0f : 1.0f / scale, -(dmin * static_cast<float>(qm))};
}

// The least-squares d (and dmin) with every code and integer of c fixed, rounded to f16,
// into r (c's integers); false where there is no such fit (or its dmin is negative).
TK_HD inline bool refit_scales(const Format& f, const GroupStats* st, const Choice& c, Choice& r) {
  double a = 0, bq = 0, cc = 0, bx = 0, cx = 0;
  for (int i = 0; i < f.subs(); ++i) {
    const double q = c.q[i], qm = c.qm[i];
    a += q * q * c.sums[i].l2;
    bx += q * c.sums[i].lx;
    bq += q * qm * c.sums[i].l;
    cc += qm * qm * st[i].sw;
    cx += qm * st[i].swx;
  }
  r = c;
  if (f.asymmetric) {
    const double det = a * cc - bq * bq;
    if (!(det > 0)) return false;
    r.d = round_f16(static_cast<float>((bx * cc - bq * cx) / det));
    r.dmin = round_f16(static_cast<float>((bq * bx - a * cx) / det));
    return !(r.dmin < 0);
  }
  if (!(a > 0)) return false;
  r.d = round_f16(static_cast<float>(bx / a));
  return true;
}

// Refit d (and dmin) by least squares with every code and integer fixed; keep the
// rounded refit when, codes recomputed, its error is lower.
TK_HD inline Choice refit(const Format& f, const float* x, const float* w, const GroupStats* st, const Choice& c) {
  Choice r;
  if (!refit_scales(f, st, c, r)) return c;
  r.err = 0;
  for (int i = 0; i < f.subs(); ++i) {
    const SubScale s = sub_scale(r.d, r.q[i], r.dmin, r.qm[i]);
    r.sums[i] = trial(f, x + i * f.sub, w + i * f.sub, s.iscale, s.min);
    r.err += trial_error(f, st[i], r.sums[i], s.scale, s.min);
  }
  return r.err < c.err ? r : c;
}

// The super-block of 256 values x (error weights w): its choice. `st` receives the
// sub-blocks' stats; `c` is room for one candidate.
TK_HD inline Choice choose(const Format& f, const float* x, const float* w, bool fast, GroupStats* st, Choice& c) {
  AffineScale best[kMaxSubs];
  for (int i = 0; i < f.subs(); ++i) {
    const float* xi = x + i * f.sub;
    const float* wi = w + i * f.sub;
    st[i] = normalised_stats(group_stats_ref(xi, wi, f.sub), xi, f.sub);
    const auto one = [&](float iscale, float min) { return trial(f, xi, wi, iscale, min); };
    // The symmetric search passes no mins.
    const auto batch = [&](const float* iscales, const float* mins, int count, TrialSums* sums) {
      for (int k = 0; k < count; ++k) sums[k] = trial(f, xi, wi, iscales[k], mins ? mins[k] : 0.0f);
    };
    if (f.asymmetric) {
      best[i] = asymmetric_search(st[i], f.top(), true, fast, f.search_tries, one, batch);
    } else {
      best[i].d = symmetric_search(st[i], f.nmax(), fast, f.search_tries, one, batch);
    }
  }
  float largest, largest_min;
  largest_scales(f, best, &largest, &largest_min);
  if (largest == 0 && largest_min == 0) return Choice{};
  float ds[kMaxFactors];
  const int n_super = super_scales(f, largest, fast, ds);
  const float dmin = f.asymmetric ? round_f16(largest_min / static_cast<float>(f.qtop())) : 0.0f;
  const int width = f.width(fast);
  Choice pick = Choice{};
  for (int k = 0; k < n_super; ++k) {
    c = Choice{};
    c.d = ds[k];
    c.dmin = dmin;
    for (int i = 0; i < f.subs(); ++i) {
      int q0, q1, m0 = 0, m1 = 0;
      neighbours(f, best[i].d, ds[k], f.qlo(), f.qhi(), fast, &q0, &q1);
      if (f.asymmetric) neighbours(f, -best[i].m, dmin, 0, f.qhi(), fast, &m0, &m1);
      // Trials (a, bm), q then qm; the first of equal errors is kept.
      double best_err = -1;
      for (int a = 0; a < width; ++a) {
        for (int bm = 0; bm < (f.asymmetric ? width : 1); ++bm) {
          if (q0 + a > q1 || m0 + bm > m1) continue;
          const SubScale s = sub_scale(ds[k], q0 + a, dmin, m0 + bm);
          const TrialSums t = trial(f, x + i * f.sub, w + i * f.sub, s.iscale, s.min);
          const double e = trial_error(f, st[i], t, s.scale, s.min);
          if (best_err < 0 || e < best_err) {
            best_err = e;
            c.sums[i] = t;
            c.q[i] = q0 + a;
            c.qm[i] = m0 + bm;
          }
        }
      }
      c.err += best_err;
    }
    if (k == 0 || c.err < pick.err) pick = c;
  }
  return fast ? pick : refit(f, x, w, st, pick);
}

// The codes of the super-block under its choice (unpacked, one per value).
TK_HD inline void encode(const Format& f, const float* x, const Choice& c, uint8_t* codes) {
  for (int i = 0; i < f.subs(); ++i) {
    const SubScale s = sub_scale(c.d, c.q[i], c.dmin, c.qm[i]);
    for (int j = 0; j < f.sub; ++j) {
      const float v = x[i * f.sub + j];
      codes[i * f.sub + j] = f.asymmetric
                                 ? code_asymmetric(v, s.iscale, s.min, static_cast<float>(f.top()))
                                 : code_symmetric(v, s.iscale, static_cast<float>(-f.nmax()),
                                                  static_cast<float>(f.nmax() - 1), f.nmax());
    }
  }
}

}  // namespace tk::quant::detail::kquant
