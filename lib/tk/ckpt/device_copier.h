// Checkpoints of tensors in CUDA device memory: the engine's one seam to the GPU code
// in cuda/ (docs/ARCHITECTURE.md, ckpt). A save's device tensors are copied to pinned
// host memory on a stream of the checkpointer's own and the save then goes on as a
// copy-mode snapshot does; a restore fills device buffers from host memory. Internal to
// lib/tk/ckpt.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tk/core/buffer.h"

namespace tk::ckpt {

// The bytes one tensor takes in a staging buffer: tensors start 64-byte aligned.
inline uint64_t staged_size(uint64_t nbytes) {
  return (nbytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

// One tensor's bytes in device memory.
struct DeviceBytes {
  const void* data;
  uint64_t nbytes;
};

// The copies of one save, queued on the device. Destroying it waits for them (errors
// ignored), so that the pinned memory they write is never handed back while they run.
class DeviceCopies {
 public:
  virtual ~DeviceCopies() = default;
  // Block until every copy has landed in host memory; throws the first copy's error.
  virtual void wait() = 0;
};

// What one save queued: where each tensor's bytes land, and the copies to wait for
// before reading them.
struct QueuedCopies {
  std::vector<Buffer> slices;  // one per source, in order, inside the staging buffer
  std::unique_ptr<DeviceCopies> copies;
};

// Used from any thread.
class DeviceCopier {
 public:
  virtual ~DeviceCopier() = default;
  // Page-locked host memory for the staging pool: copies from the device into it run
  // on the device's copy engine without the host.
  virtual Buffer allocate_pinned(uint64_t bytes) = 0;
  // Queue copies of `sources` into `staging` (from allocate_pinned, at least the sum of
  // their staged_size() long) and return at once. The copies start after the work
  // queued so far on each device's legacy default stream (PyTorch's default stream),
  // and work queued there later waits for them on the device: the caller may go on
  // updating the tensors there without waiting on the host. Small tensors are gathered
  // on the device and cross to the host in one transfer.
  virtual QueuedCopies queue(std::span<const DeviceBytes> sources, const Buffer& staging) = 0;
  // Copy `nbytes` from host memory into device memory at `device`, ordered after the
  // work queued on the device's legacy default stream; returns once the bytes are there.
  virtual void upload(void* device, const void* host, uint64_t nbytes) = 0;
};

// The copier of this build's CUDA backend; null in a build without one, where no
// pointer is a device pointer (tk::device::is_device_pointer) and none is ever needed.
#ifdef TK_HAVE_CUDA
std::unique_ptr<DeviceCopier> make_device_copier();
#else
inline std::unique_ptr<DeviceCopier> make_device_copier() { return nullptr; }
#endif

}  // namespace tk::ckpt
