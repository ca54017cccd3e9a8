#include "tk/io/dir_fd.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "tk/core/error.h"

namespace tk::io {

namespace {

EntryType type_of(mode_t mode) {
  if (S_ISREG(mode)) return EntryType::kFile;
  if (S_ISDIR(mode)) return EntryType::kDirectory;
  if (S_ISLNK(mode)) return EntryType::kSymlink;
  return EntryType::kOther;
}

const char* type_noun(EntryType t) {
  switch (t) {
    case EntryType::kFile: return "a regular file";
    case EntryType::kDirectory: return "a directory";
    case EntryType::kSymlink: return "a symbolic link";
    case EntryType::kOther: return "a special file";
  }
  return "something else";
}

// Every name is one component of this directory: nothing that could climb out.
const std::string& component(const std::string& name, const std::string& dir) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw invalid_input("not a name inside the directory: '" + name + "'", dir);
  return name;
}

Error unexpected_entry(const char* expected, EntryType found, const std::string& path) {
  return invalid_input(std::string("expected ") + expected + ", found " + type_noun(found), path);
}

}  // namespace

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    error_ = other.error_;
    other.fd_ = -1;
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

int Fd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

int Fd::close() {
  int rc = ::close(fd_);
  fd_ = -1;
  return rc;
}

DirFd DirFd::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOTDIR) throw invalid_input("not a directory", path);
    throw errno_error(err == ENOENT ? "no such directory" : "failed to open directory", path, err);
  }
  return DirFd(Fd(fd), path);
}

std::string DirFd::child_path(const std::string& name) const {
  if (path_.empty() || path_.ends_with('/')) return path_ + name;
  return path_ + "/" + name;
}

std::optional<EntryType> DirFd::type(const std::string& name) const {
  struct stat st {};
  if (::fstatat(fd(), component(name, path_).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return type_of(st.st_mode);
  if (errno == ENOENT) return std::nullopt;
  throw errno_error("failed to stat", child_path(name), errno);
}

std::optional<uint64_t> DirFd::file_size(const std::string& name) const {
  struct stat st {};
  if (::fstatat(fd(), component(name, path_).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw errno_error("failed to stat", child_path(name), errno);
  }
  if (!S_ISREG(st.st_mode)) throw unexpected_entry("a regular file", type_of(st.st_mode), child_path(name));
  return static_cast<uint64_t>(st.st_size);
}

std::optional<DirFd> DirFd::open_dir(const std::string& name) const {
  int fd = ::openat(this->fd(), component(name, path_).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) return DirFd(Fd(fd), child_path(name));
  int err = errno;
  if (err == ENOENT) return std::nullopt;
  if (err == ENOTDIR || err == ELOOP) {
    auto t = type(name);
    if (!t) return std::nullopt;  // removed meanwhile
    throw unexpected_entry("a directory", *t, child_path(name));
  }
  throw errno_error("failed to open directory", child_path(name), err);
}

DirFd DirFd::make_dir(const std::string& name) const {
  if (::mkdirat(fd(), component(name, path_).c_str(), 0755) != 0 && errno != EEXIST)
    throw errno_error("failed to create directory", child_path(name), errno);
  auto d = open_dir(name);
  if (!d) throw errno_error("failed to open directory", child_path(name), ENOENT);
  return std::move(*d);
}

Fd DirFd::open_file(const std::string& name, int flags, mode_t mode) const {
  int fd = ::openat(this->fd(), component(name, path_).c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
  if (fd < 0) {
    int err = errno;
    if (err == ELOOP || err == EISDIR) {
      if (auto t = type(name)) throw unexpected_entry("a regular file", *t, child_path(name));
    }
    return Fd(-1, err);
  }
  Fd f(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw errno_error("failed to stat", child_path(name), errno);
  if (!S_ISREG(st.st_mode)) throw unexpected_entry("a regular file", type_of(st.st_mode), child_path(name));
  // Back to blocking I/O: O_NONBLOCK was only there to keep the open itself from blocking.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return f;
}

Fd DirFd::create_file(const std::string& name, mode_t mode) const {
  int fd = ::openat(this->fd(), component(name, path_).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) throw errno_error("failed to create", child_path(name), errno);
  return Fd(fd);
}

Fd DirFd::open_lock_file(const std::string& name, bool create) const {
  Fd f = open_file(name, create ? O_RDWR | O_CREAT : O_RDONLY);
  if (!f.valid()) return f;
  struct stat st {};
  if (::fstat(f.fd(), &st) != 0) throw errno_error("failed to stat", child_path(name), errno);
  if (st.st_nlink != 1)
    throw invalid_input("lock file has " + std::to_string(st.st_nlink) + " links (a hard link to another file?)",
                        child_path(name));
  return f;
}

void DirFd::rename(const std::string& from, const DirFd& dest, const std::string& to) const {
  if (::renameat(fd(), component(from, path_).c_str(), dest.fd(), component(to, dest.path_).c_str()) != 0)
    throw errno_error("failed to rename to " + dest.child_path(to), child_path(from), errno);
}

bool DirFd::unlink(const std::string& name) const {
  if (::unlinkat(fd(), component(name, path_).c_str(), 0) == 0) return true;
  if (errno == ENOENT) return false;
  throw errno_error("failed to remove", child_path(name), errno);
}

bool DirFd::remove_tree(const std::string& name) const {
  auto t = type(name);
  if (!t) return false;
  if (*t == EntryType::kDirectory) {
    // Opened with O_NOFOLLOW: if the entry was swapped for a symlink since the stat,
    // open_dir refuses it rather than descend into what it points at.
    if (auto sub = open_dir(name))
      for (const std::string& child : sub->list()) sub->remove_tree(child);
    if (::unlinkat(fd(), name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return true;
    throw errno_error("failed to remove directory", child_path(name), errno);
  }
  return unlink(name);
}

std::vector<std::string> DirFd::list() const {
  std::vector<std::string> names;
  // fdopendir takes the descriptor it is given; a duplicate keeps ours open.
  int dup = ::openat(fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup < 0) throw errno_error("failed to list directory", path_, errno);
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    int err = errno;
    ::close(dup);
    throw errno_error("failed to list directory", path_, err);
  }
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void DirFd::fsync() const {
  if (::fsync(fd()) != 0) throw errno_error("failed to fsync directory", path_, errno);
}

std::vector<uint8_t> read_fd(int fd, uint64_t max_bytes, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw errno_error("failed to stat", path, errno);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) throw invalid_input("file too large (" + std::to_string(size) + " bytes)", path);
  std::vector<uint8_t> out(size);
  size_t done = 0;
  while (done < out.size()) {
    ssize_t r = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw errno_error("failed to read", path, errno);
    }
    if (r == 0) break;  // shrunk meanwhile: the caller's checks see a short file
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

void write_fd(int fd, const uint8_t* bytes, size_t size, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    size_t n = std::min(size - done, kMaxWriteCall);
    ssize_t w = ::write(fd, bytes + done, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw errno_error("failed to write", path, errno);
    }
    if (w == 0) throw errno_error("failed to write", path, ENOSPC);
    done += static_cast<size_t>(w);
  }
}

}  // namespace tk::io
