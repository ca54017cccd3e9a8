// Distributed checkpoints: one checkpoint directory shared by the ranks of a
// communicator, one consistent step for all of them, restorable onto any number of
// ranks (docs/CHECKPOINT.md, "Distributed steps"). The transport is tk::dist::Comm; the
// format, the commit and the reader need no MPI, so tools built without it list,
// verify and restore distributed steps through Checkpointer (checkpoint.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tk/core/error.h"
#include "tk/core/tensor.h"
#include "tk/dist/comm.h"

namespace tk::ckpt {

struct DistOptions {
  // Seconds each collective of open, save and commit may take before it fails with
  // kRuntime "... timed out" (a rank died or hangs). See DistCheckpointer::wait.
  double timeout_seconds = 300;
  int threads = 2;  // background threads for checksums
  // A node-local first tier ($SLURM_TMPDIR, a local disk). When set, every rank writes
  // its part here and a step commits on every node's copy (each node's holds the global
  // manifest and the parts of its ranks); a background flush then copies it to `dir`,
  // the shared durable tier, where rank 0 publishes it once every rank's copy is there.
  // Ranks that see the same directory (same host, device and inode) form a node.
  std::string local_dir;
  // Retention on the shared directory, after each publication there: keep the newest
  // `keep_last` steps (0: keep all).
  uint32_t keep_last = 0;
  // Staging memory this rank allocates and touches at open (its state's size, say), so
  // that the job's first save stalls no longer than later ones (0: allocated by the
  // first save).
  uint64_t staging_bytes = 0;
};

// Where restore() read a step from.
enum class RestoreSource { kShared, kNodeLocal };

// What became of one step this rank flushed, or is flushing
// (the background flush of a node-local tier).
struct StepLag {
  uint64_t step = 0;
  bool durable = false;      // published on the shared tier
  double lag_seconds = 0;    // from the node-local commit to publication (so far, when not durable)
  std::optional<Error> error;  // the flush failed: the step stays node-local only
};

struct DistFlushStatus {
  std::optional<uint64_t> latest_committed;  // newest step committed (on the node-local tier, when set)
  std::optional<uint64_t> latest_durable;    // newest step on the shared tier
  std::vector<StepLag> steps;  // with a node-local tier: each step committed through this handle
};

// One rank's box of a global tensor: offsets[d] <= i[d] < offsets[d] + shape[d], stored
// row-major at `data` (nbytes bytes). Saved by save_async, filled by restore.
struct DistSlice {
  std::string name;
  DType dtype = DType::kF32;
  Shape global_shape;
  Shape offsets;   // empty: all 0
  Shape shape;     // empty: the global shape
  uint8_t* data = nullptr;  // host memory only
  uint64_t nbytes = 0;
  bool replicated = false;  // whole, held alike by every rank passing it: saved once, by the lowest
};

struct DistSaveStats {
  uint64_t step = 0;
  double stall_seconds = 0;   // inside save_async on this rank, and blocked in snapshot_wait
  double write_seconds = 0;   // background: checksums, write and fsync of this rank's part
  double commit_seconds = 0;  // inside wait(): collectives, validation, publication
  uint64_t written_bytes = 0; // this rank's shard and part
  uint64_t step_bytes = 0;    // tensor bytes of the whole step
};

class DistCheckpointer {
 public:
  // Collective. Open (creating) `dir`, the same shared directory on every rank. Rank 0
  // takes the writer lock and removes what a killed job left; every rank then checks
  // that it sees the directory rank 0 prepared. Throws on every rank when any fails.
  DistCheckpointer(std::string dir, std::unique_ptr<dist::Comm> comm, const DistOptions& options = {});
  // Joins the background write of a save nobody waited for; commits nothing.
  ~DistCheckpointer();
  DistCheckpointer(const DistCheckpointer&) = delete;
  DistCheckpointer& operator=(const DistCheckpointer&) = delete;

  // Collective (it agrees with the other ranks which of them saves each replicated
  // tensor). Copy this rank's slices and write them in the background as its part of
  // step `step`. kUsage at once for a malformed slice or a step not above the newest;
  // either way wait() must follow on every rank, and then fails on all of them.
  //
  // Snapshot::kLazy: the copy runs in the background as well, so the call returns
  // after the agreement; the caller must leave the slices' memory as it is until
  // snapshot_wait() (or wait()) returns. A training step fits that: the weights stay
  // as they are through the forward and backward passes, so the copy overlaps them and
  // only an optimizer update that comes first waits for it (DataStates-LLM's lazy
  // snapshots).
  enum class Snapshot { kNow, kLazy };
  void save_async(uint64_t step, const std::vector<DistSlice>& slices, Snapshot snapshot = Snapshot::kNow);
  // Local. Block until the pending save's copy of this rank's slices is taken (at once
  // after a Snapshot::kNow save, or none pending); returns the seconds blocked, which
  // count in the save's stall.
  double snapshot_wait();
  // Collective: take part in save `step` with nothing, as a rank whose input was
  // malformed before it could be described (the C API's descriptors); rethrows `why`,
  // and wait() then fails on every rank with it.
  [[noreturn]] void save_async_refused(uint64_t step, const Error& why);
  // Collective. Wait for this rank's part, then commit: rank 0 publishes the step when
  // every rank succeeded and the slices are consistent, and every rank gets the same
  // outcome: the stats, or the same Error (naming the rank that failed). A collective
  // that times out throws kRuntime on this rank and breaks the handle.
  DistSaveStats wait();
  bool pending() const { return pending_; }
  bool broken() const { return broken_; }

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  const std::string& dir() const { return dir_; }

  // Collective. Wait until every step committed so far is on the shared tier (a no-op
  // without a node-local tier). Every rank gets the same outcome: the first flush that
  // failed, naming its rank, or none. A collective that times out breaks the handle.
  void flush();
  // Local. The tiers' newest steps and each step's durability lag (dist_flush.h).
  DistFlushStatus flush_status() const;

  // Local. The newest step on the shared tier (with a node-local tier, steps not yet
  // flushed are not listed: a job that resumes on other nodes could not read them);
  // the number of ranks that saved `step`.
  std::optional<uint64_t> latest() const;
  uint32_t world_size(uint64_t step) const;
  // Local. Fill each wanted slice's box of its global tensor from step `step`
  // (StepReader::read_box: only the overlapping bytes, every block read checked).
  // With a node-local tier, from this node's copy when it is the step on the shared
  // tier (the same manifest; or the step is not flushed yet) and holds every shard the
  // boxes need, and otherwise, or when reading it fails, from the shared tier.
  // kUsage when a dtype or global shape differs from the saved one; kInvalidInput when
  // the step or tensor is missing, part of a box was not saved, or a checksum fails.
  RestoreSource restore(uint64_t step, const std::vector<DistSlice>& wanted) const;

 private:
  struct Impl;
  void begin_save(uint64_t step, const std::vector<DistSlice>& slices, const std::optional<Error>& refused,
                  Snapshot snapshot);
  void open_node_tier(std::optional<uint64_t> newest_shared);
  void copy_snapshot();  // the pending save's slices into its staging buffer
  // Run a collective; one that throws (a timeout, an MPI failure) breaks the handle.
  template <typename Body> auto collective(Body&& body) {
    try {
      return body();
    } catch (...) {
      broken_ = true;
      throw;
    }
  }
  bool tiered() const { return !options_.local_dir.empty(); }
  const std::string& write_dir() const { return tiered() ? options_.local_dir : dir_; }
  std::string dir_;
  std::unique_ptr<dist::Comm> comm_;
  DistOptions options_;
  std::unique_ptr<Impl> impl_;
  bool pending_ = false;
  bool broken_ = false;
};

}  // namespace tk::ckpt
