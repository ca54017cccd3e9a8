// A committed checkpoint step read as a tensor file, so that every tool that reads
// tensors takes `DIR/step-N`, or `DIR` for its newest step, as an input: `tinfo`,
// `tinfo diff`, `tconvert`, `tquant`, `tcompress`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tk/io/tensor_file.h"

namespace tk::ckpt {

// Where a path points in a checkpoint directory.
struct CheckpointPath {
  std::string root;
  std::optional<uint64_t> step;  // nullopt: the root itself
};

// `path` as a checkpoint root (a directory holding `latest`, `.lock` or a committed
// step-N/manifest.json) or as a committed step directory (`step-N` holding
// manifest.json); nullopt for anything else. Looks at directory entries only.
std::optional<CheckpointPath> locate_checkpoint(const std::string& path);

// The tensors of step `step` of the checkpoint at `root` (read only, no lock), in the
// manifest's order, with the step's metadata. Each read decodes the tensor (raw,
// compressed, delta, reference or sliced) and checks its checksum. Throws kInvalidInput
// when the step is not committed or its manifest is damaged.
std::unique_ptr<io::TensorReader> open_step_tensors(const std::string& root, uint64_t step);

// open_step_tensors for what `where` locates: its step, or the newest committed step of
// a root (kInvalidInput "no committed step" when there is none).
std::unique_ptr<io::TensorReader> open_step_tensors(const CheckpointPath& where);

}  // namespace tk::ckpt
