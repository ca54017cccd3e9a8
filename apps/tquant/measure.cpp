#include "measure.h"

#include <charconv>
#include <cmath>

#include "tk/core/error.h"
#include "tk/quant/view.h"

namespace tk::tquant {

double clipped_share(const float* x, const float* y, int64_t rows, int64_t cols, int64_t block) {
  if (rows * cols == 0) return 0;
  if (block <= 0 || block > cols) block = cols;
  uint64_t clipped = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols; b += block) {
      int64_t end = std::min(cols, b + block);
      float top = 0;
      for (int64_t c = b; c < end; ++c) top = std::max(top, std::fabs(y[r * cols + c]));
      float limit = top * 1.001f;
      for (int64_t c = b; c < end; ++c) clipped += std::fabs(x[r * cols + c]) > limit;
    }
  }
  return static_cast<double>(clipped) / static_cast<double>(rows * cols);
}

Measured quantize_measure(const quant::Scheme& scheme, const std::vector<float>& x, const Shape& shape,
                          const quant::QuantOptions& options, bool keep_parts) {
  Measured m;
  const int64_t view = quant::choose_view_cols(scheme, shape, options);
  m.q = quant::quantize_view(scheme, x.data(), shape, view, options);
  std::vector<float> y(x.size());
  quant::dequantize_view(scheme, m.q, y.data());
  const int64_t cols = shape.empty() ? 1 : shape.back();
  const int64_t rows = view == 0 ? 0 : static_cast<int64_t>(x.size()) / view;
  m.stats = quant::measure_error(x.data(), y.data(), static_cast<int64_t>(x.size()), cols, options.importance);
  int64_t block = 0;
  if (auto it = m.q.params.find("group_size"); it != m.q.params.end()) {
    std::from_chars(it->second.data(), it->second.data() + it->second.size(), block);
  }
  m.stats.clipped_share = clipped_share(x.data(), y.data(), rows, view, block);
  for (float v : x) m.signal += static_cast<double>(v) * v;
  m.bytes = m.q.stored_bytes();
  m.bpw = x.empty() ? 0 : static_cast<double>(m.bytes) * 8 / static_cast<double>(x.size());
  for (const auto& [suffix, part] : m.q.parts) m.part_infos[suffix] = {part.dtype(), part.shape()};
  if (!keep_parts) m.q.parts.clear();
  return m;
}

}  // namespace tk::tquant
