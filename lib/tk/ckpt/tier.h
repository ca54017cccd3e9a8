// Operations on a whole checkpoint directory (a tier): checking that a directory is
// one, removing what killed writers left, the `latest` pointer, deleting and copying
// steps with the commit protocol. Internal to lib/tk/ckpt.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tk/ckpt/checkpoint.h"
#include "tk/io/dir_fd.h"

namespace tk::ckpt {

// Throws kInvalidInput when `dir` is not a directory, or holds anything a checkpoint
// directory cannot (an empty directory is fine).
void check_checkpoint_dir(const std::string& dir);
// Remove temp and half-deleted entries ("step-N.tmp-*", "step-N.del-*", "latest.tmp-*",
// step-N without a manifest).
// Only the lock holder may call this. Returns how many were removed.
size_t cleanup_leftovers(const std::string& dir);
// Point `latest` at `step`: written beside it, fsynced, renamed over it, dir fsynced.
void write_latest(const std::string& dir, uint64_t step);
// Make `latest` name the newest committed step (a writer killed between the step's
// rename and the pointer update leaves it one behind); remove it when there is none.
void repair_latest(const std::string& dir);
// The durable tier a writer of `dir` last flushed to, recorded in `dir/durable` (one
// absolute path and a newline, written atomically) so that a listing of `dir` shows it.
void write_durable_record(const std::string& dir, const std::string& durable_dir);
// That path, or nullopt when none is recorded. Throws kInvalidInput for a malformed record.
std::optional<std::string> read_durable_record(const std::string& dir);
// Delete a step: rename it aside first (so it disappears atomically), fsync, then remove.
void remove_step(const std::string& dir, uint64_t step);
// Take back a step whose commit failed after its rename: as remove_step, or, when the
// rename aside fails too, unlink its manifest (which un-commits it) and remove the rest;
// then point `latest` at what is left. Best effort, never throws.
void uncommit_step(const std::string& dir, uint64_t step) noexcept;
// Manifests of every committed step, oldest first: the first that cannot be read
// throws (list_steps), or each is listed with its error (list_steps_each).
std::vector<StepInfo> list_steps(const std::string& dir);
std::vector<StepListing> list_steps_each(const std::string& dir);
// The infos of a listing; throws the first step's error.
std::vector<StepInfo> listed_infos(std::vector<StepListing> listed);
// The steps a step needs to be read: its parent and every step its entries take bytes
// from (references and XOR bases).
std::vector<uint64_t> step_dependencies(const StepInfo& step);
// Commit temp directory `tmp_name` of checkpoint directory `root` as step `step`: write
// `manifest` (manifest.json) into it and fsync it, fsync the temp directory, rename it to
// step-N, fsync `root` and point `latest` at the step. A failure before the rename
// removes the temp directory; one after it takes the step back (uncommit_step). Either
// way the error is rethrown and no step is left behind.
void publish_step(const io::DirFd& root, const std::string& tmp_name, uint64_t step,
                  std::span<const uint8_t> manifest);
// Retention after a publication: remove all but the newest `keep_last` steps of `dir`
// (0: keep all) and what they depend on. Best effort: the new step is committed.
void keep_newest(const std::string& dir, uint32_t keep_last) noexcept;
// Copy file `from` to a new file `to` of `to_dir` (created exclusively) and fsync it.
void copy_file(const std::string& from, const io::DirFd& to_dir, const std::string& to);
// Copy committed step `step` of `from` into `to` with the full commit protocol.
void copy_step(const std::string& from, const std::string& to, uint64_t step);

}  // namespace tk::ckpt
