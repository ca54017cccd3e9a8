// What one tquant run shares between planning, measuring, allocating and writing: the
// input's tensors, the parsed options and the scheme objects.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/progress.h"
#include "plan.h"
#include "results.h"
#include "spill.h"
#include "tk/device/device.h"
#include "tk/io/gguf.h"
#include "tk/io/tensor_file.h"
#include "tk/quant/allocate.h"
#include "tk/quant/measure.h"
#include "tquant.h"

namespace tk::tquant {

// The input's tensors, read on demand from a random-access reader (a pipe is spooled
// by cli::open_seekable_reader): the budget reads tensors twice, and the writer wants
// them in its own order, with memory bounded by the tensors in hand.
class Source {
 public:
  explicit Source(std::unique_ptr<io::TensorReader> reader) : reader_(std::move(reader)) {}
  const io::TensorReader& reader() const { return *reader_; }
  Tensor read(size_t index) { return reader_->read(index); }
  // See TensorReader::release.
  void release(size_t index) { reader_->release(index); }
  // The tensor as f32 (then released); `finite` tells whether every value is.
  std::vector<float> read_f32(size_t index, bool* finite);
  // The reader as a GGUF reader, or null for the other formats.
  io::GgufReader* gguf() const { return dynamic_cast<io::GgufReader*>(reader_.get()); }

 private:
  std::unique_ptr<io::TensorReader> reader_;
};

struct Session {
  cli::Tool& tool;
  const QuantArgs& args;
  quant::QuantOptions base;
  std::map<std::string, std::vector<float>> importance;
  std::map<std::string, std::unique_ptr<quant::Scheme>> schemes;
  // The output is GGUF: every scheme must have a ggml twin (quant/gguf_blocks.h), is
  // quantized under the twin's layout options, and fits a tensor only when its rows
  // are whole ggml blocks (GGUF has no padding).
  bool gguf = false;
  // The output is a compressed-tensors directory (--format compressed-tensors): every
  // scheme must have a twin there (quant/compressed_tensors.h), only 2-D MODULE.weight
  // tensors are quantized, integer scales default to each tensor's own float dtype, and
  // a scheme fits a tensor only under its own layout (no other view, no padded groups).
  bool ct = false;
  // Candidates that the budget measured whole, by plan index and candidate, with their
  // parts set aside in `spill` (null: parts not kept, as for --dry-run): the chosen one
  // is the final result as it stands, not quantized again.
  PartSpill* spill = nullptr;
  std::map<size_t, std::map<std::string, Result>> measured_whole{};

  const quant::Scheme& scheme(const std::string& spec);
  // Where quantizing `numel` weights with `scheme` under `o` runs (--device): on the GPU
  // where the scheme has a path for these options, else the CPU. A budget's candidates
  // without one run on the CPU under --device cuda too (a named scheme is refused first,
  // check_device).
  device::Placement place(const quant::Scheme& scheme, const quant::QuantOptions& o, uint64_t numel) const;
  // --device cuda[:N] with a --scheme or --rule scheme that has no GPU path: kUnavailable.
  void check_device();
  // Run work(o) where o says. Under --device auto a GPU that cannot take the work (out of
  // memory, taken by another process: kUnavailable) leaves it, and the rest of the run,
  // to the CPU, with o.device set to -1 and the reason kept for a notice; an explicit
  // --device cuda fails instead.
  template <typename Work> auto on_device(quant::QuantOptions& o, Work&& work) -> decltype(work(o)) {
    if (o.device < 0) return work(o);
    return device::or_on_cpu(
        tool.options().device, [&] { return work(o); },
        [&] {
          o.device = -1;
          return work(o);
        },
        &gpu_left);
  }
  // Why auto left the GPU for the CPU (empty: it did not).
  std::string gpu_left{};
  // base + the entry's group size + the tensor's importance vector, for the entry's
  // scheme or for `spec`; for GGUF, with the layout of the scheme's ggml twin.
  quant::QuantOptions options_for(const PlanEntry& e) { return options_for(e, e.scheme); }
  quant::QuantOptions options_for(const PlanEntry& e, const std::string& spec);
  // GGUF output: the ggml type that `spec` is stored as; kUsage when it has none.
  io::GgmlType gguf_type(const std::string& spec);
  // Whether `spec` fills its blocks on this tensor under its best view (at most 1/16
  // of the values stored are padding; for GGUF and compressed-tensors, none); kUsage
  // errors of the scheme propagate.
  bool fits(const std::string& spec, const PlanEntry& e);
  // A fixed scheme that cannot fill its blocks here: for GGUF, fall back to
  // llama-quantize's type (io::gguf_fallback_type); else to the integer scheme of as
  // many bits with groups of 32, 16 or 8; or keep the tensor. Returns why and what was
  // done, without the tensor's name (tensors with the same text share one notice), or
  // empty when the scheme fits.
  std::string fit_fixed(PlanEntry& e);
  // Key `importance` by the input's tensors (quant::importance_match: a llama.cpp
  // imatrix weighs a Hugging Face model's tensors too). Throws kInvalidInput when no
  // entry weighs any tensor; warns once about entries that weigh none.
  void match_importance(const std::vector<io::TensorInfo>& infos);
  // Read the --importance file into `importance`. kUsage for "-": the file is sniffed
  // for llama.cpp's legacy .dat and then opened again, which a stream cannot be.
  void read_importance();
  // NaN/Inf: kInvalidInput naming the tensor, or with --allow-nonfinite a warning and
  // the entry turned into a pass-through (returns false).
  bool accept_values(PlanEntry& e, bool finite);
};

// Elements of the tensors the plan quantizes.
uint64_t weights_to_quantize(const std::vector<PlanEntry>& plan);

// One warning when a phase's ETA passes kWarnSeconds (checked after 10 s of it).
class LongRunWarning {
 public:
  static constexpr double kWarnSeconds = 600;
  LongRunWarning(const cli::Tool& tool, std::string hint) : tool_(tool), hint_(std::move(hint)) {}
  void check(const cli::WorkMeter& meter, const char* phase);

 private:
  const cli::Tool& tool_;
  std::string hint_;
  bool said_ = false;
};

std::vector<std::string> split_list(const std::string& text);
// The --budget candidates: --candidates or the defaults; for GGUF output (`gguf`) the
// defaults with a ggml twin, and kUsage for a given one without; likewise for
// compressed-tensors output (`ct`).
std::vector<std::string> candidate_list(const QuantArgs& args, bool gguf = false, bool ct = false);

// A GGUF output's --budget candidate may end in "+asym": the scheme's asymmetric ggml
// twin (int4+asym is Q4_1, int5+asym Q5_1) beside its symmetric one, so that one budget
// weighs both. scheme_spec is the scheme's own spec.
inline bool asymmetric_candidate(const std::string& spec) { return spec.ends_with("+asym"); }
inline std::string scheme_spec(const std::string& spec) {
  return asymmetric_candidate(spec) ? spec.substr(0, spec.size() - 5) : spec;
}
// Every budgeted tensor of the plan measured whole under every candidate
// (quant::measure_candidates), for tquant curve.
quant::CandidateTable measure_candidates(Session& s, Source& src, std::vector<PlanEntry>& plan,
                                         const std::vector<std::string>& candidates, cli::Progress& progress);

// --budget / --size: set the scheme of every budgeted entry (quant::allocate). kUsage
// with the smallest reachable bpw (or size) when the budget is below it. Appends the
// notices for the summary ("notice: ...").
void allocate(Session& s, Source& src, std::vector<PlanEntry>& plan, cli::Progress& progress,
              std::vector<std::string>& notices);

// tquant curve: single schemes against budgeted allocations.
int run_curve(cli::Tool& tool, const QuantArgs& args, const std::string& svg_path);

}  // namespace tk::tquant
