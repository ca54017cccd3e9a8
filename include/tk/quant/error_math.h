// The sums of one row of a measurement (measure.h), as the CPU adds them: in order, in
// double. The GPU's measurement (cuda/groups.cu) runs this one source (TK_HD), and each
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

// x against its reconstruction y over one row of n values; w the per-column error weights
// (null: 1); clipping counted over blocks of `block` values along the row (0: not counted).
TK_HD inline RowSums row_sums(const float* x, const float* y, int64_t n, const float* w, int64_t block) {
  RowSums s;
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    const double diff = xi - static_cast<double>(y[i]);
    s.signal += xi * xi;
    s.noise += diff * diff;
    s.weighted += (w ? static_cast<double>(w[i]) : 1.0) * diff * diff;
    const double a = diff < 0 ? -diff : diff;
    s.max_abs = s.max_abs < a ? a : s.max_abs;
  }
  for (int64_t b = 0; block > 0 && b < n; b += block) {
    const int64_t end = n < b + block ? n : b + block;
    float top = 0;
    for (int64_t c = b; c < end; ++c) {
      const float a = y[c] < 0 ? -y[c] : y[c];
      top = top < a ? a : top;
    }
    const float limit = top * 1.001f;
    for (int64_t c = b; c < end; ++c) s.clipped += (x[c] < 0 ? -x[c] : x[c]) > limit ? 1 : 0;
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
