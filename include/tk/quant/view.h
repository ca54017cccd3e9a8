// The 2-D view a scheme quantizes a tensor under. Schemes see a tensor as rows x cols
// (cols = the last dimension) and pad every row to their block; a row shorter than
// the block ([n, 1] columns, depthwise [3, 3, C, 1] kernels, HWIO kernels with few
// output channels) then costs several times the scheme's bits. The values in memory
// order can instead be viewed with more columns, so that blocks fill:
//
// - the tensor's own layout when it pads at most 1/64 of the values;
// - else the view among a product of trailing dimensions, the smallest multiple of
//   both the last dimension and the block that divides the tensor, and the flat
//   tensor (one row), that stores the fewest bits (padding and per-row parts such as
//   row scales); ties go to the fewer columns.
//
// Every candidate's column count is a multiple of the last dimension, so per-column
// importance repeats across a view row. The chosen column count is recorded as the
// `view_cols` parameter (absent for the tensor's own layout), so that dequantizing
// needs nothing but the record.
#pragma once

#include <cstdint>
#include <vector>

#include "tk/quant/scheme.h"

namespace tk::quant {

// Values the scheme stores for a rows x cols view, padding included.
uint64_t padded_values(const Scheme& scheme, int64_t rows, int64_t cols, const QuantOptions& options);

// Columns of the chosen view of `shape` (see above). Throws like the scheme's
// row_block for options the scheme does not take.
int64_t choose_view_cols(const Scheme& scheme, const Shape& shape, const QuantOptions& options);

// Per-column values (importance) of a tensor with `cols` columns, repeated along the
// `view_cols` columns of a view (a multiple of `cols`).
std::vector<float> repeat_columns(const float* values, int64_t cols, int64_t view_cols);

// Quantize under the view with `view_cols` columns (a multiple of the last dimension
// that divides the tensor). The result has the original shape and, for a view other
// than the tensor's own, the `view_cols` parameter.
Quantized quantize_view(const Scheme& scheme, const float* x, const Shape& shape, int64_t view_cols,
                        const QuantOptions& options);

// Dequantize a result of quantize_view (or of the scheme itself), with `device` >= 0 on
// that CUDA device where the scheme decodes q there (dequantize_on). Throws kInvalidInput
// when `view_cols` does not divide the tensor.
void dequantize_view(const Scheme& scheme, const Quantized& q, float* out, bool reference = false, int device = -1);

// Scheme::measure_on for a result of quantize_view: the rows are the view's, x holds them
// in memory order and `weights` has one per view column (repeat_columns). False where the
// scheme does not decode q on that device.
bool measure_view(const Scheme& scheme, const Quantized& q, const float* x, const float* weights, int64_t block,
                  int device, detail::RowSums* rows);

}  // namespace tk::quant
