#include "tk/ckpt/staging.h"

#include <algorithm>
#include <cstring>

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
      Buffer b = Buffer::allocate(size);
      lock.lock();
      held_ += size;
      lent_ += size;
      return b;
    }
    released_.wait(lock);
  }
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

void parallel_copy(void* dst, const void* src, uint64_t bytes, int threads) {
  constexpr uint64_t kPiece = uint64_t(8) << 20;
  if (threads <= 1 || bytes < 2 * kPiece) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const int64_t pieces = static_cast<int64_t>((bytes + kPiece - 1) / kPiece);
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < pieces; ++i) {
    uint64_t off = static_cast<uint64_t>(i) * kPiece;
    std::memcpy(d + off, s + off, std::min(kPiece, bytes - off));
  }
}

}  // namespace tk::ckpt
