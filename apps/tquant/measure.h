// Quantize one tensor, restore it and measure the error: what the report shows and
// what the budget solver weighs.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tk/quant/scheme.h"

namespace tk::tquant {

struct Measured {
  quant::Quantized q;
  quant::ErrorStats stats;
  uint64_t bytes = 0;  // all parts
  double bpw = 0;      // bytes * 8 / elements
  double signal = 0;   // sum of x^2, for the totals' SQNR
  // dtype and shape of every part, kept when the parts are dropped.
  std::map<std::string, std::pair<DType, Shape>> part_infos;
};

// Quantize under the scheme's best view (tk/quant/view.h). `keep_parts` false drops
// the parts after measuring (budget candidates, or results written later).
Measured quantize_measure(const quant::Scheme& scheme, const std::vector<float>& x, const Shape& shape,
                          const quant::QuantOptions& options, bool keep_parts);

// Share of values whose magnitude exceeds the largest reconstructed magnitude of their
// block (the scheme's group_size parameter, else the row) by more than 0.1%: the
// values the scheme clipped rather than rounded.
double clipped_share(const float* x, const float* y, int64_t rows, int64_t cols, int64_t block);

}  // namespace tk::tquant
