#include "tk/codec/store_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <random>

#include "tk/core/error.h"

namespace tk::codec::store_fs {

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Close now, reporting the error (a close can fail on network file systems).
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

void write_all(int fd, std::span<const uint8_t> bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    size_t n = std::min<size_t>(bytes.size() - done, size_t{1} << 30);
    ssize_t w = ::write(fd, bytes.data() + done, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw errno_error("failed to write", path, errno);
    }
    done += static_cast<size_t>(w);
  }
}

std::string parent_dir(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

void publish_file(const std::string& temp, const std::string& target, std::span<const uint8_t> bytes,
                  bool sync_dir) {
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw errno_error("failed to create", temp, errno);
  try {
    write_all(fd.get(), bytes, temp);
    if (::fsync(fd.get()) != 0) throw errno_error("failed to fsync", temp, errno);
    if (fd.close() != 0) throw errno_error("failed to close", temp, errno);
    if (::rename(temp.c_str(), target.c_str()) != 0) throw errno_error("failed to rename to " + target, temp, errno);
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  if (sync_dir) fsync_dir(parent_dir(target));
}

std::optional<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw errno_error("failed to open for reading", path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw errno_error("failed to stat", path, errno);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) throw invalid_input("file too large (" + std::to_string(size) + " bytes)", path);
  std::vector<uint8_t> out(size);
  size_t done = 0;
  while (done < out.size()) {
    ssize_t r = ::pread(fd.get(), out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw errno_error("failed to read", path, errno);
    }
    if (r == 0) break;  // shrunk meanwhile: the caller's checks will see a short file
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

std::optional<std::vector<uint8_t>> read_prefix(const std::string& path, size_t n) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw errno_error("failed to open for reading", path, errno);
  }
  std::vector<uint8_t> out(n);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd.get(), out.data() + done, n - done, static_cast<off_t>(done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw errno_error("failed to read", path, errno);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

std::optional<uint64_t> file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return;
  if (errno == EEXIST && is_dir(dir)) return;
  throw errno_error("failed to create directory", dir, errno);
}

void fsync_dir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) throw errno_error("failed to open directory", dir, errno);
  if (::fsync(fd.get()) != 0) throw errno_error("failed to fsync directory", dir, errno);
}

bool remove_file(const std::string& path) {
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  throw errno_error("failed to remove", path, errno);
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return names;
    throw errno_error("failed to list directory", dir, errno);
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string unique_name() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  thread_local std::mt19937_64 rng(salt ^ static_cast<uint64_t>(::getpid()));
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)) + "-" +
         std::to_string(rng() & 0xffffffffu);
}

StoreLock::StoreLock(const std::string& path, Mode mode) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw errno_error("failed to open lock file", path, errno);
  int op = mode == Mode::kShared ? LOCK_SH : LOCK_EX;
  while (::flock(fd_, op) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw errno_error("failed to lock", path, err);
  }
}

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace tk::codec::store_fs
