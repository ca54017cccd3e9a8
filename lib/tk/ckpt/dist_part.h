// One rank's part of a distributed step: the slices it saved into its shard, written and
// fsynced by the rank into the step's temporary directory (rank-K.safetensors and
// rank-K.json), and the merge of all ranks' parts into the global manifest that rank 0
// publishes. Free of MPI: the transport (dist_checkpoint.h) only moves statuses.
// Internal to lib/tk/ckpt; the format is documented in docs/CHECKPOINT.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tk/ckpt/box.h"
#include "tk/ckpt/manifest.h"
#include "tk/io/dir_fd.h"

namespace tk::ckpt {

inline constexpr const char* kPartFormat = "tensorkit-checkpoint-part";

// A slice handed to a rank's save, with the caller's bytes.
struct LocalSlice {
  std::string name;
  DType dtype = DType::kF32;
  Shape global_shape;
  Box box;
  std::span<const uint8_t> bytes;
  bool replicated = false;  // the whole tensor, held alike by every rank that passes it
  bool store = true;        // false: a replica that a lower rank saves
};

// What a rank saved of one tensor (`slice`), or, for a replica a lower rank saved, what
// it holds (no shard, offset or blocks; its checksum must match the saved copy's).
struct PartPiece {
  std::string name;
  DType dtype = DType::kF32;
  Shape global_shape;
  bool replicated = false;
  bool stored = true;
  SliceEntry slice;
};

struct RankPart {
  uint64_t step = 0;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  std::optional<ShardInfo> shard;  // none when the rank stored nothing
  std::vector<PartPiece> pieces;
};

std::string part_file_name(uint32_t rank);   // "rank-00003.json"
std::string shard_file_name(uint32_t rank);  // "rank-00003.safetensors"

// Check a rank's slices before anything is written: names present and distinct, known
// dtypes, boxes inside their global shapes and of their byte size, replicas whole.
// Throws kUsage naming the tensor.
void check_local_slices(const std::vector<LocalSlice>& slices);

// Write the rank's shard (the stored slices, each under its tensor name with its box's
// shape) and its part file into `tmp`, both fsynced; checksums use `threads` threads.
// Returns the part, adds the bytes written to *written and stores the part file's bytes
// in *encoded.
RankPart write_rank_part(const io::DirFd& tmp, uint64_t step, uint32_t rank, uint32_t world_size,
                         const std::vector<LocalSlice>& slices, int threads, uint64_t* written,
                         std::vector<uint8_t>* encoded);

// JSON with a trailing checksum, as manifests; decode throws kInvalidInput naming `where`.
std::vector<uint8_t> part_encode(const RankPart& part);
RankPart part_decode(std::span<const uint8_t> bytes, const std::string& where);
// Read rank `rank`'s part from step directory `dir`; kInvalidInput "rank K: part ...
// missing" naming the step when it is not there.
RankPart read_part(const io::DirFd& dir, uint32_t rank, uint64_t step);

// The global manifest of step `step` from the parts of ranks 0..world_size-1 (parts[k]
// from rank k): every global tensor with its slices, the shards and the parts. Throws
// kUsage, naming the ranks and the tensor, when ranks disagree on a tensor's dtype or
// global shape, slices overlap or leave part of a tensor unsaved, a replica differs
// from the saved copy, or one name is replicated on one rank and sliced on another.
Manifest merge_parts(uint64_t step, const std::vector<RankPart>& parts, const std::vector<uint64_t>& part_bytes);

// The global manifest of step `step`: merge_parts, stamped with the time.
Manifest step_manifest(uint64_t step, const std::vector<RankPart>& parts, const std::vector<uint64_t>& part_bytes);

// A commit from parts on disk (the checkpointer gets them through the communicator):
// read the `world_size` parts from temp directory `tmp_name` of `root`, merge them and publish the
// step with the commit protocol (publish_step). Any failure removes the temp directory
// and throws (merge_parts' kUsage for inconsistent slices). Returns the manifest.
Manifest publish_parts(const io::DirFd& root, const std::string& tmp_name, uint64_t step, uint32_t world_size);

}  // namespace tk::ckpt
