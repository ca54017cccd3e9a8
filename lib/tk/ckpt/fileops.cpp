#include "tk/ckpt/fileops.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include "tk/core/error.h"
#include "tk/io/dir_fd.h"

namespace tk::ckpt {

namespace {

std::mutex g_hook_mutex;
FaultHook g_hook;
// Whether a hook is set: a write, fsync or rename without one pays one relaxed load,
// neither the mutex nor a call.
std::atomic<bool> g_hooked{false};

// The errno to fail this call with, or 0 to let it run.
int injected_fault(FaultPoint point, const std::string& path) {
  if (!g_hooked.load(std::memory_order_acquire)) return 0;
  std::lock_guard<std::mutex> lock(g_hook_mutex);
  return g_hook ? g_hook(point, path) : 0;
}

}  // namespace

void set_fault_hook(FaultHook hook) {
  std::lock_guard<std::mutex> lock(g_hook_mutex);
  g_hook = std::move(hook);
  g_hooked.store(static_cast<bool>(g_hook), std::memory_order_release);
}

namespace fs {

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

File create_file(const io::DirFd& dir, const std::string& name) {
  io::Fd fd = dir.create_file(name);
  return File(fd.release(), dir.child_path(name));
}

File open_read(const std::string& path) {
  // The files of a step are the checkpointer's own: a link or a FIFO in their place was
  // planted. O_NONBLOCK keeps a FIFO from blocking the open; fstat then refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) throw invalid_input("expected a regular file, found a symbolic link", path);
    throw errno_error("failed to open for reading", path, errno);
  }
  File file(fd, path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw errno_error("failed to stat", path, errno);
  if (!S_ISREG(st.st_mode)) throw invalid_input("expected a regular file", path);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return file;
}

void write_all(File& file, std::span<const uint8_t> bytes) {
  // Pieces of at most io::kMaxWriteCall: each is one write() (larger ones into the page
  // cache ran several times slower) and one chance for a fault.
  size_t done = 0;
  while (done < bytes.size()) {
    size_t n = std::min(io::kMaxWriteCall, bytes.size() - done);
    if (int err = injected_fault(FaultPoint::kWrite, file.path())) throw errno_error("failed to write", file.path(), err);
    ssize_t w = ::write(file.fd(), bytes.data() + done, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw errno_error("failed to write", file.path(), errno);
    }
    if (w == 0) throw errno_error("failed to write", file.path(), ENOSPC);
    done += static_cast<size_t>(w);
  }
}

namespace {

constexpr size_t kDirectAlign = fs::kDirectAlignment;
constexpr size_t kDirectBlock = size_t(8) << 20;

// One write(2) of all `n` bytes, retried across signals and short writes. Returns
// 0 or the errno (never one injected: the caller asks the hook once per block).
int write_fully(int fd, const uint8_t* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return ENOSPC;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

}  // namespace

StreamWriter::StreamWriter(File& file) : file_(file) {
  // TK_CKPT_DIRECT=0: plain writes (a file system whose O_DIRECT is slow, say).
  if (const char* env = std::getenv("TK_CKPT_DIRECT"); env && std::strcmp(env, "0") == 0) return;
  const int flags = ::fcntl(file_.fd(), F_GETFL);
  if (flags < 0 || ::fcntl(file_.fd(), F_SETFL, flags | O_DIRECT) != 0) return;
  try {
    block_ = Buffer::allocate(kDirectBlock);  // 2 MiB-aligned at this size (else put() falls back)
  } catch (const Error&) {
    stop_direct();
    return;
  }
  direct_ = true;
}

void StreamWriter::stop_direct() {
  const int flags = ::fcntl(file_.fd(), F_GETFL);
  if (flags >= 0) ::fcntl(file_.fd(), F_SETFL, flags & ~O_DIRECT);
  direct_ = false;
}

void StreamWriter::append(std::span<const uint8_t> bytes) {
  size_ += bytes.size();
  // Pieces written from the caller's memory with O_DIRECT are of at most 64 MiB,
  // each one chance for a fault.
  constexpr size_t kPiece = size_t(64) << 20;
  while (direct_ && !bytes.empty()) {
    const bool aligned = reinterpret_cast<uintptr_t>(bytes.data()) % kDirectAlign == 0;
    size_t n = 0;
    if (aligned && filled_ % kDirectAlign == 0 && bytes.size() >= kDirectAlign) {
      if (filled_ > 0) write_block();  // whole pages: the file stays aligned
      if (!direct_) break;
      n = std::min(bytes.size() / kDirectAlign * kDirectAlign, kPiece);
      put(bytes.data(), n, n);
    } else {
      n = std::min(bytes.size(), kDirectBlock - filled_);
      std::memcpy(block_.mutable_data() + filled_, bytes.data(), n);
      filled_ += n;
      if (filled_ == kDirectBlock) write_block();
    }
    bytes = bytes.subspan(n);
  }
  if (!bytes.empty()) write_all(file_, bytes);  // plain writes, or O_DIRECT refused on the way
}

void StreamWriter::write_block() {
  // The last block is padded to the alignment; finish() cuts the file back.
  const size_t padded = (filled_ + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  std::memset(block_.mutable_data() + filled_, 0, padded - filled_);
  put(block_.data(), filled_, padded);
  filled_ = 0;
}

void StreamWriter::put(const uint8_t* data, size_t n, size_t padded) {
  if (int err = injected_fault(FaultPoint::kWrite, file_.path())) throw errno_error("failed to write", file_.path(), err);
  int err = write_fully(file_.fd(), data, padded);
  if (err == EINVAL) {
    // O_DIRECT taken at open but refused here: these bytes again, the plain way, from
    // where the bytes before them end.
    stop_direct();
    err = ::lseek(file_.fd(), static_cast<off_t>(flushed_), SEEK_SET) < 0 ? errno : write_fully(file_.fd(), data, n);
  }
  if (err != 0) throw errno_error("failed to write", file_.path(), err);
  flushed_ += n;
}

void StreamWriter::finish() {
  if (direct_ && filled_ > 0) {
    write_block();
    if (::ftruncate(file_.fd(), static_cast<off_t>(size_)) != 0)
      throw errno_error("failed to set the size of", file_.path(), errno);
  }
  fsync_file(file_);
  if (!direct_) ::posix_fadvise(file_.fd(), 0, 0, POSIX_FADV_DONTNEED);  // durable: clean pages
}

void pread_all(const File& file, uint64_t offset, std::span<uint8_t> out, const char* what) {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t r = ::pread(file.fd(), out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw errno_error("failed to read", file.path(), errno);
    }
    if (r == 0) throw invalid_input(std::string("truncated ") + what, file.path());
    done += static_cast<size_t>(r);
  }
}

uint64_t file_size(const File& file) {
  struct stat st;
  if (::fstat(file.fd(), &st) != 0) throw errno_error("failed to stat", file.path(), errno);
  return static_cast<uint64_t>(st.st_size);
}

void fsync_file(File& file) {
  if (int err = injected_fault(FaultPoint::kFsync, file.path())) throw errno_error("failed to fsync", file.path(), err);
  if (::fsync(file.fd()) != 0) throw errno_error("failed to fsync", file.path(), errno);
}

void fsync_dir(const io::DirFd& dir) {
  if (int err = injected_fault(FaultPoint::kFsync, dir.path())) throw errno_error("failed to fsync", dir.path(), err);
  if (::fsync(dir.fd()) != 0) throw errno_error("failed to fsync", dir.path(), errno);
}

void rename_at(const io::DirFd& from_dir, const std::string& from, const io::DirFd& to_dir, const std::string& to) {
  const std::string from_path = from_dir.child_path(from), to_path = to_dir.child_path(to);
  if (int err = injected_fault(FaultPoint::kRename, to_path))
    throw errno_error("failed to rename " + from_path + " to", to_path, err);
  if (::renameat(from_dir.fd(), from.c_str(), to_dir.fd(), to.c_str()) != 0)
    throw errno_error("failed to rename " + from_path + " to", to_path, errno);
}

void make_dirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw errno_error("failed to create directory", dir, ec.value());
}

void remove_tree(const io::DirFd& dir, const std::string& name) noexcept {
  try {
    dir.remove_tree(name);
  } catch (...) {
  }
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> list_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw errno_error("failed to list directory", dir, errno);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void write_file_atomic(const io::DirFd& dir, const std::string& name, std::span<const uint8_t> bytes) {
  std::string tmp = name + ".tmp-" + unique_suffix();
  try {
    File file = create_file(dir, tmp);
    write_all(file, bytes);
    fsync_file(file);
    rename_at(dir, tmp, dir, name);
  } catch (...) {
    ::unlinkat(dir.fd(), tmp.c_str(), 0);
    throw;
  }
  fsync_dir(dir);
}

std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes) {
  File file = open_read(path);
  uint64_t size = file_size(file);
  if (size > max_bytes) throw invalid_input("file too large (" + std::to_string(size) + " bytes)", path);
  std::vector<uint8_t> bytes(size);
  pread_all(file, 0, bytes, "file");
  return bytes;
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return std::to_string(::getpid()) + '-' + std::to_string(++counter) + '-' +
         std::to_string(salt % 1000000);
}

DirLock::DirLock(const std::string& dir) {
  io::DirFd root = io::DirFd::open(dir);
  std::string path = root.child_path(".lock");
  io::Fd fd = root.open_lock_file(".lock", true);
  if (!fd.valid()) throw errno_error("failed to open lock file", path, fd.error());
  fd_ = fd.release();
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char pid[32] = {};
    ssize_t n = ::pread(fd_, pid, sizeof pid - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string("unknown");
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      throw usage_error("checkpoint directory is in use by another writer (pid " + holder + ")", dir);
    }
    throw errno_error("failed to lock", path, err);
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] ssize_t w = ::pwrite(fd_, pid.data(), pid.size(), 0);
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace fs
}  // namespace tk::ckpt
