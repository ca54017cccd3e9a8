#include "tk/ckpt/staging.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tk::ckpt {

namespace {
// Sizes are rounded up so that saves of slightly different sizes reuse one buffer.
constexpr uint64_t kGranule = uint64_t(2) << 20;
}  // namespace

Buffer StagingPool::acquire(uint64_t bytes) {
  uint64_t size = std::max<uint64_t>(kGranule, (bytes + kGranule - 1) / kGranule * kGranule);
  std::unique_lock<std::mutex> lock(mutex_);
  largest_ = std::max(largest_, size);
  for (;;) {
    // Best fit among the free buffers.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->size() >= size && (best == free_.end() || it->size() < best->size())) best = it;
    if (best != free_.end()) {
      Buffer b = std::move(*best);
      free_.erase(best);
      lent_ += b.size();
      return b;
    }
    // Drop free buffers too small to serve, smallest first, to make room.
    std::sort(free_.begin(), free_.end(), [](const Buffer& a, const Buffer& b) { return a.size() < b.size(); });
    while (!free_.empty() && held_ + size > limit()) {
      held_ -= free_.front().size();
      free_.erase(free_.begin());
    }
    if (held_ + size <= limit() || lent_ == 0) {
      lock.unlock();
      Buffer b = allocate_(size);
      lock.lock();
      held_ += size;
      lent_ += size;
      return b;
    }
    released_.wait(lock);
  }
}

void StagingPool::reserve(uint64_t bytes) {
  if (bytes == 0) return;
  Buffer b = acquire(bytes);
  std::memset(b.mutable_data(), 0, b.size());
  release(std::move(b));
}

void StagingPool::release(Buffer buffer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lent_ -= buffer.size();
    free_.push_back(std::move(buffer));
  }
  released_.notify_all();
}

uint64_t StagingPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

void snapshot_copy(void* dst, const void* src, uint64_t bytes) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
#if defined(__SSE2__)
  constexpr uint64_t kSmall = uint64_t(1) << 20;  // below this, memcpy's cached stores win
  if (bytes >= kSmall) {
    // Align the destination to 64 bytes, stream whole cache lines, finish with memcpy.
    uint64_t head = (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    uint64_t lines = bytes / 64;
    for (uint64_t i = 0; i < lines; ++i, d += 64, s += 64) {
      // 16-byte streaming stores (SSE2, every x86-64) fill a line as fast as wider ones:
      // the copy is bound by memory.
      for (int k = 0; k < 64; k += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k)));
    }
    _mm_sfence();
    bytes -= lines * 64;
  }
#endif
  if (bytes > 0) std::memcpy(d, s, bytes);  // an empty tensor's pointers may be null
}

}  // namespace tk::ckpt
