/* C interface of the distributed checkpointer (libtkckpt built with TK_MPI).
 *
 * One checkpoint directory shared by every rank of an MPI communicator. Each rank saves
 * its own tensors; a step becomes visible only when every rank has written and fsynced
 * its part and rank 0 has published the global manifest (docs/CHECKPOINT.md,
 * "Distributed steps"). A step can be restored onto any number of ranks: each rank
 * names the global tensors and the slice of each it wants.
 *
 * The conventions of tk_ckpt.h hold (statuses, tk_ckpt_last_error(), row-major
 * tensors, safetensors dtype names). The communicator is passed as an MPI_Fint, the
 * Fortran handle (MPI_Comm_c2f(comm) in C, comm%MPI_VAL or the integer in Fortran,
 * comm.py2f() in mpi4py), so this header does not need mpi.h. MPI must be initialised
 * by the caller; the library calls MPI only on the thread that calls these functions.
 *
 * Collective calls (every rank of the communicator calls them, in the same order):
 * tk_dckpt_open, tk_dckpt_save_async, tk_dckpt_save_lazy, tk_dckpt_wait, tk_dckpt_flush, tk_dckpt_close.
 * The others are local.
 *
 * Tiers: with options.local_dir set (a node-local disk, $SLURM_TMPDIR), every rank
 * writes its part there and tk_dckpt_wait commits the step on every node's copy; a
 * background flush then copies it to `dir`, the shared durable directory, where rank 0
 * publishes it once every rank's copy is there. tk_dckpt_flush waits for that,
 * tk_dckpt_flush_status and tk_dckpt_step_lag report it, and tk_dckpt_restore reads
 * this node's copy when it is intact and holds what the rank wants. A library built without MPI answers tk_dckpt_open with
 * TK_CKPT_ERR_UNAVAILABLE.
 */
#ifndef TK_CKPT_DIST_H
#define TK_CKPT_DIST_H

#include "tk_ckpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A Fortran MPI handle (MPI_Fint); int in every MPI implementation of note. */
typedef int tk_dckpt_comm;

/* An open distributed checkpoint directory on one rank. */
typedef struct tk_dckpt tk_dckpt;

/* How a directory is opened; fill with tk_dckpt_options_init() first. */
typedef struct tk_dckpt_options {
  /* Seconds every collective of a commit may take before it fails (default 300). A
   * rank that died or hangs then makes tk_dckpt_wait fail on the others instead of
   * hanging them; see tk_dckpt_wait. */
  double timeout_seconds;
  int32_t threads; /* background threads for checksums and writes (default 2) */
  /* The node-local first tier, or NULL (default): steps are written to `dir` directly.
   * Ranks that see the same directory (same host, device and inode) form a node; it
   * must not be `dir` itself. */
  const char* local_dir;
  /* Keep the newest keep_last steps in `dir`, removing older ones after each
   * publication there (0, the default: keep all). */
  uint32_t keep_last;
  /* Bytes of staging memory each rank allocates and touches at open (its share of the
   * state, each slice rounded up to 4 KiB: copies are page-aligned, so that they go to
   * the disk straight from the pool), so that the job's first save stalls no longer
   * than later ones; the cost moves into tk_dckpt_open (0, the default: the first save
   * allocates). */
  uint64_t staging_bytes;
} tk_dckpt_options;

/* One rank's piece of a global tensor: saved by tk_dckpt_save_async, wanted by
 * tk_dckpt_restore. The piece is the box offsets[d] <= i[d] < offsets[d] + shape[d] of
 * the global tensor, stored row-major in `data` (nbytes = the dtype's size of the
 * box). A tensor held whole by one rank is the box of offset 0 and shape = global
 * shape. */
typedef struct tk_dckpt_slice {
  const char* name;             /* global tensor name */
  const char* dtype;            /* safetensors dtype name ("F32", "BF16", ...) */
  int32_t ndim;                 /* 0 for a scalar */
  const int64_t* global_shape;  /* ndim dimensions of the whole tensor */
  const int64_t* offsets;       /* ndim offsets of the box (NULL: all 0) */
  const int64_t* shape;         /* ndim extents of the box (NULL: the global shape) */
  void* data;                   /* the box's bytes; read by saves, written by restores;
                                   host memory only */
  uint64_t nbytes;              /* must equal the size dtype and shape imply */
  /* Nonzero: every rank that passes this tensor holds the same whole tensor (offsets
   * 0, shape = global shape); it is saved once, by the lowest of those ranks. Ignored
   * by tk_dckpt_restore. */
  int32_t replicated;
} tk_dckpt_slice;

/* What tk_dckpt_wait did on this rank. Times in seconds. */
typedef struct tk_dckpt_stats {
  uint64_t step;
  double stall_seconds;    /* inside tk_dckpt_save_async (or _lazy) on this rank, and
                              blocked in tk_dckpt_snapshot_wait */
  double write_seconds;    /* background: checksums, write and fsync of this rank's part */
  double commit_seconds;   /* inside tk_dckpt_wait: collectives, validation, publication */
  uint64_t written_bytes;  /* bytes this rank wrote (its shard and part) */
  uint64_t step_bytes;     /* tensor bytes of the whole step, all ranks */
} tk_dckpt_stats;

/* Fill `options` with the defaults. */
TK_CKPT_API void tk_dckpt_options_init(tk_dckpt_options* options);

/* Collective. Open checkpoint directory `dir` (created when missing; it must be the
 * same directory, shared, on every rank) for the ranks of `comm`, and store the handle
 * in *out. Rank 0 takes the directory's writer lock and removes steps that a killed job
 * left uncommitted; every rank gets the same status. `options` may be NULL. The
 * communicator is duplicated; the caller's may be freed afterwards. */
TK_CKPT_API int tk_dckpt_open(const char* dir, tk_dckpt_comm comm, const tk_dckpt_options* options,
                              tk_dckpt** out);

/* Collective. Start saving this rank's `count` slices as step `step` (the same step on
 * every rank, above the newest committed one). The data is copied before the call
 * returns, so the caller may modify it at once; checksums and writes run in the
 * background. A rank may pass no slices at all. Each name appears at most once per
 * rank. Every rank must then call tk_dckpt_wait, whatever this call returned: a rank
 * whose slices are malformed (an unknown dtype, a box outside the global shape, an
 * nbytes that does not match) gets that error here AND makes tk_dckpt_wait fail on
 * every rank, so that no step is published. TK_CKPT_ERR_USAGE when a save is already
 * pending on this handle. */
TK_CKPT_API int tk_dckpt_save_async(tk_dckpt* ckpt, uint64_t step, const tk_dckpt_slice* slices,
                                    size_t count);

/* Collective. As tk_dckpt_save_async, but the copy of the slices is taken in the
 * background too: the call returns once the ranks agree, and the caller must leave the
 * slices' memory unchanged until tk_dckpt_snapshot_wait (or tk_dckpt_wait) returns. A
 * training step fits this: start the save before the forward pass and wait for the
 * snapshot before the optimizer updates the weights, so that the copy overlaps the
 * passes. The stall reported by tk_dckpt_wait is the time in this call plus the time
 * blocked in tk_dckpt_snapshot_wait. */
TK_CKPT_API int tk_dckpt_save_lazy(tk_dckpt* ckpt, uint64_t step, const tk_dckpt_slice* slices,
                                   size_t count);

/* Local. Block until the pending save's copy of this rank's slices is taken; after it
 * the caller may modify them. Returns at once after tk_dckpt_save_async, or when no
 * save is pending. */
TK_CKPT_API int tk_dckpt_snapshot_wait(tk_dckpt* ckpt);

/* Collective. Wait for this rank's background work, then commit the step across ranks:
 * rank 0 checks that every rank succeeded and that the slices agree (same dtype and
 * global shape on every rank, boxes inside the global shape, the boxes of a tensor
 * covering it exactly without overlap), publishes the step or removes it, and tells
 * every rank. Every rank returns the same status and message: TK_CKPT_OK when the step
 * is committed, else the first failure naming its rank (TK_CKPT_ERR_USAGE for
 * inconsistent slices, TK_CKPT_ERR_IO for a failed write). *stats may be NULL.
 *
 * Timeout: when a collective does not complete within timeout_seconds (a rank died or
 * hangs), TK_CKPT_ERR_RUNTIME "collective commit timed out"; the handle is then broken
 * (every later call but tk_dckpt_close fails) and the job should end (MPI_Abort). The
 * step is committed or invisible as a whole either way; after a restart
 * tk_dckpt_latest says which. */
TK_CKPT_API int tk_dckpt_wait(tk_dckpt* ckpt, tk_dckpt_stats* stats);

/* Collective. Wait until every step committed so far is on the shared directory (at
 * once without local_dir). Every rank returns the same status: TK_CKPT_OK, or the first
 * failed flush naming its rank ("rank 0: rank 3's part did not reach the shared tier
 * within 300 s ..."); such a step stays on the node-local tier only. */
TK_CKPT_API int tk_dckpt_flush(tk_dckpt* ckpt);

/* Local. Fill *status: the newest step committed (with local_dir: on the node-local
 * tier), the newest on the shared directory, how many steps committed through this
 * handle are not on it yet, and how long the newest committed step has waited for it
 * (its final lag once flushed). */
TK_CKPT_API int tk_dckpt_flush_status(const tk_dckpt* ckpt, tk_ckpt_flush_report* status);

/* Local. The durability lag of step `step`, committed through this handle with
 * local_dir: the seconds from its node-local commit to its publication on the shared
 * directory, in *seconds. TK_CKPT_OK once published; TK_CKPT_NONE while it is still
 * being flushed (*seconds: the wait so far); the flush's error when it failed;
 * TK_CKPT_ERR_USAGE for a step this handle did not commit. */
TK_CKPT_API int tk_dckpt_step_lag(const tk_dckpt* ckpt, uint64_t step, double* seconds);

/* Local. Store the newest step on the shared directory in *step; TK_CKPT_NONE when
 * there is none. Steps not yet flushed from the node-local tier are not counted: a job
 * that resumes on other nodes could not read them (call tk_dckpt_flush before a job
 * ends, as a requeued job's last save should). */
TK_CKPT_API int tk_dckpt_latest(const tk_dckpt* ckpt, uint64_t* step);

/* Local. Store the number of ranks that saved step `step` in *world_size. */
TK_CKPT_API int tk_dckpt_step_world_size(const tk_dckpt* ckpt, uint64_t step, uint64_t* world_size);

/* Local (needs no other rank). Read into each wanted slice's buffer the box it names
 * of its global tensor from step `step`, whatever number of ranks and slicing saved
 * it: only the saved bytes that overlap the box are read, in 1 MiB blocks whose XXH3
 * is checked (docs/CHECKPOINT.md). With local_dir, from this node's copy when it holds
 * the same step and every shard the boxes need, and otherwise (or when reading it
 * fails) from the shared directory. `replicated` is ignored. TK_CKPT_ERR_USAGE for a
 * malformed descriptor or a dtype or global shape that differs from the saved one;
 * TK_CKPT_ERR_INVALID_INPUT when the step or tensor does not exist, a part of the box
 * was not saved (names the uncovered box), or a checksum does not match. */
TK_CKPT_API int tk_dckpt_restore(const tk_dckpt* ckpt, uint64_t step, const tk_dckpt_slice* wanted,
                                 size_t count);

/* Collective. Wait for a pending save (and commit it, as tk_dckpt_wait, unless the
 * handle is broken) and for the flushes of committed steps, then release the handle
 * and, on rank 0, the lock. NULL is a no-op. Returns the pending save's status. */
TK_CKPT_API int tk_dckpt_close(tk_dckpt* ckpt);

#ifdef __cplusplus
}
#endif

#endif /* TK_CKPT_DIST_H */
