#include "tk/store/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <random>

#include "tk/core/error.h"
#include "tk/core/mapped_files.h"

namespace tk::store::files {

namespace {

constexpr const char* kLockName = "lock";

// The store cannot be written by this user or on this mount.
bool not_writable(int err) { return err == EACCES || err == EROFS || err == EPERM; }

std::optional<io::Fd> open_existing(const io::DirFd& dir, const std::string& name) {
  io::Fd fd = dir.open_file(name, O_RDONLY);
  if (fd.valid()) return fd;
  if (fd.error() == ENOENT) return std::nullopt;
  throw errno_error("failed to open for reading", dir.child_path(name), fd.error());
}

}  // namespace

void publish_file(const io::DirFd& temp_dir, const std::string& temp_name, const io::DirFd& target_dir,
                  const std::string& target, std::span<const uint8_t> bytes, bool sync_dir) {
  io::Fd fd = temp_dir.create_file(temp_name);
  const std::string temp_path = temp_dir.child_path(temp_name);
  try {
    io::write_fd(fd.fd(), bytes.data(), bytes.size(), temp_path);
    if (::fsync(fd.fd()) != 0) throw errno_error("failed to fsync", temp_path, errno);
    if (fd.close() != 0) throw errno_error("failed to close", temp_path, errno);
    check_mapped_files();  // nothing computed from a truncated input is published
    temp_dir.rename(temp_name, target_dir, target);
  } catch (...) {
    ::unlinkat(temp_dir.fd(), temp_name.c_str(), 0);
    throw;
  }
  if (sync_dir) target_dir.fsync();
}

std::optional<std::vector<uint8_t>> read_file(const io::DirFd& dir, const std::string& name, uint64_t max_bytes) {
  auto fd = open_existing(dir, name);
  if (!fd) return std::nullopt;
  return io::read_fd(fd->fd(), max_bytes, dir.child_path(name));
}

std::optional<std::vector<uint8_t>> read_prefix(const io::DirFd& dir, const std::string& name, size_t n) {
  auto fd = open_existing(dir, name);
  if (!fd) return std::nullopt;
  std::vector<uint8_t> out(n);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd->fd(), out.data() + done, n - done, static_cast<off_t>(done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw errno_error("failed to read", dir.child_path(name), errno);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

std::string unique_name() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  thread_local std::mt19937_64 rng(salt ^ static_cast<uint64_t>(::getpid()));
  return std::to_string(::getpid()) + '-' + std::to_string(counter.fetch_add(1)) + '-' +
         std::to_string(rng() & 0xffffffffu);
}

StoreLock::StoreLock(const io::DirFd& root, Mode mode) {
  const std::string path = root.child_path(kLockName);
  fd_ = root.open_lock_file(kLockName, true);
  if (!fd_.valid() && mode == Mode::kRead && not_writable(fd_.error())) {
    // A reader of a store it cannot write: a shared lock on a read-only descriptor
    // when the lock file exists, no lock when even that cannot be had.
    fd_ = root.open_lock_file(kLockName, false);
    if (!fd_.valid() && (fd_.error() == ENOENT || not_writable(fd_.error()))) return;
  }
  if (!fd_.valid()) throw errno_error("failed to open lock file", path, fd_.error());
  int op = mode == Mode::kExclusive ? LOCK_EX : LOCK_SH;
  while (::flock(fd_.fd(), op) != 0) {
    if (errno == EINTR) continue;
    throw errno_error("failed to lock", path, errno);
  }
}

NameLock::NameLock(const io::DirFd& manifests) {
  constexpr const char* kName = ".lock";
  fd_ = manifests.open_lock_file(kName, true);
  if (!fd_.valid()) throw errno_error("failed to open lock file", manifests.child_path(kName), fd_.error());
  while (::flock(fd_.fd(), LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    throw errno_error("failed to lock", manifests.child_path(kName), errno);
  }
}

}  // namespace tk::store::files
