// Reading committed steps: decode one tensor entry (raw, compressed, reference or XOR
// delta against its source step) into caller memory and check its XXH3; verify a whole
// step. Internal to lib/tk/ckpt.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>

#include "tk/ckpt/fileops.h"
#include "tk/ckpt/manifest.h"

namespace tk::ckpt {

class StepReader {
 public:
  // Reads `step` of checkpoint directory `root`, loading the manifests of the steps
  // it refers to. Throws kInvalidInput when the step does not exist or a manifest is
  // damaged.
  StepReader(std::string root, uint64_t step);

  const Manifest& manifest() const { return manifest_; }
  // Decode `entry` (one of manifest().info.entries) into `out` (entry.nbytes bytes) and
  // check its checksum. Safe to call from several threads at once. Throws kInvalidInput
  // "checksum mismatch" naming the step and tensor, kIo when a shard cannot be read.
  // Checks the entry's claims (check_claims) first.
  void read(const TensorEntry& entry, std::span<uint8_t> out) const;
  // The same, handing the bytes to `sink` in pieces of 16 MiB: memory is a piece (and a
  // piece of a delta's base), not the tensor. The checksums are checked after the last
  // piece, so the sink may have taken bytes of a corrupt tensor before the error.
  void stream(const TensorEntry& entry, const std::function<void(std::span<const uint8_t>)>& sink) const;
  // Check what `entry` claims against the shards that hold it, before a caller
  // allocates entry.nbytes for it: each stored range inside its shard file, raw bytes
  // as long as the tensor, a frame's header claiming the tensor's size (and able to
  // hold it, lossless.h). Follows references and deltas to their source steps. Throws
  // kInvalidInput naming the step and tensor.
  void check_claims(const TensorEntry& entry) const;
  // Everything verify() checks except tensor contents: shard files present with the
  // recorded sizes and valid safetensors headers agreeing with the manifest.
  std::vector<std::string> check_layout() const;

 private:
  class Cursor;
  // The shard holding `entry` of step `step`, opened, with the entry's range checked
  // inside it (kInvalidInput "shard ... is truncated" otherwise).
  fs::File open_stored(uint64_t step, const TensorEntry& entry) const;
  void check_entry_claims(uint64_t step, const TensorEntry& entry) const;
  void check_stored_claims(uint64_t step, const TensorEntry& entry) const;
  // The entry of the same tensor in the step `entry` (of step `step`) takes bytes from.
  const TensorEntry& source_entry(uint64_t step, const TensorEntry& entry) const;

  std::string root_;
  Manifest manifest_;
  std::map<uint64_t, Manifest> sources_;  // manifests of the steps it takes bytes from
};

// Where a tensor of a step is named in messages: "step-7: tensor 'w'".
std::string tensor_where(uint64_t step, const std::string& name);

}  // namespace tk::ckpt
