// The background flush of a distributed checkpointer with a node-local tier: each rank
// copies its own files of every step committed on the node-local tier into the step's
// temporary directory on the shared (durable) tier; rank 0 publishes the step there,
// with the commit protocol, once every rank's part has arrived; every rank then sees it
// published and records the step's durability lag. The ranks meet through the shared
// directory only: no collective runs in the background. Internal to lib/tk/ckpt.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tk/ckpt/dist_checkpoint.h"  // StepLag
#include "tk/core/error.h"

namespace tk::ckpt {

struct FlushJob {
  uint64_t step = 0;
  std::string tmp_name;            // the step's temporary directory on the shared tier
  std::optional<std::string> shard;  // this rank's shard file, when it stored data
  uint32_t world_size = 0;
  std::vector<uint64_t> part_bytes;  // rank 0: each rank's part size, to check what arrived
  std::vector<uint8_t> manifest;     // rank 0: the global manifest it publishes
  std::chrono::steady_clock::time_point committed;  // when the node-local commit returned
};

class DistFlusher {
 public:
  struct Config {
    std::string local_dir;    // this node's tier
    std::string shared_dir;   // the durable tier
    uint32_t rank = 0;
    bool node_leader = false;  // removes this node's steps once a newer one is durable
    double timeout_seconds = 300;  // for the parts to arrive, or the step to appear
    uint32_t keep_last = 0;   // rank 0: retention on the shared tier (0: keep all)
  };
  explicit DistFlusher(Config config);
  // Finishes every queued flush first (so a job that ends has its steps durable, or
  // their errors dropped).
  ~DistFlusher();
  DistFlusher(const DistFlusher&) = delete;
  DistFlusher& operator=(const DistFlusher&) = delete;

  // Queue `job`; steps are flushed in the order queued.
  void enqueue(FlushJob job);
  // Block until every queued flush has finished; returns the first error among the
  // steps flushed since the last drain (cleared), or nullopt.
  std::optional<Error> drain();
  // Steps queued or being flushed.
  size_t queued() const;
  // Every step queued so far, oldest first.
  std::vector<StepLag> lags() const;

 private:
  void run();
  void flush(const FlushJob& job);

  Config config_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<FlushJob> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::vector<StepLag> lags_;
  std::vector<std::chrono::steady_clock::time_point> committed_;  // per lags_ entry
  std::optional<Error> error_;
  std::thread thread_;
};

}  // namespace tk::ckpt
