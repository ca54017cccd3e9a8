// Asynchronous, crash-consistent checkpoints of named tensors.
//
// A checkpoint directory holds one subdirectory per committed step:
//
//   DIR/.lock                    writer lock (flock), holds the writer's pid
//   DIR/latest                   "step-N\n", replaced by atomic rename
//   DIR/step-N/manifest.json     tensors, dtypes, shapes, shard offsets, XXH3 per tensor,
//                                user metadata, parent step (incremental), own checksum
//   DIR/step-N/shard-K.safetensors
//
// A save is written into DIR/step-N.tmp-UNIQUE/, every file fsynced, the manifest written
// and fsynced last, the directory fsynced, renamed to step-N/, the parent fsynced, and
// only then `latest` replaced. Nothing is ever written in place, so a process killed at
// any moment leaves every committed step intact and no partial step visible: a step
// exists exactly when DIR/step-N/manifest.json does. Leftover temp directories are
// removed when a writer opens the directory.
//
// Full steps without compression are plain safetensors files that any reader opens.
// Tensors stored compressed or as an XOR delta appear in the shard as U8 byte arrays
// under their own name; the manifest says how to decode them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tk/core/error.h"
#include "tk/core/tensor.h"

namespace tk::ckpt {

using Metadata = std::map<std::string, std::string>;

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

enum class Compression {
  kNone,      // tensors stored as they are
  kLossless,  // byte-grouped entropy coding (tk::codec::lossless), bit-exact
};

struct Options {
  // Open for reading only: no lock, no cleanup, save_async() refused. Any number of
  // readers may use a directory while one writer saves into it.
  bool read_only = false;
  // A second, durable tier (e.g. a parallel file system). Each step committed in the
  // main (fast) directory is copied there in the background with the same protocol.
  std::string durable_dir;
  // Retention, applied after each commit on both tiers: keep the newest `keep_last`
  // steps (0 = keep all) and also every step divisible by `keep_every` (0 = none). The
  // newest committed step, and every step a kept step takes bytes from (its parent and
  // the sources of its references and deltas), are always kept.
  uint32_t keep_last = 0;
  uint32_t keep_every = 0;
  Compression compression = Compression::kNone;
  // Incremental mode: a step stores only the tensors that changed since the last full
  // step (its parent); unchanged tensors are references, changed ones whose XOR with the
  // parent compresses to at most `delta_max_ratio` of their size are stored as deltas.
  // Every `full_every`-th save (and the first) is a full step.
  bool incremental = false;
  uint32_t full_every = 10;
  double delta_max_ratio = 0.5;
  // Staging pool for copy-mode snapshots: at most this many bytes are held; a save that
  // needs more waits for earlier saves to finish (0 = twice the largest save so far).
  uint64_t staging_limit = 0;
  // Split a step's data into shards of about this many bytes (0 = one shard).
  uint64_t shard_bytes = 0;
  // Background threads for encoding, checksums and writes.
  int threads = 2;
};

// Tensors whose data is in CUDA device memory are copied in either mode (docs/
// CHECKPOINT.md, Tensors in GPU memory): into pinned staging on the checkpointer's own
// stream, queued after the work on the device's legacy default stream, which in turn
// waits on the device for the copies; save_async does not wait for them.
enum class Snapshot {
  kCopy,    // copy into the staging pool; the caller may modify its tensors on return
  kBorrow,  // no copy; the caller must not modify the tensors until wait() returns
};

using SaveHandle = uint64_t;

struct SaveStats {
  uint64_t step = 0;
  double stall_seconds = 0;    // time spent inside save_async()
  double write_seconds = 0;    // background: encode, checksum, write and fsync
  double commit_seconds = 0;   // manifest, renames and directory fsyncs
  uint64_t logical_bytes = 0;  // tensor bytes in the step
  uint64_t written_bytes = 0;  // bytes written to the main tier (shards + manifest)
  size_t tensors_stored = 0;   // stored whole (raw or compressed)
  size_t tensors_referenced = 0;  // incremental: unchanged, taken from the parent
  size_t tensors_delta = 0;       // incremental: stored as an XOR delta
};

// One saved piece of a global tensor in a distributed step (docs/CHECKPOINT.md): the box
// start[d] <= i[d] < start[d] + shape[d], stored row-major in a rank's shard.
struct SliceEntry {
  uint32_t rank = 0;            // the rank that saved it
  std::string shard;            // file name inside the step directory
  uint64_t offset = 0;          // byte offset of the slice's data inside the shard
  Shape start;                  // offsets in the global tensor
  Shape shape;                  // extents
  uint64_t nbytes = 0;
  uint64_t xxh3 = 0;            // XXH3-64 of the slice's bytes
  std::vector<uint64_t> blocks; // XXH3-64 of each kSliceBlockBytes piece of them, in order
};

// Slices are checksummed in pieces of this many bytes too, so that a resharding restore
// checks what it reads without reading whole slices.
inline constexpr uint64_t kSliceBlockBytes = uint64_t(1) << 20;

struct TensorEntry {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t nbytes = 0;        // decoded bytes
  uint64_t stored_bytes = 0;  // bytes in the shard (0 for references)
  std::string encoding;       // "raw", "lossless", "xor", "xor-lossless", "ref", "sliced"
  std::string shard;          // file name inside the step directory; empty for "ref"
  uint64_t offset = 0;        // byte offset of the stored data inside the shard file
  uint64_t xxh3 = 0;          // XXH3-64 of the decoded bytes
  std::optional<uint64_t> source_step;  // "ref" / "xor*": the step holding the base
  std::vector<SliceEntry> slices;       // "sliced" (distributed steps): its saved pieces
};

struct StepInfo {
  uint64_t step = 0;
  std::string dir;              // the step directory
  std::string created;          // ISO 8601 UTC
  uint64_t logical_bytes = 0;   // tensor bytes when restored
  uint64_t stored_bytes = 0;    // shard and manifest bytes on disk
  size_t tensors = 0;
  std::optional<uint64_t> parent;  // incremental steps: the full step they refer to
  bool durable = false;            // also committed on the durable tier
  uint32_t world_size = 0;         // ranks that saved a distributed step; 0: one process
  Metadata metadata;               // the caller's metadata
  std::vector<TensorEntry> entries;
};

// One committed step as listed: its manifest, or the error reading it raised.
struct StepListing {
  uint64_t step = 0;
  std::optional<StepInfo> info;
  std::optional<Error> error;  // set when info is not
};

struct VerifyReport {
  uint64_t step = 0;
  size_t tensors_checked = 0;
  uint64_t bytes_checked = 0;
  std::vector<std::string> problems;  // one line each, naming the file or tensor
  bool ok() const { return problems.empty(); }
};

struct GcReport {
  std::vector<uint64_t> removed_steps;
  size_t removed_temp_dirs = 0;
  uint64_t bytes_freed = 0;
};

struct FlushStatus {
  std::optional<uint64_t> latest_committed;  // newest step on the main tier
  std::optional<uint64_t> latest_durable;    // newest step on the durable tier
  size_t pending = 0;                        // steps waiting to be copied
  double lag_seconds = 0;  // how long the newest committed step has waited (0 when flushed)
};

class Checkpointer {
 public:
  // Open (creating when writing) checkpoint directory `dir`. A writer takes the
  // directory's lock, failing with kUsage naming the holder's pid when another writer
  // has it, and removes temp directories left by killed writers. Throws kInvalidInput
  // when `dir` exists but is not a checkpoint directory (non-empty without a
  // checkpoint layout), kIo when it cannot be created or read.
  static std::unique_ptr<Checkpointer> open(const std::string& dir, const Options& options = {});

  // Waits for pending saves and flushes; errors of saves nobody waited for are dropped.
  virtual ~Checkpointer() = default;

  // Snapshot `tensors` and save them as step `step` in the background. Returns once the
  // snapshot is taken (see Snapshot). Steps must increase. Throws kUsage for a read-only
  // handle, a step not above the newest, duplicate or empty names; errors of the
  // background work are reported by wait().
  virtual SaveHandle save_async(uint64_t step, std::vector<NamedTensor> tensors, Metadata metadata = {},
                                Snapshot snapshot = Snapshot::kCopy) = 0;
  // Block until save `handle` is committed on the main tier; throw its error if it
  // failed (a failed save leaves no step and every earlier step intact).
  virtual SaveStats wait(SaveHandle handle) = 0;
  // Synchronous save: save_async + wait.
  SaveStats save(uint64_t step, std::vector<NamedTensor> tensors, Metadata metadata = {});
  // Wait for every save and, when a durable tier is set, every flush.
  virtual void wait_all() = 0;

  // Newest committed step, if any.
  virtual std::optional<uint64_t> latest() const = 0;
  // Committed step numbers, ascending, without reading their manifests.
  virtual std::vector<uint64_t> steps() const = 0;
  // Committed steps, oldest first, read from their manifests; throws the first
  // manifest's error that cannot be read.
  virtual std::vector<StepInfo> list() const = 0;
  // The same, but a step whose manifest cannot be read (damaged, hostile) is listed with
  // its error instead of hiding the steps after it.
  virtual std::vector<StepListing> list_each() const = 0;
  // One step's manifest; throws kInvalidInput when the step does not exist or its
  // manifest is damaged.
  virtual StepInfo info(uint64_t step) const = 0;

  // Read step `step` into new tensors, in manifest order, checking every checksum.
  // Throws kInvalidInput naming the tensor on a mismatch or a missing shard.
  virtual std::vector<NamedTensor> restore(uint64_t step) const = 0;
  // Read step `step` into the caller's tensors, matched by name; each must be writable
  // and have the stored dtype and shape; device memory is filled through host memory. Tensors of the step not listed are skipped;
  // a listed name the step lacks is kInvalidInput.
  virtual void restore_into(uint64_t step, std::span<NamedTensor> targets) const = 0;
  // Read tensors `names` of step `step` one after another, in that order, each in
  // pieces of 1 MiB: begin(i), piece(...) as many times as it takes, end(i), with i
  // an index into `names`. Memory is a piece, not a tensor: each tensor's claims are
  // checked before it is read, its checksum (and its base's) after its last piece, so
  // `piece` may have taken bytes of a corrupt tensor before the kInvalidInput. A name
  // the step lacks is kInvalidInput before anything is read.
  struct RestoreSink {
    std::function<void(size_t index)> begin;
    std::function<void(std::span<const uint8_t> bytes)> piece;
    std::function<void(size_t index)> end;
  };
  virtual void restore_stream(uint64_t step, const std::vector<std::string>& names, const RestoreSink& sink) const = 0;
  // Check step `step`: manifest checksum, shards present with the recorded sizes,
  // every tensor's XXH3 (decoding deltas against their base).
  virtual VerifyReport verify(uint64_t step) const = 0;

  // Apply retention now and remove leftover temp directories.
  virtual GcReport gc() = 0;
  virtual FlushStatus flush_status() const = 0;

  const std::string& dir() const { return dir_; }

 protected:
  explicit Checkpointer(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// Retention as a pure function, so it can be tested on its own: which of `steps` (with
// their dependencies) to delete under keep_last / keep_every. Never the newest step,
// never a step a kept step takes bytes from. Newest first, the order to delete them in:
// a writer killed between two deletions then never leaves a step without its bases.
std::vector<uint64_t> retention_victims(const std::vector<StepInfo>& steps, uint32_t keep_last,
                                        uint32_t keep_every);

// Copy every committed step of `from` missing in `to` (a checkpoint directory, created
// when absent), each with the full commit protocol, oldest first. Returns the steps
// copied. Used by the background tier flush and by `tckpt flush`.
std::vector<uint64_t> flush_steps(const std::string& from, const std::string& to);

// The durable tier that the last writer of `dir` with one flushed to (recorded in
// `dir/durable` when a Checkpointer opens with durable_dir), or nullopt. Throws
// kInvalidInput for a malformed record.
std::optional<std::string> recorded_durable_dir(const std::string& dir);

// Fault injection for tests: before each write, fsync and rename it makes, the engine
// asks the hook; a nonzero return is taken as that call's errno (EIO, ENOSPC, ...).
// Without a hook (nullptr, the default) the engine does not look: one flag read.
enum class FaultPoint { kWrite, kFsync, kRename };
using FaultHook = std::function<int(FaultPoint point, const std::string& path)>;
void set_fault_hook(FaultHook hook);

}  // namespace tk::ckpt
