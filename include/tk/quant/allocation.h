// The budgeted allocation over a model's tensors (tquant --budget / --size): every
// candidate scheme's bytes and error on every tensor, with errors estimated on samples
// of rows (measure.h), candidates that cannot win dropped, and the estimates that a
// solve of the budget (budget.h) leaves undecided refined on larger samples until none
// is. The caller reads the tensors and solves; these are the steps in between.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/quant/budget.h"
#include "tk/quant/measure.h"
#include "tk/quant/scheme.h"

namespace tk::quant {

// Per tensor: the candidates that apply to it, their bytes and (estimated) errors as
// one budget item, and the row samples the estimates were made on, by (view, share).
struct Candidates {
  std::vector<BudgetItem> items;
  std::vector<std::vector<std::string>> usable;
  std::vector<std::vector<Estimate>> estimates;
  std::vector<std::map<std::pair<int64_t, int64_t>, RowSample>> samples;
};

// Whether `scheme` fills its blocks on a tensor of `shape` under its best view: at most
// 1/16 of the values stored are padding. kUsage errors of the scheme propagate.
bool fills_blocks(const Scheme& scheme, const Shape& shape, const QuantOptions& options);

// Bits per code of the integer scheme a spec falls back to where it cannot fill its
// blocks (as llama.cpp falls back from k-quants); 0 when it has none.
int fallback_int_bits(const std::string& spec);

// Drop tensor i's candidates that cannot win: an estimate worse, beyond the margin of
// the two estimates, than another candidate of no more bytes (or equal to it in both,
// after it; or, where the margin is 0, no better than one of fewer bytes). Returns how
// many were dropped.
size_t allocation_drop_dominated(Candidates& t, size_t i);

// Drop tensor i's candidates that land near a grid the tensor's values sit close to but
// not on (a fine-tune of a model that was quantized once). The tensor's rate-distortion
// line is the median over its candidates of SQNR - 6.02 dB per bit. A candidate more
// than kSnapMarginDb above it lands near such a grid (a snap) and goes, and so does
// every candidate of more bytes than a snap that gains less than kSnapPlateauGainDb of
// SQNR over it while lying above the line (a finer grid holding the same levels: the
// same plateau). A snap's error is the fine-tune's change itself: every tensor reverts
// the same change, the errors add up coherently, and llama.cpp's KL divergence grows
// many times what the small error predicts (docs/QUANT.md). A tensor on which some
// candidate is lossless for the source's dtype sits on a grid exactly (a quantized model
// stored as f16): nothing to revert, nothing goes. `signal`: the tensor's
// (importance-weighted) sum of squares; `weights`: its elements. Needs four candidates
// or more to draw a line; keeps at least one. Returns the candidates dropped.
inline constexpr double kSnapMarginDb = 5;
inline constexpr double kSnapPlateauGainDb = 2;
std::vector<std::string> allocation_drop_snaps(Candidates& t, size_t i, double signal, uint64_t weights,
                                               DType source);

// The SQNR above which a quantized tensor counts as lossless for a source of `dtype`:
// 10 dB short of the dtype's own rounding noise, at most 60 dB.
double lossless_sqnr_db(DType dtype);

// The estimated (not exact) candidates of tensor i that the solve's `choice` does not
// decide: the chosen one and those whose error lies within the margin of it.
std::vector<size_t> allocation_undecided(const Candidates& t, size_t i, int choice);

// Estimate candidate j of tensor i (values `x`) again on a sample four times larger,
// on rows shared with the other candidates refined with it; whole once that would be
// most of the tensor. Where the larger share takes the same rows (a short view), the
// estimate is kept under the new share rather than made again. Updates the item's error
// and the estimate and returns the new one. A whole measurement (exact) is moved into
// `whole` when given, parts included.
Estimate allocation_refine(Candidates& t, size_t i, size_t j, const Scheme& scheme, const std::vector<float>& x,
                           const Shape& shape, const QuantOptions& options, Measured* whole = nullptr);

}  // namespace tk::quant
