#include "tk/core/background.h"

#include <utility>

namespace tk {

BackgroundQueue::BackgroundQueue(std::function<void(const Buffer&)> work, size_t max_pending)
    : work_(std::move(work)), max_pending_(max_pending) {
  thread_ = std::thread([this] { run(); });
}

BackgroundQueue::~BackgroundQueue() {
  if (thread_.joinable()) stop(true);
}

void BackgroundQueue::push(Buffer piece) {
  if (piece.empty()) return;
  std::unique_lock lock(mutex_);
  // A piece larger than the limit is still taken when nothing waits, or push() would
  // block for ever.
  cv_.wait(lock, [&] { return pending_ == 0 || pending_ + piece.size() <= max_pending_ || error_; });
  if (error_) std::rethrow_exception(error_);
  pending_ += piece.size();
  queue_.push_back(std::move(piece));
  cv_.notify_all();
}

void BackgroundQueue::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return queue_.empty() || error_; });
  if (error_) std::rethrow_exception(error_);
}

void BackgroundQueue::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (queue_.empty()) return;
    Buffer piece = queue_.front();
    lock.unlock();
    try {
      work_(piece);
    } catch (...) {
      lock.lock();
      error_ = std::current_exception();
      queue_.clear();
      pending_ = 0;
      cv_.notify_all();
      return;
    }
    lock.lock();
    queue_.pop_front();  // stop() keeps the front: it is the piece being worked on
    pending_ -= piece.size();
    cv_.notify_all();
  }
}

void BackgroundQueue::stop(bool drop) {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    if (drop && queue_.size() > 1) queue_.erase(queue_.begin() + 1, queue_.end());  // the front is in work
  }
  cv_.notify_all();
  thread_.join();
}

void BackgroundQueue::finish() {
  stop(false);
  if (error_) std::rethrow_exception(error_);
}

}  // namespace tk
