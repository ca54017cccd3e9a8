// IQ4_NL's block scale search, as the reference computes it: the CPU's iq4nl.cpp and the
// GPU's cuda/groups.cu run this one source (TK_HD). Codes are nf4_math.h's nearest
// level (ties to the lower), with iq4nl's levels.
#pragma once

#include <cstdint>

#include "tk/core/hd.h"
#include "tk/quant/nf4_math.h"

namespace tk::quant::detail::iq4nl {

constexpr int64_t kBlock = 32;
constexpr int kTrials = 7;  // on each side of -max / 127

// ggml's kvalues_iq4nl and the midpoints between neighbours.
TK_HD inline nf4::Levels levels() {
  nf4::Levels t = {{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}, {}};
  for (int k = 0; k < 15; ++k) t.mid[k] = (t.level[k] + t.level[k + 1]) * 0.5f;
  return t;
}

// The block's scale (before its f16 rounding): for each trial scale around -max / 127,
// the codes, then the least-squares scale on them; the trial of largest score wins.
// `fast`: the first trial alone.
TK_HD inline float fit_scale(const nf4::Levels& t, const float* x, const float* w, bool fast) {
  float max = 0;
  for (int64_t i = 0; i < kBlock; ++i) {
    if ((x[i] < 0 ? -x[i] : x[i]) > (max < 0 ? -max : max)) max = x[i];
  }
  if (max == 0) return 0;
  double best_score = -1;
  float best = 0;
  uint8_t codes[kBlock];
  for (int trial = 0; trial <= (fast ? 0 : 2 * kTrials); ++trial) {
    const int step = trial == 0 ? 0 : (trial % 2 ? (trial + 1) / 2 : -trial / 2);  // 0, 1, -1, 2, -2, ...
    const float d = -max / (127.0f - 0.1f * static_cast<float>(step));
    nf4::encode(t, x, kBlock, d, codes);
    // Least squares on these codes: d = sum w x l / sum w l^2 leaves the error
    // sum w x^2 - (sum w x l)^2 / sum w l^2; the largest score is the least error.
    double sxl = 0, sll = 0;
    for (int64_t i = 0; i < kBlock; ++i) {
      const double level = t.level[codes[i]];
      sxl += static_cast<double>(w[i]) * x[i] * level;
      sll += static_cast<double>(w[i]) * level * level;
    }
    const double score = sll > 0 ? sxl * sxl / sll : 0;
    if (score > best_score) {
      best_score = score;
      best = sll > 0 ? static_cast<float>(sxl / sll) : d;
    }
  }
  return best;
}

}  // namespace tk::quant::detail::iq4nl
