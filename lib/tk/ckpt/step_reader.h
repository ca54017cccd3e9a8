// Reading committed steps: decode one tensor entry (raw, compressed, reference or XOR
// delta against its source step) into caller memory and check its XXH3; verify a whole
// step. Internal to lib/tk/ckpt.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>

#include "tk/ckpt/box.h"
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
  // What the entry claims is checked as its cursor opens, before any byte is read: the
  // stored range inside its shard, a frame's table and decoded size.
  void read(const TensorEntry& entry, std::span<uint8_t> out) const;
  // The same, handing the bytes to `sink` in pieces of 16 MiB: memory is a piece (and a
  // piece of a delta's base; a sliced tensor: a band of rows, at least one row), not the
  // tensor. The checksums are checked after the last piece (sliced: each block as it
  // is read), so the sink may have taken bytes of a corrupt tensor before the error.
  void stream(const TensorEntry& entry, const std::function<void(std::span<const uint8_t>)>& sink) const;
  // Read box `want` of `entry`'s tensor (in global indices) into `out`, row-major, as
  // many bytes as the box holds. For a "sliced" entry only the saved slices that overlap
  // the box are read, and of each only the kSliceBlockBytes blocks that hold wanted
  // bytes, each checked against its XXH3 (a slice read whole is checked against its own
  // XXH3 as well). Other entries are read whole, checked, and the box copied out.
  // Throws kInvalidInput naming the tensor and an index no saved slice covers, kUsage
  // when the box lies outside the tensor or the dtype cannot be sliced.
  void read_box(const TensorEntry& entry, const Box& want, std::span<uint8_t> out) const;
  // Check what `entry` claims against the shards that hold it, before a caller
  // allocates entry.nbytes for it: each stored range inside its shard file, raw bytes
  // as long as the tensor, a frame's header claiming the tensor's size (and able to
  // hold it, lossless.h). Follows references and deltas to their source steps. Throws
  // kInvalidInput naming the step and tensor.
  void check_claims(const TensorEntry& entry) const;
  // Everything verify() checks except tensor contents: shard files present with the
  // recorded sizes and valid safetensors headers agreeing with the manifest.
  std::vector<std::string> check_layout() const;
  // A distributed step's rank parts, each present and all merging into exactly the
  // manifest (what each rank saved: slice, shard, offset, dtype, checksums): problems,
  // one line each, or none. Nothing for a step of one process.
  std::vector<std::string> check_parts() const;
  // check_parts, for restores: kInvalidInput with the first problem.
  void require_parts() const;

 private:
  class Cursor;
  // read_box for one saved slice: the part of `want` that `slice` holds, into `out`.
  // Returns how many elements it copied.
  uint64_t read_slice_part(const TensorEntry& entry, const SliceEntry& slice, const Box& want, uint64_t elem,
                           std::span<uint8_t> out) const;
  // A slice's shard, opened, with the slice's range checked inside it; and how messages
  // name the slice ("step-7: tensor 'w': slice [0:500, 0:37] of rank 0").
  fs::File open_slice(uint64_t step, const TensorEntry& entry, const SliceEntry& slice) const;
  static std::string slice_where(uint64_t step, const TensorEntry& entry, const SliceEntry& slice);
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
