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
#include "tk/core/buffer.h"
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

// O_DIRECT wants the memory, the file offset and the length aligned to the device's
// logical block: 4096 covers 512- and 4096-byte devices.
inline constexpr size_t kDirectAlignment = 4096;

// Appends to a file just created, through O_DIRECT where the file system takes it: the
// bytes go from memory to the device in page-aligned blocks, past the page cache, so
// a save neither waits for page-cache memory (slow to come by on a virtual machine
// whose host has not backed it yet) nor evicts what the job has cached. Where O_DIRECT
// is refused (tmpfs on older kernels, some network file systems) or the environment
// sets TK_CKPT_DIRECT=0, plain writes, and the written pages are dropped from the
// cache once durable. Bytes that start page-aligned in memory at a page-aligned point
// of the file go to the device straight from the caller's memory; the rest through
// the block. Each write passes the fault hook.
class StreamWriter {
 public:
  explicit StreamWriter(File& file);
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;
  void append(std::span<const uint8_t> bytes);
  // Write what is left, set the file's size to the bytes appended, fsync.
  void finish();
  bool direct() const { return direct_; }

 private:
  void write_block();  // the block's bytes, padded to the alignment
  // One write of `n` bytes (`padded` sent while direct) after those written so far.
  void put(const uint8_t* data, size_t n, size_t padded);
  void stop_direct();  // the file system took the flag but refuses the writes

  File& file_;
  bool direct_ = false;
  Buffer block_;  // kDirectBlock bytes, page-aligned
  size_t filled_ = 0;    // bytes waiting in the block
  uint64_t flushed_ = 0;  // bytes written before them
  uint64_t size_ = 0;     // bytes appended
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
