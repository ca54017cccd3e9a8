// File-system steps of the commit protocol, each checked and each passing through the
// fault hook (checkpoint.h), so that tests can fail any write, fsync or rename.
// Internal to lib/tk/ckpt.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tk/ckpt/checkpoint.h"

namespace tk::ckpt::fs {

// A file descriptor closed on destruction.
class File {
 public:
  File() = default;
  explicit File(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  File(File&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }
  File& operator=(File&& other) noexcept;
  ~File();
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Throws kIo (with errno) unless the fault hook says otherwise first.
File create_file(const std::string& path);                 // O_WRONLY|O_CREAT|O_EXCL
File open_read(const std::string& path);
void write_all(File& file, std::span<const uint8_t> bytes);  // whole span, in pieces
void pread_all(const File& file, uint64_t offset, std::span<uint8_t> out, const char* what);
uint64_t file_size(const File& file);
void fsync_file(File& file);
void fsync_dir(const std::string& dir);
void rename_path(const std::string& from, const std::string& to);
void make_dir(const std::string& dir);         // one level; existing is fine
void make_dirs(const std::string& dir);        // like mkdir -p
void remove_tree(const std::string& path);     // best effort, never throws
bool exists(const std::string& path);
bool is_dir(const std::string& path);
std::vector<std::string> list_dir(const std::string& dir);  // names, sorted; throws kIo

// Write `bytes` to `path` atomically and durably: temp file beside it, fsync, rename,
// fsync of the directory.
void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);
std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes);

// A suffix unique to this process and call: "<pid>-<counter>-<random>".
std::string unique_suffix();

// Hold an exclusive flock on DIR/.lock for the object's lifetime. Throws kUsage naming
// the holder's pid when another process holds it.
class DirLock {
 public:
  explicit DirLock(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tk::ckpt::fs
