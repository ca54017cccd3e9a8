// File-system steps of the model store, all relative to directory descriptors that
// never follow a symbolic link (tk/io/dir_fd.h): durable atomic publication (temporary
// file in the store, fsync, rename, fsync of the directory), whole-file reads, and the
// store lock. Internal to lib/tk/store.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tk/io/dir_fd.h"

namespace tk::store::files {

// Write `bytes` to a new file `temp_name` in `temp_dir` (created exclusively, not
// following a link), fsync it and rename it to `target` in `target_dir`; then fsync
// `target_dir` unless `sync_dir` is false (the caller fsyncs it once for many files).
// Renaming over an existing target replaces that name. The temporary file is removed
// on failure. Throws kIo.
void publish_file(const io::DirFd& temp_dir, const std::string& temp_name, const io::DirFd& target_dir,
                  const std::string& target, std::span<const uint8_t> bytes, bool sync_dir = true);

// Read the whole regular file `name` of `dir` (at most `max_bytes`). nullopt when it
// does not exist; kInvalidInput when it is larger or not a regular file; kIo otherwise.
std::optional<std::vector<uint8_t>> read_file(const io::DirFd& dir, const std::string& name, uint64_t max_bytes);

// Read the first `n` bytes of regular file `name` (fewer when it is shorter); nullopt
// when it does not exist. Throws as read_file.
std::optional<std::vector<uint8_t>> read_prefix(const io::DirFd& dir, const std::string& name, size_t n);

// A name unique to this process and call, for temporary files: "<pid>-<n>-<random>".
std::string unique_name();

// A flock on DIR/lock, held for the object's lifetime, blocking until granted:
// shared for add, exclusive for what deletes (rm, gc, verify --repair). kRead is the
// shared lock of a reader (get, ls, stats, verify): when the lock file cannot be
// opened or created because the store is not writable (EACCES, EROFS, EPERM), the
// reader goes on without a lock; see docs/STORE.md for what that allows.
class StoreLock {
 public:
  enum class Mode { kRead, kShared, kExclusive };
  StoreLock(const io::DirFd& root, Mode mode);
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

  bool held() const { return fd_.valid(); }

 private:
  io::Fd fd_;  // closing it releases the flock
};

// An exclusive flock on manifests/.lock, held for the object's lifetime: what makes an
// add's "is this name free, or holding the same file?" and its publish of the manifest
// one step. Adds hold the store lock shared, so that they write objects side by side;
// only the name step is serialised. The name is one no manifest can have (a manifest's
// leading '.' is escaped). Taken only while the store lock is held.
class NameLock {
 public:
  explicit NameLock(const io::DirFd& manifests);
  NameLock(const NameLock&) = delete;
  NameLock& operator=(const NameLock&) = delete;

 private:
  io::Fd fd_;
};

}  // namespace tk::store::files
