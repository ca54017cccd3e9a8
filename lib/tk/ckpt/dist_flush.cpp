#include "tk/ckpt/dist_flush.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "tk/ckpt/dist_part.h"
#include "tk/ckpt/fileops.h"
#include "tk/ckpt/manifest.h"
#include "tk/ckpt/tier.h"

namespace tk::ckpt {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Looks at the shared directory, spaced out: short pauses first (ranks that finish
// together see each other at once), growing to 100 ms, so that waiting ranks make at
// most about ten metadata operations a second each on a parallel file system.
class Backoff {
 public:
  explicit Backoff(double seconds)
      : deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))) {}
  // Sleep before the next look; false once the deadline has passed.
  bool pause() {
    if (Clock::now() >= deadline_) return false;
    std::this_thread::sleep_for(pause_);
    pause_ = std::min<std::chrono::microseconds>(pause_ * 2, std::chrono::milliseconds(100));
    return true;
  }

 private:
  Clock::time_point deadline_;
  std::chrono::microseconds pause_{500};
};

}  // namespace

DistFlusher::DistFlusher(Config config) : config_(std::move(config)), thread_([this] { run(); }) {}

DistFlusher::~DistFlusher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void DistFlusher::enqueue(FlushJob job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    StepLag lag;
    lag.step = job.step;
    lags_.push_back(lag);
    committed_.push_back(job.committed);
    queue_.push_back(std::move(job));
  }
  changed_.notify_all();
}

std::optional<Error> DistFlusher::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  return std::exchange(error_, std::nullopt);
}

size_t DistFlusher::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + (busy_ ? 1 : 0);
}

std::vector<StepLag> DistFlusher::lags() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<StepLag> out = lags_;
  const auto now = Clock::now();
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].durable && !out[i].error) out[i].lag_seconds = seconds_between(committed_[i], now);
  return out;
}

void DistFlusher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything flushed
    FlushJob job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::optional<Error> failure;
    try {
      flush(job);
    } catch (...) {
      failure = error_from(std::current_exception());
    }
    const auto done = Clock::now();
    lock.lock();
    for (size_t i = 0; i < lags_.size(); ++i) {
      if (lags_[i].step != job.step) continue;
      lags_[i].durable = !failure;
      lags_[i].lag_seconds = seconds_between(committed_[i], done);
      lags_[i].error = failure;
    }
    if (failure && !error_) error_ = failure;
    busy_ = false;
    changed_.notify_all();
  }
}

void DistFlusher::flush(const FlushJob& job) {
  const std::string name = step_dir_name(job.step);
  const std::string where = config_.shared_dir + "/" + name;
  const std::string timeout = std::to_string(static_cast<long long>(config_.timeout_seconds));
  io::DirFd shared = io::DirFd::open(config_.shared_dir);
  io::DirFd tmp = shared.make_dir(job.tmp_name);
  // This rank's files, the part last and under its own name only once complete: the
  // part's presence tells rank 0 that the rank's copy is there.
  std::optional<io::DirFd> local = io::DirFd::open(config_.local_dir).open_dir(name);
  if (!local) throw invalid_input("the node-local copy of the step vanished", config_.local_dir + "/" + name);
  if (job.shard) copy_file(local->child_path(*job.shard), tmp, *job.shard);
  const std::string part_name = part_file_name(config_.rank);
  copy_file(local->child_path(part_name), tmp, part_name + ".partial");
  fs::rename_at(tmp, part_name + ".partial", tmp, part_name);

  if (config_.rank == 0) {
    Backoff backoff(config_.timeout_seconds);
    for (;;) {
      std::vector<std::string> names = tmp.list();
      uint32_t missing = job.world_size;
      for (uint32_t r = 0; r < job.world_size && missing == job.world_size; ++r)
        if (!std::binary_search(names.begin(), names.end(), part_file_name(r))) missing = r;
      if (missing == job.world_size) break;
      if (!backoff.pause()) {
        fs::remove_tree(shared, job.tmp_name);
        throw runtime_error("rank " + std::to_string(missing) + "'s part did not reach the shared tier within " +
                                timeout + " s (the rank died or its flush failed); the step stays node-local",
                            where);
      }
    }
    for (uint32_t r = 0; r < job.world_size; ++r) {
      const uint64_t size = tmp.file_size(part_file_name(r)).value_or(0);
      if (r < job.part_bytes.size() && size != job.part_bytes[r]) {
        fs::remove_tree(shared, job.tmp_name);
        throw invalid_input("rank " + std::to_string(r) + "'s part on the shared tier has " + std::to_string(size) +
                                " bytes, " + std::to_string(job.part_bytes[r]) + " were committed",
                            where);
      }
    }
    publish_step(shared, job.tmp_name, job.step, job.manifest);
    keep_newest(config_.shared_dir, config_.keep_last);
  } else {
    Backoff backoff(config_.timeout_seconds);
    while (!fs::exists(where + "/" + kManifestName))
      if (!backoff.pause())
        throw runtime_error("rank 0 did not publish the step on the shared tier within " + timeout +
                                " s; it stays node-local",
                            where);
  }
  // Once a step is durable, this node's older steps are not needed: every rank has
  // flushed them (each flushes in order, and this step needed every rank's copy).
  if (config_.node_leader)
    for (uint64_t s : committed_steps(config_.local_dir))
      if (s < job.step) remove_step(config_.local_dir, s);
}

}  // namespace tk::ckpt
