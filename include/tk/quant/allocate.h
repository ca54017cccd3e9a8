// The budgeted quantization pipeline as one call: every candidate scheme measured on
// every tensor, then one chosen per tensor so that the model fits a budget in bits per
// weight or a file size (what tquant --budget and --size run). The steps are those of
// allocation.h and budget.h; the caller says what the tensors are and how its output
// stores each candidate (AllocationHost).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/core/shape.h"
#include "tk/quant/allocation.h"
#include "tk/quant/measure.h"
#include "tk/quant/scheme.h"

namespace tk::quant {

// A tensor of the model as the allocation sees it.
struct AllocationTensor {
  std::string name;
  Shape shape;
  DType dtype = DType::kF32;  // the source's: a candidate lossless for it sits on a grid
  uint64_t nbytes = 0;        // as the input stores it: what passing it through costs
  bool quantize = false;      // false: passed through
  std::string scheme;         // a fixed scheme; empty where the budget chooses
};

// Where the allocation is in its work, for a progress line.
struct AllocationProgress {
  enum class Phase { kMeasure, kDeferred, kRefine } phase = Phase::kMeasure;
  size_t tensor = 0;              // index in the tensors
  uint64_t weights_done = 0;      // kMeasure: weights measured before this tensor
  size_t candidates = 0;          // kRefine: candidates measured again
};

// What the allocation asks of its caller.
class AllocationHost {
 public:
  virtual ~AllocationHost() = default;
  // Tensor i's values as f32. On the first read of a tensor, false passes it through
  // instead (values the caller will not quantize, such as NaN); later reads of a tensor
  // that was taken are not asked again.
  virtual bool read(size_t i, std::vector<float>& x, bool first) = 0;
  virtual const Scheme& scheme(const std::string& spec) = 0;
  // Whether the output can store tensor i under `spec` (its block rules); kUsage errors
  // of the scheme count as no.
  virtual bool fits(size_t i, const std::string& spec) = 0;
  // The options tensor i is quantized under with `spec` (its importance and device
  // included); `spec` empty: the tensor's own scheme, or none for a budgeted one.
  virtual QuantOptions options(size_t i, const std::string& spec) = 0;
  // Run `work` under `o` (a host may move it from a device that cannot take it).
  virtual void run(QuantOptions& o, const std::function<void(const QuantOptions&)>& work) { work(o); }
  // Candidate `spec` measured whole on tensor i, parts included: the host may keep it
  // as tensor i's final result when the budget chooses it.
  virtual void measured_whole(size_t i, const std::string& spec, Measured m, int device) {
    (void)i, (void)spec, (void)m, (void)device;
  }
  // No candidate fits budgeted tensor i: it is passed through.
  virtual void unfit(size_t i) { (void)i; }
  // What a size budget's output holds besides tensor data (headers, metadata): asked
  // once every tensor is measured, when the tensors passed through are known.
  virtual uint64_t overhead() { return 0; }
  virtual void progress(const AllocationProgress& p) { (void)p; }
  // A detail at verbosity `level` (1: each estimate made again; 2: every candidate of
  // every tensor). Lines above verbosity() are not formatted.
  virtual int verbosity() const { return 0; }
  virtual void note(int level, const std::string& text) { (void)level, (void)text; }
};

// Every budgeted tensor under every candidate that fits it, with what the other tensors
// take.
struct CandidateTable : Candidates {
  std::vector<size_t> tensor;        // per item: its index in the tensors
  std::vector<double> signal;        // per item: importance-weighted sum of x^2
  std::vector<char> deferred_left;   // per item: deferred candidates fit, not yet estimated
  uint64_t fixed_bytes = 0;          // tensors quantized with a fixed scheme
  double fixed_error = 0, fixed_signal = 0;
  uint64_t pass_bytes = 0;           // tensors passed through
  uint64_t weights = 0;              // elements of all quantized tensors
};

// The importance-weighted sum of squares of x, rows of `cols` values (importance null:
// the plain sum).
double weighted_signal(const std::vector<float>& x, int64_t cols, const float* importance);

// Measure every tensor: the fixed ones whole, the budgeted ones under each of
// `candidates` that fits, on a sample of rows (`sample`, shared by the candidates of one
// view; quant::estimate_error) or whole. `deferred` candidates are estimated only where
// no other fits; elsewhere they are left for later (deferred_left).
CandidateTable measure_candidates(AllocationHost& host, const std::vector<AllocationTensor>& tensors,
                                  const std::vector<std::string>& candidates, bool sample,
                                  const std::vector<std::string>& deferred = {});

// The IQ2 and IQ3 candidates (iq2xxs .. iq3s): the costliest to estimate (a lattice
// search per 8 or 4 values), and all under 3.5 bits per weight. allocate() estimates them
// only on tensors that a first solve without them gives less than kDeferredBelowBpw: a
// tensor it gives more would have to drop more than 1.5 bits to take one.
bool deferred_candidate(const std::string& spec);
inline constexpr double kDeferredBelowBpw = 5;

struct AllocationRequest {
  std::vector<std::string> candidates;  // in order: ties go to the earlier one
  // Estimate on samples of rows and refine what a solve leaves undecided (false: every
  // candidate measured whole on every tensor, the deferred ones included).
  bool sampled = true;
  // The budget: bits per weight of the quantized tensors' data (fixed ones included),
  // or else the output's bytes, which the passed-through tensors and the host's
  // overhead() count against too.
  std::optional<double> bpw;
  uint64_t size = 0;
  // Every tensor name of the model, for the objective's roles (sensitivity.h).
  std::vector<std::string_view> model;
};

struct AllocationResult {
  CandidateTable table;
  std::vector<std::string> choice;  // per tensor: the chosen candidate; empty if none
  // The budget is below what the candidates reach: nothing was chosen. min_bytes is the
  // smallest reachable (output bytes, or data bytes for a bpw budget).
  bool feasible = true;
  uint64_t min_bytes = 0;
  size_t deferred_wanted = 0, deferred_estimated = 0;  // tensors the IQ2/IQ3 candidates fit; estimated on
  size_t estimated = 0;   // candidate errors estimated on samples
  size_t dropped = 0;     // dropped as beaten beyond the estimates' margin
  size_t refined = 0;     // estimated again on larger samples
  size_t measured = 0;    // measured whole where an estimate did not decide
  size_t snaps = 0, snapped_tensors = 0;  // candidates left out as near a grid the values sit close to
};

// The budgeted allocation. The objective: in a language model (tensors with roles,
// sensitivity.h), each tensor's relative error (importance-weighted where an importance
// vector covers it) times its role's weight, which predicts llama.cpp's KL divergence
// far better than squared errors summed across tensors (docs/QUANT.md); otherwise the
// squared errors. Errors are estimated on samples (unless !sampled); candidates that
// land near a grid the values sit close to (allocation_drop_snaps) and those whose
// estimate is worse, beyond the estimates' margin, than a candidate no larger are
// dropped; after each solve, the chosen candidate and any other whose estimated error
// lies within the margin of it are estimated again on a sample four times larger (and
// at last measured whole), and the budget is solved again until no choice rests on an
// undecided estimate.
AllocationResult allocate(AllocationHost& host, const std::vector<AllocationTensor>& tensors,
                          const AllocationRequest& request);

}  // namespace tk::quant
