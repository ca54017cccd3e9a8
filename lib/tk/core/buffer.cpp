#include "tk/core/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "tk/core/error.h"
#include "tk/core/mapped_files.h"

namespace tk {

namespace {

// Buffers of a huge page or more are aligned to the huge-page size and marked for
// transparent huge pages: first-touch page faults dominate filling a fresh buffer (a
// tensor read from a pipe, a copy, a TT-SVD's carried matrix of a few MB), and 2 MiB
// pages take 512 times fewer of them.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeThreshold = kHugePage;

// The whole file, read (the fallback when no more mappings can be watched for SIGBUS).
Buffer read_fd(int fd, size_t size, const std::string& path) {
  Buffer b = Buffer::allocate(size);
  for (size_t done = 0; done < size;) {
    const ssize_t r = ::pread(fd, b.mutable_data() + done, size - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw errno_error("read failed", path, errno);
    if (r == 0) throw io_error("the file was truncated while it was being read", path);
    done += static_cast<size_t>(r);
  }
  return b;
}

}  // namespace

Buffer Buffer::allocate(size_t bytes) {
  Buffer b;
  size_t align = bytes >= kHugeThreshold ? kHugePage : kBufferAlignment;
  size_t rounded = (bytes + align - 1) / align * align;
  if (rounded < bytes) throw unavailable("allocation of " + std::to_string(bytes) + " bytes too large");
  void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
  if (!p) throw unavailable("out of memory allocating " + std::to_string(bytes) + " bytes");
  if (align == kHugePage) ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint; failure is harmless
  b.storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  b.data_ = static_cast<uint8_t*>(p);
  b.size_ = bytes;
  b.writable_ = true;
  return b;
}

Buffer Buffer::zeros(size_t bytes) {
  Buffer b = allocate(bytes);
  std::memset(b.data_, 0, bytes);
  return b;
}

Buffer Buffer::adopt(std::vector<uint8_t>&& bytes) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  Buffer b;
  b.data_ = owned->data();
  b.size_ = owned->size();
  b.storage_ = std::move(owned);
  b.writable_ = true;
  return b;
}

Buffer Buffer::borrow(void* data, size_t bytes) {
  Buffer b;
  b.data_ = static_cast<uint8_t*>(data);
  b.size_ = bytes;
  b.writable_ = true;
  return b;
}

Buffer Buffer::borrow_const(const void* data, size_t bytes) {
  Buffer b = borrow(const_cast<void*>(data), bytes);
  b.writable_ = false;
  return b;
}

Buffer Buffer::wrap(std::shared_ptr<void> storage, size_t bytes) {
  Buffer b;
  b.data_ = static_cast<uint8_t*>(storage.get());
  b.size_ = bytes;
  b.storage_ = std::move(storage);
  b.writable_ = true;
  return b;
}

Buffer Buffer::map_file(const std::string& path) {
  // Readers check what an input is, then map it by its path again: without O_NONBLOCK a
  // FIFO swapped in between would block this open, and only a regular file maps.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw errno_error("failed to open for reading", path, errno);
  try {
    struct stat st;
    if (::fstat(fd, &st) != 0) throw errno_error("failed to stat", path, errno);
    if (!S_ISREG(st.st_mode)) throw invalid_input("not a regular file", path);
    Buffer b = map_fd(fd, path);
    ::close(fd);
    return b;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

Buffer Buffer::map_fd(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) throw errno_error("failed to stat", path, errno);
  Buffer b;
  b.size_ = static_cast<size_t>(st.st_size);
  if (b.size_ == 0) return b;
  void* p = ::mmap(nullptr, b.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) throw errno_error("failed to map", path, errno);
  const size_t size = b.size_;
  const int slot = mapped_files_register(p, size, path, st.st_dev, st.st_ino);
  if (slot < 0) {
    ::munmap(p, size);
    return read_fd(fd, size, path);
  }
  b.storage_ = std::shared_ptr<void>(p, [size, slot](void* q) {
    mapped_files_release(slot);  // before the range can be mapped again by anyone else
    ::munmap(q, size);
  });
  b.data_ = static_cast<uint8_t*>(p);
  b.writable_ = false;
  return b;
}

Buffer Buffer::slice(size_t offset, size_t bytes) const {
  if (offset > size_ || bytes > size_ - offset)
    throw internal_error("buffer slice out of bounds");
  Buffer b = *this;
  b.data_ = data_ + offset;
  b.size_ = bytes;
  return b;
}

uint8_t* Buffer::mutable_data() {
  if (!writable_) throw internal_error("write access to a read-only buffer");
  return data_;
}

Buffer BufferPool::take(size_t bytes) {
  for (Buffer& b : buffers_) {
    if (!b.sole_owner() || b.size() < bytes) continue;
    // The last other holder released its copy with an acq_rel decrement; this fence
    // orders its reads of the bytes before our writes to them.
    std::atomic_thread_fence(std::memory_order_acquire);
    return b.slice(0, bytes);
  }
  Buffer fresh = Buffer::allocate(bytes);
  auto kept = [&] {
    size_t n = 0;
    for (const Buffer& b : buffers_) n += b.size();
    return n;
  };
  // Keep it, in place of free buffers too small to serve it (the pool follows the sizes
  // asked for), while the pool stays within its bytes.
  if (kept() + bytes > max_bytes_)
    std::erase_if(buffers_, [&](const Buffer& b) { return b.sole_owner() && b.size() < bytes; });
  if (kept() + bytes <= max_bytes_) buffers_.push_back(fresh);
  return fresh;
}

}  // namespace tk
