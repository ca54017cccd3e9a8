// Byte buffers that a Tensor points into: owned (64-byte aligned heap memory),
// borrowed (the caller keeps the memory alive) or a read-only memory map of a file.
// Copies of a Buffer share the storage; the storage is released with the last copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tk {

inline constexpr size_t kBufferAlignment = 64;

class Buffer {
 public:
  Buffer() = default;

  // Allocate `bytes` of uninitialised, 64-byte aligned memory. Throws kUnavailable when
  // the allocation fails.
  static Buffer allocate(size_t bytes);
  // Allocate and zero-fill.
  static Buffer zeros(size_t bytes);
  // Take over a vector's bytes without copying them (the memory is not 64-byte aligned).
  static Buffer adopt(std::vector<uint8_t>&& bytes);
  // Refer to memory owned by the caller, which must outlive every copy of the Buffer.
  static Buffer borrow(void* data, size_t bytes);
  static Buffer borrow_const(const void* data, size_t bytes);
  // Share `storage`: `bytes` of writable memory at storage.get() from another allocator
  // (pinned host memory), released by storage's deleter with the last copy.
  static Buffer wrap(std::shared_ptr<void> storage, size_t bytes);
  // Map a whole regular file read-only. Throws kIo when it cannot be opened or mapped,
  // kInvalidInput when `path` is no regular file (a FIFO is never waited on).
  static Buffer map_file(const std::string& path);
  // Map the whole regular file open at `fd` read-only (the caller keeps and closes
  // `fd`; the mapping outlives it). `path` names it in errors. Throws kIo.
  static Buffer map_fd(int fd, const std::string& path);

  // A view of [offset, offset + bytes) sharing this buffer's storage. Throws
  // kInternal when the range is out of bounds.
  Buffer slice(size_t offset, size_t bytes) const;

  const uint8_t* data() const { return data_; }
  // Mutable access; throws kInternal for read-only (mapped or borrow_const) buffers.
  uint8_t* mutable_data();
  size_t size() const { return size_; }
  bool writable() const { return writable_; }
  // True when this Buffer is the only one referring to its storage (no copies, no
  // slices alive): its memory may then be reused. False for borrowed memory.
  bool sole_owner() const { return storage_ && storage_.use_count() == 1; }
  // True when no storage of its own keeps the memory alive: borrowed memory (or none).
  bool borrowed() const { return !storage_; }
  bool empty() const { return size_ == 0; }

 private:
  std::shared_ptr<void> storage_;  // keeps the allocation or mapping alive
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool writable_ = false;
};

// Buffers to fill again and again without fresh memory: a stream decoded a batch at a
// time into new allocations spends much of its time in the kernel zeroing the pages it
// touches first (on a VM, a host fault as well). take() hands out a buffer that nobody
// holds any longer (its last copy elsewhere was dropped) instead of a new one. It keeps
// buffers of at most `max_bytes` in all; past them take() allocates as Buffer::allocate
// does. Not thread-safe: one pool per producer; its buffers may be released on any thread.
class BufferPool {
 public:
  explicit BufferPool(size_t max_bytes) : max_bytes_(max_bytes) {}

  // `bytes` of uninitialised memory, 64-byte aligned.
  Buffer take(size_t bytes);

 private:
  size_t max_bytes_;
  std::vector<Buffer> buffers_;
};

}  // namespace tk
