// Copy tensors from one or more TensorReaders into a TensorWriter, renaming and casting
// on the way, while holding as little as possible: the engine behind tconvert and any
// tool that rewrites a selection of tensors unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tk/io/tensor_file.h"

namespace tk::io {

// An input of a transfer. The reader is borrowed; `name` is used in messages.
struct TransferSource {
  TensorReader* reader = nullptr;
  std::string name;
};

// One tensor to copy: tensor `index` of source `source` becomes `output_name`, cast to
// `cast_to` when set (with tk::cast_array, rounding to nearest even).
struct TransferItem {
  size_t source = 0;
  size_t index = 0;
  std::string output_name;
  std::optional<DType> cast_to;
};

struct TransferProgress {
  uint64_t tensors_done = 0, tensors_total = 0;
  uint64_t bytes_done = 0, bytes_total = 0;  // output bytes
};

struct TransferOptions {
  bool saturate = false;  // casts clamp finite overflow to +-max (CastOptions::saturate)
  // Called after each tensor is handed to the writer. Must not throw.
  std::function<void(const TransferProgress&)> progress;
};

struct TransferResult {
  uint64_t tensors = 0;
  uint64_t bytes_in = 0;   // bytes of the selected input tensors
  uint64_t bytes_out = 0;  // bytes of the written tensors (after casts)
  std::vector<CastLosses> losses;  // per item, in item order: what its cast lost
};

// The TensorInfo each item will have in the output (name and dtype after the cast).
// Throws kUsage when two items get the same output name, naming both origins, and
// kUsage when an item refers to a missing source or tensor.
std::vector<TensorInfo> transfer_output_infos(const std::vector<TransferSource>& sources,
                                              const std::vector<TransferItem>& items);

// Declare the items and `metadata` to `writer`, copy every item, then finish the writer
// (committing the output). When every source has random access, tensors are read in
// the writer's preferred order, so the writer never holds one back; otherwise sources
// are read one after the other, each in its own storage order (as a pipe requires),
// and the writer holds what arrives before its turn. Only one tensor is in flight at a
// time. Throws what the readers and the writer throw; on failure the writer is left
// unfinished, so no output appears.
TransferResult transfer(const std::vector<TransferSource>& sources, const std::vector<TransferItem>& items,
                        TensorWriter& writer, const Metadata& metadata, const TransferOptions& options = {});

}  // namespace tk::io
