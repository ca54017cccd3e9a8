// The decomposition options checked and parsed once, before anything is read, plus the
// pieces cp/tucker/tt/rescal, tt-round and reconstruct share: writing decompositions
// and reporting them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/tool.h"
#include "tdecomp.h"
#include "tk/decomp/budget.h"
#include "tk/decomp/format.h"
#include "tk/decomp/sparse_dist.h"
#include "tk/device/device.h"

namespace tk::tdecomp {

struct Settings {
  io::FileFormat format = io::FileFormat::kSafetensors;
  bool f32 = false;                    // --precision f32
  std::optional<DType> factor_dtype;   // --factor-dtype
  std::optional<uint64_t> budget;      // --budget
  std::vector<int64_t> ranks;          // --ranks
  Shape shape;                         // --shape
  uint64_t seed = 0;
};

// Validate `o` (kUsage: rank <= 0, --tol outside (0,1), missing or contradictory
// options) and check the output before any input is read.
Settings settings_parse(const cli::Tool& tool, const DecompOptions& o);

// A float dtype named on the command line (kUsage otherwise).
DType float_dtype_parse(const std::string& text, const std::string& flag);

// One reported decomposition; `budget` holds the budget search's candidates, if any.
// With `kept`, the source tensor is stored unchanged in place of `model`, which then
// only names it (and holds the decomposition that was not smaller, if one was computed).
struct Outcome {
  decomp::Decomposition model;
  uint64_t source_bytes = 0;           // the input's bytes (sparse: coordinates and values)
  std::vector<decomp::BudgetCandidate> budget;
  std::optional<Tensor> kept;
  std::optional<decomp::SparseDistStats> spread = std::nullopt;  // sparse CP across MPI ranks
  device::Placement device = {};       // where it was computed, and why there under --device auto

  uint64_t stored_bytes() const { return kept ? kept->nbytes() : model.stored_bytes(); }
};

// Write the decompositions and kept tensors to `output` with the input's metadata, the
// `tk` description and provenance, atomically.
void write_decompositions(const cli::Tool& tool, const std::string& output, io::FileFormat format,
                          const std::vector<Outcome>& outcomes, io::Metadata metadata);

// The per-tensor report: a table (stdout, or stderr when stdout carries the data; none
// with -q) and --json.
void report_decompositions(const cli::Tool& tool, const std::string& command, const std::string& input,
                           const std::string& output, const std::vector<Outcome>& outcomes);

}  // namespace tk::tdecomp
