// The sums of one row of a measurement (measure.h), as the CPU adds them: in double, in
// eight lanes added in one fixed order (the vectoriser's shape). The GPU's measurement (cuda/groups.cu) runs this one source (TK_HD), and each
// side adds the rows' sums in row order (error_stats), so both report the same errors
// and the budget chooses alike.
#pragma once

#include <cstdint>

#include "tk/core/hd.h"

namespace tk::quant::detail {

struct RowSums {
  double signal = 0;    // sum x^2
  double noise = 0;     // sum (x - y)^2
  double weighted = 0;  // sum w (x - y)^2
  double max_abs = 0;   // max |x - y|
  uint64_t clipped = 0; // values whose magnitude exceeds their block's largest reconstruction by > 0.1%
};

// The lanes of a row's sums: value i of a row adds to lane i % 8, and the lanes are
// added as reduce8 adds them (add_lanes8), so that every path (scalar, vectorised, the
// GPU) gives the same bits.
struct RowLanes {
  double sig[8] = {}, noi[8] = {}, wei[8] = {}, top[8] = {};
};

TK_HD_INLINE double add_lanes8(const double* a) {
  return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

template <bool Weighted>
TK_HD_INLINE void add_row_lane(RowLanes& l, int k, float x, float y, float w) {
  const double xi = x;
  const double diff = xi - static_cast<double>(y);
  l.sig[k] += xi * xi;
  l.noi[k] += diff * diff;
  if (Weighted) l.wei[k] += static_cast<double>(w) * diff * diff;
  const double a = diff < 0 ? -diff : diff;
  l.top[k] = l.top[k] < a ? a : l.top[k];
}

template <bool Weighted>
TK_HD_INLINE void add_row(RowLanes& l, const float* x, const float* y, int64_t n, const float* w) {
  const int64_t whole = n - n % 8;
  for (int64_t i = 0; i < whole; i += 8)
    for (int k = 0; k < 8; ++k) add_row_lane<Weighted>(l, k, x[i + k], y[i + k], Weighted ? w[i + k] : 1.0f);
  for (int64_t i = whole; i < n; ++i)
    add_row_lane<Weighted>(l, static_cast<int>(i - whole), x[i], y[i], Weighted ? w[i] : 1.0f);
}

// Values of x (n of them) whose magnitude exceeds the largest of y's by more than 0.1%.
// The largest is taken in eight lanes: a maximum is the same in any order.
TK_HD_INLINE uint64_t clipped_in_block(const float* x, const float* y, int64_t n) {
  float peak[8] = {};
  const int64_t whole = n - n % 8;
  for (int64_t c = 0; c < whole; c += 8)
    for (int k = 0; k < 8; ++k) {
      const float a = y[c + k] < 0 ? -y[c + k] : y[c + k];
      peak[k] = peak[k] < a ? a : peak[k];
    }
  for (int64_t c = whole; c < n; ++c) {
    const float a = y[c] < 0 ? -y[c] : y[c];
    peak[0] = peak[0] < a ? a : peak[0];
  }
  float top = 0;
  for (int k = 0; k < 8; ++k) top = top < peak[k] ? peak[k] : top;
  const float limit = top * 1.001f;
  uint32_t count = 0;
  for (int64_t c = 0; c < n; ++c) count += (x[c] < 0 ? -x[c] : x[c]) > limit ? 1u : 0u;
  return count;
}

// x against its reconstruction y over one row of n values; w the per-column error weights
// (null: 1); clipping counted over blocks of `block` values along the row (0: not counted).
TK_HD_INLINE RowSums row_sums(const float* x, const float* y, int64_t n, const float* w, int64_t block) {
  RowSums s;
  RowLanes l;
  if (w) {
    add_row<true>(l, x, y, n, w);
  } else {
    add_row<false>(l, x, y, n, w);
  }
  s.signal = add_lanes8(l.sig);
  s.noise = add_lanes8(l.noi);
  s.weighted = w ? add_lanes8(l.wei) : s.noise;  // 1 * diff * diff is diff * diff
  for (int k = 0; k < 8; ++k) s.max_abs = s.max_abs < l.top[k] ? l.top[k] : s.max_abs;
  for (int64_t b = 0; block > 0 && b < n; b += block) {
    const int64_t end = n < b + block ? n : b + block;
    s.clipped += clipped_in_block(x + b, y + b, end - b);
  }
  return s;
}

// A measurement in place of decoded values (Scheme::measure_on): each row's sums against
// x, rows x cols on the host, with `weights` per column (or null) and clipping over blocks
// of `block` values (0: not counted), into rows[].
struct Measure {
  const float* x;
  const float* weights;
  int64_t block;
  RowSums* rows;
};

}  // namespace tk::quant::detail
