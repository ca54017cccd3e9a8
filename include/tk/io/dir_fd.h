// A directory held open by descriptor, and the steps that read, write and delete inside
// it without following a symbolic link. Every name is one path component resolved
// relative to the descriptor with O_NOFOLLOW (openat, mkdirat, renameat, unlinkat), so
// an entry planted in a shared directory (a model store, a checkpoint tier) by someone
// else who can write it is refused, or removed as a name, but never followed out of the
// tree. Errors name the entry's path (the directory's path as opened, then the name).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tk::io {

// An owned file descriptor, closed on destruction. An invalid one (fd() < 0) carries
// the errno of the open that failed.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd, int error = 0) : fd_(fd), error_(error) {}
  Fd(Fd&& other) noexcept : fd_(other.fd_), error_(other.error_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept;
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int error() const { return error_; }
  // Give up ownership; the caller closes the descriptor.
  int release();
  // Close now and return close()'s result (a close can fail on network file systems).
  int close();

 private:
  int fd_ = -1;
  int error_ = 0;
};

enum class EntryType { kFile, kDirectory, kSymlink, kOther };

class DirFd {
 public:
  DirFd() = default;
  // Open the directory at `path`. The path is the caller's (symbolic links in it are
  // followed); nothing below it is. Throws kIo when it cannot be opened (ENOENT: "no
  // such directory") and kInvalidInput when it is not a directory.
  static DirFd open(const std::string& path);

  DirFd(DirFd&&) noexcept = default;
  DirFd& operator=(DirFd&&) noexcept = default;

  int fd() const { return fd_.fd(); }
  const std::string& path() const { return path_; }
  // `path()/name`, for messages.
  std::string child_path(const std::string& name) const;

  // The type of entry `name`, not following it; nullopt when there is none.
  std::optional<EntryType> type(const std::string& name) const;
  // Size of regular file `name`; nullopt when there is none. Throws kInvalidInput when
  // the entry is not a regular file.
  std::optional<uint64_t> file_size(const std::string& name) const;

  // Open subdirectory `name`; nullopt when there is none. Throws kInvalidInput naming
  // it when the entry is a symbolic link or not a directory.
  std::optional<DirFd> open_dir(const std::string& name) const;
  // As open_dir, creating the directory (mode 0755) when it is missing.
  DirFd make_dir(const std::string& name) const;

  // Open regular file `name` with `flags` (O_RDONLY, or O_RDWR|O_CREAT, ...; O_NOFOLLOW,
  // O_CLOEXEC and O_NONBLOCK are added, so a planted FIFO cannot block the open). A
  // failed open returns an invalid Fd carrying errno; an entry that is a symbolic link
  // or not a regular file throws kInvalidInput naming it.
  Fd open_file(const std::string& name, int flags, mode_t mode = 0644) const;
  // Create file `name` for writing, exclusively (O_CREAT|O_EXCL|O_NOFOLLOW). Throws kIo.
  Fd create_file(const std::string& name, mode_t mode = 0644) const;
  // Open `name` as a lock file: an existing regular file with exactly one link (a hard
  // link to some other file is refused like a symbolic link), opened read-write and
  // created when `create`, read-only otherwise. A failed open returns an invalid Fd
  // carrying errno; an entry that is not a lone regular file throws kInvalidInput.
  Fd open_lock_file(const std::string& name, bool create) const;

  // Rename entry `from` of this directory to `to` in `dest` (renameat: neither name is
  // followed; an entry at `to` is replaced as a name). Throws kIo.
  void rename(const std::string& from, const DirFd& dest, const std::string& to) const;
  // Remove entry `name` that is not a directory (a symbolic link is removed, never its
  // target); false when there is none. Throws kIo.
  bool unlink(const std::string& name) const;
  // Remove `name` and, when it is a directory, everything below it, descending only
  // through directories opened with O_NOFOLLOW; false when there is none. Throws kIo.
  bool remove_tree(const std::string& name) const;
  // Names of the entries, sorted, without "." and "..". Throws kIo.
  std::vector<std::string> list() const;
  void fsync() const;  // kIo

 private:
  DirFd(Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  Fd fd_;
  std::string path_;
};

// Read the whole regular file open at `fd` (at most `max_bytes`; kInvalidInput beyond),
// `path` naming it in errors. Throws kIo when a read fails.
std::vector<uint8_t> read_fd(int fd, uint64_t max_bytes, const std::string& path);
// The most one write(2) is given. Larger calls into the page cache ran 4-8x slower here
// (writing 660 MB from 13 MiB buffers: 0.6-1.0 GB/s in one call per buffer, 4.7 GB/s in
// 1 MiB calls, docs/BENCHMARKS.md), and the coded data is no less in cache for it.
inline constexpr size_t kMaxWriteCall = size_t{1} << 20;

// Write all of `bytes` to `fd`, retrying short writes, kMaxWriteCall at a time. Throws kIo.
void write_fd(int fd, const uint8_t* bytes, size_t size, const std::string& path);

}  // namespace tk::io
