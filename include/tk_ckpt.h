/* C interface of the tensorkit checkpoint engine (libtkckpt).
 *
 * Plain C99, usable from C and C++, from Fortran through ISO_C_BINDING (module
 * tk_ckpt, tk_ckpt.f90) and from Python through ctypes. It wraps
 * tk::ckpt::Checkpointer (checkpoint.h), which describes the directory layout and the
 * commit protocol.
 *
 * Conventions:
 * - Every function that can fail returns an int status: TK_CKPT_OK (0) on success, a
 *   positive TK_CKPT_ERR_* code on failure, TK_CKPT_NONE (-1) where a query found
 *   nothing (not an error). The codes are the exit codes of the tensorkit tools.
 * - On failure, tk_ckpt_last_error() returns a one-line message, "WHAT (WHERE)", kept
 *   per thread until the thread's next failing call. Out-parameters are left unchanged.
 * - Nothing here exits, prints or lets an exception escape.
 * - Tensors are row-major (C order). A Fortran array a(n1, n2) is the tensor of shape
 *   [n2, n1]. Dtypes are safetensors names: "F32", "BF16", "I64", "U8", ...
 * - Tensor data may live in CUDA device memory (told apart with
 *   cudaPointerGetAttributes). A save copies it to pinned host memory on a stream of
 *   its own, after the work queued so far on the device's legacy default stream, and
 *   work queued there afterwards waits for the copies on the device; a restore fills
 *   it. Work on non-blocking streams must be finished before the save and must not
 *   write the tensors before tk_ckpt_wait returns (docs/CHECKPOINT.md).
 * - Strings are NUL-terminated UTF-8. Counts are size_t, steps and byte counts
 *   uint64_t.
 * - A handle is used by one thread at a time; different handles are independent.
 */
#ifndef TK_CKPT_H
#define TK_CKPT_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define TK_CKPT_API
#else
#define TK_CKPT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this interface. The major number changes when a change breaks callers;
 * compare with tk_ckpt_version() to check that the loaded library matches. */
#define TK_CKPT_VERSION_MAJOR 1
#define TK_CKPT_VERSION_MINOR 0
#define TK_CKPT_VERSION_PATCH 0
#define TK_CKPT_VERSION \
  (TK_CKPT_VERSION_MAJOR * 10000 + TK_CKPT_VERSION_MINOR * 100 + TK_CKPT_VERSION_PATCH)

/* Status codes. */
enum {
  TK_CKPT_OK = 0,
  TK_CKPT_NONE = -1,                /* nothing found (no step yet, no such key) */
  TK_CKPT_ERR_RUNTIME = 1,          /* the operation ran but could not succeed */
  TK_CKPT_ERR_USAGE = 2,            /* bad argument, wrong step, read-only handle, lock held */
  TK_CKPT_ERR_INVALID_INPUT = 3,    /* corrupt or missing data, dtype/shape mismatch */
  TK_CKPT_ERR_IO = 4,               /* the operating system failed a read, write, fsync, rename */
  TK_CKPT_ERR_UNAVAILABLE = 5,      /* out of memory, missing feature */
  TK_CKPT_ERR_INTERNAL = 70         /* a bug in the library */
};

/* Values of tk_ckpt_options.compression. */
enum {
  TK_CKPT_COMPRESSION_NONE = 0,     /* tensors stored as they are */
  TK_CKPT_COMPRESSION_LOSSLESS = 1  /* byte-grouped entropy coding, bit-exact */
};

/* Flags of tk_ckpt_save_async(). */
enum {
  /* Do not copy: the caller must not modify the tensors' memory, nor free it, until
   * tk_ckpt_wait() for this save returns. Without it the data is copied into the
   * staging pool and the caller may reuse its memory once save_async returns. Device
   * memory is copied either way; its copies are queued, not waited for. */
  TK_CKPT_BORROW = 1
};

/* An open checkpoint directory. */
typedef struct tk_ckpt tk_ckpt;
/* One committed step's manifest, read once (see tk_ckpt_step_open). */
typedef struct tk_ckpt_step tk_ckpt_step;

/* How a directory is opened; fill with tk_ckpt_options_init() first. Fields mirror
 * tk::ckpt::Options. */
typedef struct tk_ckpt_options {
  int32_t read_only;        /* nonzero: no lock, no cleanup, saves refused */
  const char* durable_dir;  /* second tier, copied in the background; NULL or "" = none */
  uint32_t keep_last;       /* retention: keep the newest N steps (0 = all) */
  uint32_t keep_every;      /* ... and every step divisible by N (0 = none) */
  int32_t compression;      /* TK_CKPT_COMPRESSION_* */
  int32_t incremental;      /* nonzero: store only what changed since the last full step */
  uint32_t full_every;      /* incremental: every N-th save is full (default 10) */
  double delta_max_ratio;   /* incremental: largest XOR-delta size / tensor size (0.5) */
  uint64_t staging_limit;   /* bytes of copy-mode snapshots held at once (0 = automatic) */
  uint64_t shard_bytes;     /* split a step's data into shards of about N bytes (0 = one) */
  int32_t threads;          /* background threads (default 2) */
} tk_ckpt_options;

/* One tensor: saved from, restored into or described by a step. */
typedef struct tk_ckpt_tensor {
  const char* name;
  const char* dtype;     /* safetensors dtype name, e.g. "F32", "BF16" */
  int32_t ndim;          /* 0 for a scalar */
  const int64_t* shape;  /* ndim dimensions, row-major (outermost first) */
  void* data;            /* nbytes of tensor data; read by saves, written by restores;
                          host memory or, in a CUDA build, device memory */
  uint64_t nbytes;       /* must equal the size that dtype and shape imply */
} tk_ckpt_tensor;

/* What one save did (tk_ckpt_wait, tk_ckpt_save). Times in seconds. */
typedef struct tk_ckpt_save_stats {
  uint64_t step;
  double stall_seconds;         /* time spent inside save_async */
  double write_seconds;         /* background: encode, checksum, write and fsync */
  double commit_seconds;        /* manifest, renames and directory fsyncs */
  uint64_t logical_bytes;       /* tensor bytes in the step */
  uint64_t written_bytes;       /* bytes written to the main tier */
  uint64_t tensors_stored;      /* stored whole (raw or compressed) */
  uint64_t tensors_referenced;  /* incremental: unchanged, taken from the parent */
  uint64_t tensors_delta;       /* incremental: stored as an XOR delta */
} tk_ckpt_save_stats;

/* A step as its manifest describes it (tk_ckpt_step_info). */
typedef struct tk_ckpt_step_summary {
  uint64_t step;
  uint64_t tensors;        /* number of tensors: indices for tk_ckpt_step_tensor */
  uint64_t logical_bytes;  /* tensor bytes when restored */
  uint64_t stored_bytes;   /* shard and manifest bytes on disk */
  int32_t has_parent;      /* incremental step: parent holds the full step it refers to */
  uint64_t parent;
  int32_t durable;         /* also committed on the durable tier */
  const char* created;     /* ISO 8601 UTC; valid until tk_ckpt_step_close */
} tk_ckpt_step_summary;

/* What tk_ckpt_gc removed. */
typedef struct tk_ckpt_gc_report {
  uint64_t removed_steps;
  uint64_t removed_temp_dirs;
  uint64_t bytes_freed;
} tk_ckpt_gc_report;

/* Progress of the durable tier (tk_ckpt_flush_status). */
typedef struct tk_ckpt_flush_report {
  int32_t has_latest_committed;  /* nonzero when the main tier holds a step */
  uint64_t latest_committed;
  int32_t has_latest_durable;    /* nonzero when the durable tier holds a step */
  uint64_t latest_durable;
  uint64_t pending;              /* steps waiting to be copied */
  double lag_seconds;            /* how long the newest step has waited (0 when flushed) */
} tk_ckpt_flush_report;

/* ---- library ---- */

/* Return TK_CKPT_VERSION as the loaded library was built with it. */
TK_CKPT_API int tk_ckpt_version(void);

/* Return the message of the calling thread's last failed call ("" when none). The
 * string stays valid until the thread's next failed call. */
TK_CKPT_API const char* tk_ckpt_last_error(void);

/* Fill `options` with the defaults (as tk::ckpt::Options). */
TK_CKPT_API void tk_ckpt_options_init(tk_ckpt_options* options);

/* ---- opening and closing ---- */

/* Open checkpoint directory `dir` (created when writing) and store the handle in
 * *out. `options` may be NULL for the defaults. A writer takes the directory's lock:
 * TK_CKPT_ERR_USAGE naming the holder's pid when another writer has it (also in this
 * process). TK_CKPT_ERR_INVALID_INPUT when `dir` is not a checkpoint directory,
 * TK_CKPT_ERR_IO when it cannot be created or read. */
TK_CKPT_API int tk_ckpt_open(const char* dir, const tk_ckpt_options* options, tk_ckpt** out);

/* Wait for every pending save and flush, then release the handle and its lock (NULL is
 * a no-op). Return the error of a failed flush to the durable tier; errors of saves
 * nobody waited for are dropped. The handle is released either way. */
TK_CKPT_API int tk_ckpt_close(tk_ckpt* ckpt);

/* ---- saving ---- */

/* Start saving `count` tensors as step `step` and store a handle for tk_ckpt_wait in
 * *handle. Returns once the snapshot is taken (see TK_CKPT_BORROW in `flags`). Metadata:
 * `meta_count` key/value string pairs (arrays may be NULL when meta_count is 0), stored
 * in the manifest. Steps must increase. TK_CKPT_ERR_USAGE for a read-only handle, a step
 * not above the newest, duplicate or empty names, an unknown dtype or an nbytes that
 * does not match dtype and shape. Errors of the background work come from tk_ckpt_wait. */
TK_CKPT_API int tk_ckpt_save_async(tk_ckpt* ckpt, uint64_t step, const tk_ckpt_tensor* tensors,
                                   size_t count, const char* const* meta_keys,
                                   const char* const* meta_values, size_t meta_count, int flags,
                                   uint64_t* handle);

/* Block until save `handle` is committed on the main tier and fill *stats (may be NULL).
 * Return the save's error if it failed; a failed save leaves no step and every earlier
 * step intact. Each handle is waited for at most once. */
TK_CKPT_API int tk_ckpt_wait(tk_ckpt* ckpt, uint64_t handle, tk_ckpt_save_stats* stats);

/* Save synchronously: as tk_ckpt_save_async followed by tk_ckpt_wait. The tensors are
 * not copied; their memory only needs to stay valid during the call. */
TK_CKPT_API int tk_ckpt_save(tk_ckpt* ckpt, uint64_t step, const tk_ckpt_tensor* tensors,
                             size_t count, const char* const* meta_keys,
                             const char* const* meta_values, size_t meta_count,
                             tk_ckpt_save_stats* stats);

/* Wait for every save and, with a durable tier, every flush. Return the error of a
 * failed flush; a failed save reports its error through tk_ckpt_wait only. */
TK_CKPT_API int tk_ckpt_wait_all(tk_ckpt* ckpt);

/* ---- steps ---- */

/* Store the newest committed step in *step; TK_CKPT_NONE when there is none. */
TK_CKPT_API int tk_ckpt_latest(const tk_ckpt* ckpt, uint64_t* step);

/* Store the number of committed steps in *count and the first min(count, capacity) of
 * them, oldest first, in steps[] (may be NULL when capacity is 0). */
TK_CKPT_API int tk_ckpt_list(const tk_ckpt* ckpt, uint64_t* steps, size_t capacity, size_t* count);

/* Read step `step`'s manifest into a new tk_ckpt_step stored in *out; release it with
 * tk_ckpt_step_close. TK_CKPT_ERR_INVALID_INPUT when the step does not exist or its
 * manifest is damaged. */
TK_CKPT_API int tk_ckpt_step_open(const tk_ckpt* ckpt, uint64_t step, tk_ckpt_step** out);

/* Release a step description (NULL is a no-op). */
TK_CKPT_API void tk_ckpt_step_close(tk_ckpt_step* step);

/* Fill *info with the step's summary. */
TK_CKPT_API int tk_ckpt_step_info(const tk_ckpt_step* step, tk_ckpt_step_summary* info);

/* Describe tensor `index` (0 <= index < info.tensors, manifest order) in *tensor: name,
 * dtype, ndim, shape and nbytes point into `step` and stay valid until
 * tk_ckpt_step_close; data is set to NULL. Allocate nbytes, set data, and pass the
 * descriptor to tk_ckpt_restore_into. TK_CKPT_ERR_USAGE when index is out of range. */
TK_CKPT_API int tk_ckpt_step_tensor(const tk_ckpt_step* step, size_t index, tk_ckpt_tensor* tensor);

/* Store in *value the metadata value saved under `key` (valid until
 * tk_ckpt_step_close); TK_CKPT_NONE when the step has no such key. */
TK_CKPT_API int tk_ckpt_step_metadata(const tk_ckpt_step* step, const char* key, const char** value);

/* ---- restoring and checking ---- */

/* Read step `step` into the caller's buffers, matched by name, checking every
 * checksum. Each target must have the stored dtype and shape and nbytes of writable
 * memory at data. Tensors of the step not listed are skipped. TK_CKPT_ERR_USAGE for a
 * malformed descriptor (no name, unknown dtype, nbytes not matching dtype and shape,
 * NULL data) or a dtype or shape that differs from the stored one.
 * TK_CKPT_ERR_INVALID_INPUT when the step, or a listed name in it, does not exist or a
 * checksum does not match. After a failure the targets' contents are unspecified. */
TK_CKPT_API int tk_ckpt_restore_into(const tk_ckpt* ckpt, uint64_t step,
                                     const tk_ckpt_tensor* targets, size_t count);

/* Check step `step`: manifest checksum, shards present with the recorded sizes, every
 * tensor's checksum. Store the number of problems found in *problems (may be NULL) and
 * the first one, naming the file or tensor, truncated to capacity - 1 bytes and
 * NUL-terminated, in first_problem (may be NULL; capacity 0 leaves it untouched); both
 * are set (to 0 and "") also when the call fails. Return TK_CKPT_OK when the step is
 * sound, TK_CKPT_ERR_INVALID_INPUT when a problem was found (tk_ckpt_last_error() then
 * holds the first one), or the error that kept the step from being checked at all. */
TK_CKPT_API int tk_ckpt_verify(const tk_ckpt* ckpt, uint64_t step, uint64_t* problems,
                               char* first_problem, size_t capacity);

/* ---- maintenance ---- */

/* Apply retention now and remove temp directories left by killed writers; fill
 * *report (may be NULL). */
TK_CKPT_API int tk_ckpt_gc(tk_ckpt* ckpt, tk_ckpt_gc_report* report);

/* Fill *status with the durable tier's progress. */
TK_CKPT_API int tk_ckpt_flush_status(const tk_ckpt* ckpt, tk_ckpt_flush_report* status);

#ifdef __cplusplus
}
#endif

#endif /* TK_CKPT_H */
