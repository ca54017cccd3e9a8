// The quantized tensors of a run: writing them (parts + metadata) and reporting them.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan.h"
#include "tk/io/gguf.h"
#include "tk/io/tensor_file.h"
#include "tk/quant/measure.h"

namespace tk::tquant {

struct Result {
  const PlanEntry* entry = nullptr;
  quant::Measured measured;
  // Parts set aside in a PartSpill (measured.q.parts then empty): their offsets there.
  std::map<std::string, uint64_t> spilled;
  int device = -1;  // the CUDA device that quantized it; -1: the CPU
};

struct WriteOutcome {
  std::optional<std::string> sha256;  // hex digest of the output file; none for stdout
  uint64_t bytes = 0;
};

class PartSpill;

// How the writer gets at the input: `read` fetches an input tensor, `release` says it
// has been written (TensorReader::release); `spill` holds the parts of results that
// were set aside to bound memory.
struct InputAccess {
  std::function<Tensor(size_t)> read;
  std::function<void(size_t)> release;
  const PartSpill* spill = nullptr;
  io::GgufReader* gguf = nullptr;  // the input, when it is GGUF: tensors kept are copied as stored
};

// Write the output: in input order, each quantized tensor as its parts NAME.<suffix>,
// every other tensor unchanged; the `tk` metadata gets the layout records and the
// provenance. A GGUF output stores each quantized tensor as ggml blocks instead.
WriteOutcome write_quantized(const cli::Tool& tool, const QuantArgs& args, io::FileFormat format,
                             const io::Metadata& input_metadata, const std::vector<PlanEntry>& plan,
                             const std::vector<Result>& results, const InputAccess& input);

// Per-tensor table and totals (text on stdout, or on stderr when stdout carries the
// data), and the --json document.
void report_quantize(const cli::Tool& tool, const QuantArgs& args, const std::vector<PlanEntry>& plan,
                     const std::vector<Result>& results, const std::optional<std::string>& sha256,
                     uint64_t out_bytes);

}  // namespace tk::tquant
