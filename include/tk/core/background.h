// Work on a thread of its own, one piece at a time and in order: hashing or writing a
// stream while the caller decodes the next part of it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "tk/core/buffer.h"

namespace tk {

// Runs `work` on each piece given to push(), in order, on one thread. Each piece's
// Buffer is kept alive until its work is done; at most `max_pending` bytes wait, beyond
// which push() blocks. The first exception thrown by `work` stops the thread, drops what
// waits, and is rethrown by the next push() or by finish(). Destroyed without finish(),
// it drops what waits and joins.
class BackgroundQueue {
 public:
  BackgroundQueue(std::function<void(const Buffer&)> work, size_t max_pending);
  ~BackgroundQueue();
  BackgroundQueue(const BackgroundQueue&) = delete;
  BackgroundQueue& operator=(const BackgroundQueue&) = delete;

  void push(Buffer piece);
  // Wait until every piece pushed so far is done; rethrow the first failure, if any.
  void wait();
  // Wait until every piece is done, then rethrow the first failure, if any. Call once.
  void finish();

 private:
  void run();
  void stop(bool drop);

  std::function<void(const Buffer&)> work_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Buffer> queue_;
  size_t pending_ = 0, max_pending_;
  bool done_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace tk
