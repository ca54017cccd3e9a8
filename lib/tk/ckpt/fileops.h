// File-system steps of the commit protocol, each checked and each passing through the
// fault hook (checkpoint.h), so that tests can fail any write, fsync or rename.
// Everything that creates, renames or removes an entry of a checkpoint directory does
// so relative to a directory descriptor, never following a symbolic link
// (tk/io/dir_fd.h): a tier may be shared, and whoever else can write it must not be
// able to point a writer's deletes or writes outside it. Internal to lib/tk/ckpt.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tk/ckpt/checkpoint.h"
#include "tk/io/dir_fd.h"

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
File create_file(const io::DirFd& dir, const std::string& name);  // O_CREAT|O_EXCL|O_NOFOLLOW
File open_read(const std::string& path);
void write_all(File& file, std::span<const uint8_t> bytes);  // whole span, in pieces
void pread_all(const File& file, uint64_t offset, std::span<uint8_t> out, const char* what);
uint64_t file_size(const File& file);
void fsync_file(File& file);
void fsync_dir(const io::DirFd& dir);
// renameat: entry `from` of `from_dir` to `to` in `to_dir`.
void rename_at(const io::DirFd& from_dir, const std::string& from, const io::DirFd& to_dir, const std::string& to);
void make_dirs(const std::string& dir);        // like mkdir -p
// Remove entry `name` of `dir` and everything below it without following a link;
// best effort, never throws.
void remove_tree(const io::DirFd& dir, const std::string& name) noexcept;
bool exists(const std::string& path);
bool is_dir(const std::string& path);
std::vector<std::string> list_dir(const std::string& dir);  // names, sorted; throws kIo

// Write `bytes` to entry `name` of `dir` atomically and durably: temp file beside it
// (created exclusively), fsync, rename, fsync of the directory.
void write_file_atomic(const io::DirFd& dir, const std::string& name, std::span<const uint8_t> bytes);
std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes);

// A suffix unique to this process and call: "<pid>-<counter>-<random>".
std::string unique_suffix();

// Hold an exclusive flock on DIR/.lock for the object's lifetime, writing this
// process's pid into it. Throws kUsage naming the holder's pid when another process
// holds it, kInvalidInput when DIR/.lock is not a lone regular file (a planted
// symbolic or hard link: the pid is never written through it).
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
