// A tk::dist::Comm between threads of one process, so that the distributed checkpointer
// is tested, bad input and timeouts included, without MPI. Each collective waits for
// every rank's contribution (or its deadline).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tk/core/error.h"
#include "tk/dist/comm.h"

namespace tk::test {

class ThreadWorld {
 public:
  explicit ThreadWorld(int size) : size_(size) {}
  int size() const { return size_; }

  // The contributions of every rank to collective number `seq`, once all have arrived.
  std::vector<std::vector<uint8_t>> exchange(uint64_t seq, int rank, std::vector<uint8_t> mine,
                                             dist::Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    Slot& slot = slots_[seq];
    if (slot.parts.empty()) slot.parts.resize(static_cast<size_t>(size_));
    slot.parts[static_cast<size_t>(rank)] = std::move(mine);
    ++slot.arrived;
    cv_.notify_all();
    if (!cv_.wait_until(lock, deadline, [&] { return slot.arrived == size_; }))
      throw runtime_error("collective commit timed out (test)");
    return slot.parts;
  }

 private:
  struct Slot {
    std::vector<std::vector<uint8_t>> parts;
    int arrived = 0;
  };
  int size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<uint64_t, Slot> slots_;
};

class ThreadComm final : public dist::Comm {
 public:
  ThreadComm(std::shared_ptr<ThreadWorld> world, int rank) : world_(std::move(world)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  std::vector<uint8_t> gather(std::span<const uint8_t> record, dist::Clock::time_point deadline) override {
    auto all = world_->exchange(seq_++, rank_, {record.begin(), record.end()}, deadline);
    std::vector<uint8_t> out;
    if (rank_ == 0)
      for (auto& p : all) out.insert(out.end(), p.begin(), p.end());
    return out;
  }
  std::vector<std::vector<uint8_t>> gatherv(std::span<const uint8_t> mine, dist::Clock::time_point deadline) override {
    auto all = world_->exchange(seq_++, rank_, {mine.begin(), mine.end()}, deadline);
    if (rank_ != 0) all.clear();
    return all;
  }
  void broadcast(std::span<uint8_t> bytes, dist::Clock::time_point deadline) override {
    auto all = world_->exchange(seq_++, rank_, {bytes.begin(), bytes.end()}, deadline);
    std::copy(all[0].begin(), all[0].end(), bytes.begin());
  }
  std::vector<std::vector<uint8_t>> allgather(std::span<const uint8_t> mine, dist::Clock::time_point deadline) override {
    return world_->exchange(seq_++, rank_, {mine.begin(), mine.end()}, deadline);
  }
  std::vector<std::vector<uint8_t>> alltoallv(std::vector<std::vector<uint8_t>> to,
                                              dist::Clock::time_point deadline) override {
    // Every rank posts all its pieces (each prefixed by its size) and takes its own.
    std::vector<uint8_t> posted;
    for (const auto& piece : to) {
      const uint64_t size = piece.size();
      posted.insert(posted.end(), reinterpret_cast<const uint8_t*>(&size), reinterpret_cast<const uint8_t*>(&size + 1));
      posted.insert(posted.end(), piece.begin(), piece.end());
    }
    auto all = world_->exchange(seq_++, rank_, std::move(posted), deadline);
    std::vector<std::vector<uint8_t>> mine;
    for (const auto& from : all) {
      size_t at = 0;
      for (int r = 0;; ++r) {
        uint64_t size = 0;
        std::memcpy(&size, from.data() + at, sizeof size);
        at += sizeof size;
        if (r == rank_) {
          mine.emplace_back(from.begin() + at, from.begin() + at + size);
          break;
        }
        at += size;
      }
    }
    return mine;
  }
  void allreduce_sum(std::span<double> values, dist::Clock::time_point deadline) override {
    reduce(values, deadline, [](double a, double b) { return a + b; });
  }
  void allreduce_sum(std::span<int64_t> values, dist::Clock::time_point deadline) override {
    reduce(values, deadline, [](int64_t a, int64_t b) { return a + b; });
  }
  void allreduce_max(std::span<int64_t> values, dist::Clock::time_point deadline) override {
    reduce(values, deadline, [](int64_t a, int64_t b) { return std::max(a, b); });
  }

 private:
  // Every rank's values combined in rank order, the same on every rank.
  template <typename T, typename Op> void reduce(std::span<T> values, dist::Clock::time_point deadline, Op op) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
    auto all = world_->exchange(seq_++, rank_, {bytes, bytes + values.size_bytes()}, deadline);
    for (size_t i = 0; i < values.size(); ++i) {
      T acc;
      std::memcpy(&acc, all[0].data() + i * sizeof(T), sizeof(T));
      for (size_t r = 1; r < all.size(); ++r) {
        T v;
        std::memcpy(&v, all[r].data() + i * sizeof(T), sizeof(T));
        acc = op(acc, v);
      }
      values[i] = acc;
    }
  }

  std::shared_ptr<ThreadWorld> world_;
  int rank_;
  uint64_t seq_ = 0;
};

// Run `body(rank, comm)` on `size` threads, one per rank, and wait for all of them.
inline void run_ranks(int size, const std::function<void(int, std::unique_ptr<dist::Comm>)>& body) {
  auto world = std::make_shared<ThreadWorld>(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] { body(r, std::make_unique<ThreadComm>(world, r)); });
  for (auto& t : threads) t.join();
}

}  // namespace tk::test
