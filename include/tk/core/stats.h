// Summary statistics of a tensor and element-wise comparison of two tensors, each in
// one parallel pass over the data without copying it (elements are widened in small
// per-thread blocks).
#pragma once

#include <cstdint>
#include <limits>

#include "tk/core/tensor.h"

namespace tk {

struct TensorStats {
  uint64_t count = 0;   // elements (C64: complex elements; statistics use the real part)
  uint64_t finite = 0;  // elements that are neither NaN nor +-Inf
  uint64_t zeros = 0;
  uint64_t nans = 0;
  uint64_t infs = 0;
  // Over finite elements only; NaN when there are none.
  double min = 0, max = 0, mean = 0, std = 0, absmax = 0;
};

// Statistics of any dtype. Population standard deviation; mean and variance are
// accumulated per block, relative to one of the tensor's values, and merged (Chan et
// al.), so they stay accurate for large tensors with a large mean. Integers and
// booleans count as finite; -0 counts as a zero. The result is the same for any number
// of OpenMP threads.
TensorStats tensor_stats(const Tensor& tensor);

namespace detail {
// Statistics of a run of elements; mean and m2 (sum of squared deviations from the
// mean) are over the finite elements, and the mean is relative to a shift common to the
// whole tensor (one of its values): block means far from zero would otherwise keep only
// their leading digits, and the differences between them, which the merge needs, would
// be lost.
struct StatsPartial {
  uint64_t finite = 0, zeros = 0, nans = 0, infs = 0;
  double min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity();
  double absmax = 0, mean = 0, m2 = 0;

  // Chan, Golub and LeVeque's pairwise update.
  void merge(const StatsPartial& o);
};
}  // namespace detail

// The statistics of a tensor whose elements arrive in order, piece by piece (a tensor
// streamed from a file or gathered from a view, never held whole): the same result, to
// the bit, as tensor_stats of the whole tensor.
class StatsStream {
 public:
  StatsStream(DType dtype, uint64_t numel);
  // Every piece but the last holds a multiple of this many elements.
  static uint64_t piece_elements();
  // The next `count` elements, at `data` in the dtype's bytes. Throws kInternal for a
  // piece of the wrong size or more elements than declared.
  void add(const void* data, uint64_t count);
  // After the last element.
  TensorStats finish() const;

 private:
  DType dtype_;
  uint64_t numel_, seen_ = 0;
  double shift_ = 0;
  detail::StatsPartial total_;
};

struct TensorDiff {
  bool same_dtype = false;
  bool same_shape = false;
  bool bit_equal = false;     // same dtype, shape and bytes
  uint64_t count = 0;         // elements compared
  uint64_t mismatches = 0;    // elements whose values differ (NaN == NaN counts as equal)
  // The norms below run over the elements where both values are finite.
  double max_abs_error = 0;   // max |a - b| over elements where both are finite
  double rel_error = 0;       // ||a - b||_2 / ||a||_2 (0 when a - b is zero; +inf when only a is zero)
  double sqnr_db = 0;         // 10 log10(||a||^2 / ||a - b||^2); +inf when a - b is zero
  uint64_t nan_mismatches = 0;  // elements where exactly one side is NaN, or Inf differs
};

// Compare `a` (reference) with `b` element-wise as values (after widening to f64; -0 equals
// 0). Tensors of different shape give same_shape = false and nothing else computed;
// different dtypes of the same shape are compared by value. Bit-equal tensors are
// recognised by a byte comparison without a scan.
TensorDiff tensor_diff(const Tensor& a, const Tensor& b);

}  // namespace tk
