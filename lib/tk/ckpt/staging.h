// The staging pool behind copy-mode snapshots: large aligned buffers reused from save
// to save, so that a snapshot costs one memcpy and no page faults once warm (and, for
// tensors in device memory, no pinning of fresh pages). Internal to lib/tk/ckpt.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "tk/core/buffer.h"

namespace tk::ckpt {

class StagingPool {
 public:
  // Where the buffers come from: Buffer::allocate, or pinned host memory for copies
  // from a device (DeviceCopier::allocate_pinned).
  using Allocate = std::function<Buffer(uint64_t bytes)>;
  explicit StagingPool(Allocate allocate = Buffer::allocate) : allocate_(std::move(allocate)) {}

  // At most `bytes` held in all (0: twice the largest request so far). A request larger
  // than the limit is still served when nothing else is held.
  void set_limit(uint64_t bytes) { limit_ = bytes; }
  // A buffer of at least `bytes`, waiting while the pool is at its limit.
  Buffer acquire(uint64_t bytes);
  // Allocate a buffer of `bytes` and touch every page of it now, then keep it free: the
  // first snapshot that fits then pays neither the allocation nor the page faults
  // (fresh memory faults at first touch, and in a virtual machine the host's memory
  // behind it too).
  void reserve(uint64_t bytes);
  // Give a buffer from acquire() back; no other copy of it may remain.
  void release(Buffer buffer);
  uint64_t held_bytes() const;

 private:
  uint64_t limit() const { return limit_ ? limit_ : 2 * largest_; }

  Allocate allocate_;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  std::vector<Buffer> free_;
  uint64_t held_ = 0;    // bytes allocated, free or lent
  uint64_t lent_ = 0;    // bytes lent out
  uint64_t largest_ = 0;
  uint64_t limit_ = 0;
};

// Copy into the staging pool with non-temporal stores: the snapshot is not read again
// on this core, so it bypasses the cache and skips the read-for-ownership of a plain
// memcpy (measured on a 2-core VM: 9.1 GB/s against 5.4 for memcpy, and one thread
// beats two, which share the memory bandwidth).
void snapshot_copy(void* dst, const void* src, uint64_t bytes);

}  // namespace tk::ckpt
