// NF4's block scale search and codes, as the reference computes them: the CPU's nf4.cpp
// (scalar and, inlined, AVX2) and the GPU's cuda/groups.cu run this one source (TK_HD).
#pragma once

#include <cstdint>

#include "tk/core/hd.h"
#include "tk/quant/group_search.h"

namespace tk::quant::detail::nf4 {

// Candidate scales absmax * (1 - k/32), k = 0..7.
constexpr int kCandidates = 8;

// The 16 levels (bitsandbytes' table) and the midpoints between neighbours.
struct Levels {
  float level[16];
  float mid[15];
};
// The table; the midpoints are (level[k] + level[k + 1]) / 2, rounded once.
TK_HD inline Levels levels() {
  Levels t = {{-1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,
               -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f,
               0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,
               0.7229568362236023f, 1.0f},
              {}};
  for (int k = 0; k < 15; ++k) t.mid[k] = (t.level[k] + t.level[k + 1]) * 0.5f;
  return t;
}

// The nearest level: the number of midpoints v exceeds (ties to the lower level).
TK_HD inline uint8_t nearest(const Levels& t, float v) {
  int c = 0;
  for (int k = 0; k < 15; ++k) c += v > t.mid[k] ? 1 : 0;
  return static_cast<uint8_t>(c);
}

TK_HD inline void encode(const Levels& t, const float* x, int64_t n, float scale, uint8_t* codes) {
  const float inv = scale == 0 ? 0.0f : 1.0f / scale;
  for (int64_t i = 0; i < n; ++i) codes[i] = nearest(t, x[i] * inv);
}

// Weighted squared error of a block (n a multiple of 8) coded at `scale`.
TK_HD inline double error(const Levels& t, const float* x, const float* w, int64_t n, float scale) {
  uint8_t codes[8];
  double err = 0;
  for (int64_t i = 0; i < n; i += 8) {
    encode(t, x + i, 8, scale, codes);
    for (int j = 0; j < 8; ++j) {
      const double d = static_cast<double>(x[i + j]) - static_cast<double>(t.level[codes[j]] * scale);
      err += static_cast<double>(w[i + j]) * d * d;
    }
  }
  return err;
}

// The block's scale: its absmax with `fast`, else the candidate of least error.
TK_HD inline float fit_scale(const Levels& t, const float* x, const float* w, int64_t n, bool fast) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = max_magnitude(amax, x[i]);
  if (fast || amax == 0) return amax;
  float best = amax;
  double best_err = error(t, x, w, n, amax);
  for (int k = 1; k < kCandidates; ++k) {
    const float s = amax * (1.0f - static_cast<float>(k) / 32.0f);
    const double err = error(t, x, w, n, s);
    if (err < best_err) {
      best_err = err;
      best = s;
    }
  }
  return best;
}

}  // namespace tk::quant::detail::nf4
