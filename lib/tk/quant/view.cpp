#include "tk/quant/view.h"

#include <numeric>
#include <string>
#include <vector>

#include "tk/core/error.h"
#include "tk/quant/quant_internal.h"

namespace tk::quant {

namespace {

constexpr char kViewParam[] = "view_cols";

int64_t last_dim(const Shape& shape) { return shape.empty() ? 1 : shape.back(); }

}  // namespace

uint64_t padded_values(const Scheme& scheme, int64_t rows, int64_t cols, const QuantOptions& options) {
  const int64_t block = std::max<int64_t>(1, scheme.row_block(cols, options));
  return static_cast<uint64_t>(rows) * static_cast<uint64_t>(detail::round_up(cols, block));
}

int64_t choose_view_cols(const Scheme& scheme, const Shape& shape, const QuantOptions& options) {
  const int64_t cols = last_dim(shape);
  const auto numel = static_cast<int64_t>(shape_numel(shape));
  if (numel == 0 || cols == 0) return cols;
  const uint64_t own = padded_values(scheme, numel / cols, cols, options);
  if ((own - static_cast<uint64_t>(numel)) * 64 <= static_cast<uint64_t>(numel)) return cols;

  std::vector<int64_t> candidates;
  int64_t trailing = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    trailing *= shape[d];
    candidates.push_back(trailing);
  }
  const int64_t block = std::max<int64_t>(1, scheme.row_block(cols, options));
  const int64_t both = std::lcm(cols, block);
  if (numel % both == 0) candidates.push_back(both);
  candidates.push_back(numel);

  // The fewest stored bits: padding, and per-row parts (scales of a row) too.
  auto bits = [&](int64_t c) { return scheme.bits_per_weight(numel / c, c, options) * static_cast<double>(numel); };
  int64_t best = cols;
  double best_bits = bits(cols);
  for (int64_t c : candidates) {
    const double b = bits(c);
    if (b < best_bits || (b == best_bits && c < best)) best = c, best_bits = b;
  }
  return best;
}

std::vector<float> repeat_columns(const float* values, int64_t cols, int64_t view_cols) {
  std::vector<float> out(static_cast<size_t>(view_cols));
  for (int64_t c = 0; c < view_cols; ++c) out[c] = values[c % cols];
  return out;
}

Quantized quantize_view(const Scheme& scheme, const float* x, const Shape& shape, int64_t view_cols,
                        const QuantOptions& options) {
  const int64_t cols = last_dim(shape);
  if (view_cols == cols) return scheme.quantize(x, shape, options);
  const auto numel = static_cast<int64_t>(shape_numel(shape));
  if (view_cols <= 0 || view_cols % cols != 0 || numel % view_cols != 0) {
    throw internal_error("quantize_view: " + std::to_string(view_cols) + " columns do not fit " +
                         shape_to_string(shape));
  }
  QuantOptions o = options;
  std::vector<float> importance;
  if (options.importance) {
    importance = repeat_columns(options.importance, cols, view_cols);
    o.importance = importance.data();
  }
  Quantized q = scheme.quantize(x, Shape{numel / view_cols, view_cols}, o);
  q.shape = shape;
  q.params[kViewParam] = std::to_string(view_cols);
  return q;
}

namespace {

// fn(q as the scheme quantized it): under its view's rows x columns where it has one (a
// copy with that shape), else q itself.
template <typename Fn> auto with_view(const Quantized& q, Fn&& fn) {
  auto it = q.params.find(kViewParam);
  if (it == q.params.end()) return fn(q);
  const auto numel = static_cast<int64_t>(shape_numel(q.shape));
  const int64_t view_cols = detail::param_int(q, kViewParam, 1, std::max<int64_t>(1, numel));
  const int64_t cols = last_dim(q.shape);
  if (cols <= 0 || numel % view_cols != 0 || view_cols % cols != 0) {
    throw invalid_input("view_cols=" + it->second + " does not fit the shape " + shape_to_string(q.shape), q.scheme);
  }
  Quantized viewed = q;
  viewed.shape = Shape{numel / view_cols, view_cols};
  return fn(viewed);
}

}  // namespace

void dequantize_view(const Scheme& scheme, const Quantized& q, float* out, bool reference, int device) {
  with_view(q, [&](const Quantized& viewed) {
    if (reference) {
      scheme.dequantize_reference(viewed, out);
    } else if (device >= 0) {
      scheme.dequantize_on(viewed, out, device);
    } else {
      scheme.dequantize(viewed, out);
    }
  });
}

bool measure_view(const Scheme& scheme, const Quantized& q, const float* x, const float* weights, int64_t block,
                  int device, detail::RowSums* rows) {
  return with_view(q, [&](const Quantized& viewed) {
    return scheme.measure_on(viewed, x, weights, block, device, rows);
  });
}

}  // namespace tk::quant
