#include "tk/bench/disk.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "tk/core/error.h"

namespace tk::bench {
namespace {

constexpr uint64_t kPiece = uint64_t(8) << 20;

// Close `fd`, keeping the first error: a failed close after a write is a failed write.
void close_or_throw(int fd, const std::string& path) {
  if (::close(fd) != 0) throw errno_error("failed to close", path, errno);
}

}  // namespace

bool drop_file_cache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw errno_error("failed to open for reading", path, errno);
  ::fdatasync(fd);  // dirty pages cannot be dropped
  bool dropped = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return dropped;
}

void write_file_synced(const std::string& path, const uint8_t* data, uint64_t bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw errno_error("failed to create", path, errno);
  for (uint64_t done = 0; done < bytes;) {
    ssize_t w = ::write(fd, data + done, std::min(kPiece, bytes - done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = w < 0 ? errno : EIO;
      ::close(fd);
      throw errno_error("failed to write", path, err);
    }
    done += static_cast<uint64_t>(w);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    throw errno_error("failed to fsync", path, err);
  }
  close_or_throw(fd, path);
}

uint64_t read_file_through(const std::string& path, uint8_t* buffer, uint64_t capacity) {
  if (capacity == 0) throw usage_error("read_file_through needs a buffer", path);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw errno_error("failed to open for reading", path, errno);
  uint64_t total = 0;
  for (;;) {
    const uint64_t at = total % capacity;  // pieces go through the buffer in turn
    ssize_t r = ::read(fd, buffer + at, std::min(kPiece, capacity - at));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int err = errno;
      ::close(fd);
      throw errno_error("failed to read", path, err);
    }
    if (r == 0) break;
    total += static_cast<uint64_t>(r);
  }
  ::close(fd);
  return total;
}

}  // namespace tk::bench
