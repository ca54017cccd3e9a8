// File-system steps of the model store: durable atomic publication (temporary file in
// the store, fsync, rename, fsync of the directory) and the store lock. Internal to
// lib/tk/codec.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tk::codec::store_fs {

// Write `bytes` to `temp` (created exclusively), fsync it and rename it to `target`;
// then fsync the target's directory unless `sync_dir` is false (the caller fsyncs it
// once for many files). Renaming over an existing target is allowed: objects are
// content-addressed, so whatever is there holds the same bytes. The temporary file is
// removed on failure. Throws kIo.
void publish_file(const std::string& temp, const std::string& target, std::span<const uint8_t> bytes,
                  bool sync_dir = true);

// Read a whole file of at most `max_bytes` bytes. nullopt when it does not exist;
// throws kIo on other failures and kInvalidInput when it is larger than `max_bytes`.
std::optional<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes);

// Read the first `n` bytes of a file (fewer when it is shorter); nullopt when it does
// not exist. Throws kIo on other failures.
std::optional<std::vector<uint8_t>> read_prefix(const std::string& path, size_t n);

// Size of a regular file, nullopt when it does not exist.
std::optional<uint64_t> file_size(const std::string& path);
bool exists(const std::string& path);
bool is_dir(const std::string& path);

void make_dir(const std::string& dir);  // one level; an existing directory is fine; kIo
void fsync_dir(const std::string& dir); // kIo
// Remove a file; false when it did not exist. Throws kIo on other failures.
bool remove_file(const std::string& path);
// Names in `dir` (no "." or ".."), sorted; an empty list when `dir` does not exist.
std::vector<std::string> list_dir(const std::string& dir);

// A name unique to this process and call, for temporary files: "<pid>-<n>-<random>".
std::string unique_name();

// A flock on a lock file, held for the object's lifetime: shared for readers and
// writers that only add, exclusive for what deletes. Blocks until granted.
class StoreLock {
 public:
  enum class Mode { kShared, kExclusive };
  StoreLock(const std::string& path, Mode mode);
  ~StoreLock();
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tk::codec::store_fs
