// The checkpoint engine: snapshots on the caller's thread, one background worker that
// encodes, writes and commits saves in order, and one flusher that copies committed
// steps to the durable tier.
#include <omp.h>
// Inlined so that XXH3 is compiled for this machine's vector width (the shared
// library is built for the baseline): checksums run at memory speed.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>

#include "tk/ckpt/checkpoint.h"
#include "tk/ckpt/device_copier.h"
#include "tk/ckpt/fileops.h"
#include "tk/ckpt/manifest.h"
#include "tk/ckpt/shard_writer.h"
#include "tk/ckpt/staging.h"
#include "tk/ckpt/step_reader.h"
#include "tk/ckpt/tier.h"
#include "tk/codec/bitx.h"
#include "tk/codec/lossless.h"
#include "tk/core/clock.h"
#include "tk/core/error.h"
#include "tk/device/device.h"
#include "tk/io/safetensors.h"

namespace tk::ckpt {

namespace {

// A step's entries by name, so that restoring n named tensors costs n lookups, not n^2.
std::unordered_map<std::string_view, const TensorEntry*> entries_by_name(const std::vector<TensorEntry>& entries) {
  std::unordered_map<std::string_view, const TensorEntry*> by_name;
  for (const TensorEntry& e : entries) by_name.emplace(e.name, &e);
  return by_name;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr const char* kShardPrefix = "shard-";

std::string shard_name(size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%05zu.safetensors", kShardPrefix, index);
  return buf;
}

// Only memory the caller lent can be device memory. Asking the CUDA runtime about any
// other would start it (a context on the GPU) in a process that may never use it.
bool in_device_memory(const Tensor& t) {
  return t.nbytes() > 0 && t.buffer().borrowed() && device::is_device_pointer(t.data());
}

// One tensor of a save on its way to disk.
struct Pending {
  TensorEntry entry;
  std::span<const uint8_t> data;  // what goes into the shard (snapshot or `encoded`)
  std::vector<uint8_t> encoded;   // owns compressed or delta bytes
};

struct Job {
  SaveHandle handle = 0;
  uint64_t step = 0;
  std::vector<NamedTensor> tensors;
  Metadata metadata;
  Buffer staging;  // snapshot storage, returned to `staging_pool` when done
  StagingPool* staging_pool = nullptr;
  std::unique_ptr<DeviceCopies> device_copies;  // the copies into `staging` from device memory
  double stall_seconds = 0;
};

using Outcome = std::variant<SaveStats, std::exception_ptr>;

class Engine final : public Checkpointer {
 public:
  Engine(std::string dir, const Options& options);
  ~Engine() override;

  SaveHandle save_async(uint64_t step, std::vector<NamedTensor> tensors, Metadata metadata, Snapshot snapshot) override;
  SaveStats wait(SaveHandle handle) override;
  void wait_all() override;
  std::optional<uint64_t> latest() const override;
  std::vector<uint64_t> steps() const override { return committed_steps(dir_); }
  std::vector<StepInfo> list() const override;
  std::vector<StepListing> list_each() const override;
  StepInfo info(uint64_t step) const override;
  std::vector<NamedTensor> restore(uint64_t step) const override;
  void restore_into(uint64_t step, std::span<NamedTensor> targets) const override;
  void restore_stream(uint64_t step, const std::vector<std::string>& names, const RestoreSink& sink) const override;
  VerifyReport verify(uint64_t step) const override;
  GcReport gc() override;
  FlushStatus flush_status() const override;

 private:
  void worker_loop();
  SaveStats process(Job& job);
  std::vector<Pending> encode(const Job& job, const Manifest* parent, bool full);
  uint64_t write_step(const io::DirFd& tmp_dir, std::vector<Pending>& pending, std::vector<ShardInfo>& shards,
                      const Metadata& metadata);
  GcReport apply_retention();
  void flusher_loop();
  void load_incremental_state();
  DeviceCopier& device_copier() const;

  Options options_;
  std::unique_ptr<fs::DirLock> lock_;
  std::unique_ptr<fs::DirLock> durable_lock_;
  StagingPool pool_;
  // Made at the first tensor in device memory, so that a run on the CPU never starts
  // the CUDA runtime; its pinned staging pool is apart from the pageable one.
  mutable std::mutex device_mutex_;
  mutable std::unique_ptr<DeviceCopier> device_copier_;
  StagingPool pinned_pool_{[this](uint64_t bytes) { return device_copier().allocate_pinned(bytes); }};

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;   // worker: a job arrived or stop
  std::condition_variable done_cv_;   // waiters: a job finished
  std::deque<Job> queue_;
  std::map<SaveHandle, Outcome> outcomes_;
  std::set<SaveHandle> in_flight_;
  SaveHandle next_handle_ = 1;
  std::optional<uint64_t> last_step_;
  bool stop_ = false;

  // Incremental state, touched by the worker only. `last_full_` is the parent of the
  // next incremental step and the base of its XOR deltas; `holder_` maps each tensor of
  // the newest step to its checksum and the step whose entry holds its bytes, so that
  // an unchanged tensor refers straight to that step.
  struct Holder {
    DType dtype;
    Shape shape;
    uint64_t xxh3;
    uint64_t step;
  };
  std::optional<Manifest> last_full_;
  std::map<std::string, Holder> holder_;
  uint32_t since_full_ = 0;
  void remember_holders(const StepInfo& step);
  size_t leftovers_removed_ = 0;  // by open(), reported by the first gc()

  // Tier flush.
  std::condition_variable flush_cv_;
  std::deque<std::pair<uint64_t, Clock::time_point>> flush_queue_;
  std::optional<std::pair<uint64_t, Clock::time_point>> flushing_;
  std::exception_ptr flush_error_;

  std::thread worker_;
  std::thread flusher_;
};

Engine::Engine(std::string dir, const Options& options) : Checkpointer(std::move(dir)), options_(options) {
  if (options_.threads < 1) options_.threads = 1;
  if (options_.full_every < 1) options_.full_every = 1;
  pool_.set_limit(options_.staging_limit);
  pinned_pool_.set_limit(options_.staging_limit);
  if (options_.read_only) {
    if (!fs::exists(dir_)) throw errno_error("no such checkpoint directory", dir_, ENOENT);
    check_checkpoint_dir(dir_);
    return;
  }
  if (fs::exists(dir_) && !fs::is_dir(dir_)) throw invalid_input("not a directory", dir_);
  fs::make_dirs(dir_);
  check_checkpoint_dir(dir_);
  lock_ = std::make_unique<fs::DirLock>(dir_);
  leftovers_removed_ = cleanup_leftovers(dir_);
  repair_latest(dir_);
  last_step_ = latest();
  if (!options_.durable_dir.empty()) {
    fs::make_dirs(options_.durable_dir);
    check_checkpoint_dir(options_.durable_dir);
    durable_lock_ = std::make_unique<fs::DirLock>(options_.durable_dir);
    cleanup_leftovers(options_.durable_dir);
    repair_latest(options_.durable_dir);
    write_durable_record(dir_, options_.durable_dir);
    // Catch up: steps committed here but not yet on the durable tier.
    auto durable = committed_steps(options_.durable_dir);
    for (uint64_t s : committed_steps(dir_))
      if (!std::binary_search(durable.begin(), durable.end(), s)) flush_queue_.emplace_back(s, Clock::now());
    flusher_ = std::thread([this] { flusher_loop(); });
  }
  if (options_.incremental) load_incremental_state();
  worker_ = std::thread([this] { worker_loop(); });
}

Engine::~Engine() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return queue_.empty() && in_flight_.empty(); });
    stop_ = true;
  }
  work_cv_.notify_all();
  flush_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (flusher_.joinable()) flusher_.join();
}

void Engine::load_incremental_state() {
  // The newest full step is the parent of the next incremental saves; count the
  // incremental steps already made on top of it.
  auto steps = committed_steps(dir_);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    Manifest m = read_manifest(dir_ + "/" + step_dir_name(*it));
    if (it == steps.rbegin()) remember_holders(m.info);
    if (!m.info.parent) {
      last_full_ = std::move(m);
      break;
    }
    ++since_full_;
  }
}

DeviceCopier& Engine::device_copier() const {
  std::lock_guard<std::mutex> lock(device_mutex_);
  if (!device_copier_) {
    device_copier_ = make_device_copier();
    // Only a CUDA build sees device pointers (tk::device::is_device_pointer).
    if (!device_copier_) throw internal_error("a device pointer in a build without CUDA");
  }
  return *device_copier_;
}

void Engine::remember_holders(const StepInfo& step) {
  holder_.clear();
  for (const auto& e : step.entries)
    holder_[e.name] = {e.dtype, e.shape, e.xxh3, e.encoding == "ref" ? *e.source_step : step.step};
}

SaveHandle Engine::save_async(uint64_t step, std::vector<NamedTensor> tensors, Metadata metadata, Snapshot snapshot) {
  auto t0 = Clock::now();
  if (options_.read_only) throw usage_error("checkpoint opened read-only", dir_);
  std::set<std::string_view> names;
  for (const auto& t : tensors) {
    if (t.name.empty()) throw usage_error("tensor with an empty name");
    if (!names.insert(t.name).second) throw usage_error("duplicate tensor name '" + t.name + "'");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (last_step_ && step <= *last_step_)
      throw usage_error("step " + std::to_string(step) + " is not after the newest step " + std::to_string(*last_step_), dir_);
    last_step_ = step;
  }
  Job job;
  job.step = step;
  job.metadata = std::move(metadata);
  // Tensors in device memory are copied whatever the snapshot mode (the writer reads
  // host memory): queued here on the copier's stream, waited for by the worker.
  std::vector<size_t> on_device;
  std::vector<DeviceBytes> device_sources;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i].tensor;
    if (in_device_memory(t)) {
      on_device.push_back(i);
      device_sources.push_back({t.data(), t.nbytes()});
    }
  }
  const bool copy_host = snapshot == Snapshot::kCopy;
  if (copy_host || !on_device.empty()) {
    // One staging buffer for the whole save, each copied tensor at a 64-byte aligned
    // offset: the device's tensors first, as the copier lays them out, then the host's.
    // Pinned when a tensor is in device memory, so that its copy runs without the host.
    uint64_t total = 0;
    for (const DeviceBytes& d : device_sources) total += staged_size(d.nbytes);
    std::vector<uint64_t> host_offsets(tensors.size());
    std::vector<bool> is_device(tensors.size());
    for (size_t i : on_device) is_device[i] = true;
    if (copy_host) {
      for (size_t i = 0; i < tensors.size(); ++i) {
        if (is_device[i]) continue;
        host_offsets[i] = total;
        total += staged_size(tensors[i].tensor.nbytes());
      }
    }
    job.staging_pool = on_device.empty() ? &pool_ : &pinned_pool_;
    job.staging = job.staging_pool->acquire(total);
    if (!on_device.empty()) {
      try {
        QueuedCopies queued = device_copier().queue(device_sources, job.staging);
        job.device_copies = std::move(queued.copies);
        for (size_t k = 0; k < on_device.size(); ++k) {
          Tensor& t = tensors[on_device[k]].tensor;
          t = Tensor(t.dtype(), t.shape(), std::move(queued.slices[k]));
        }
      } catch (...) {
        job.staging_pool->release(std::move(job.staging));
        throw;
      }
    }
    // The host's copies run while the device's are under way.
    if (copy_host) {
      for (size_t i = 0; i < tensors.size(); ++i) {
        if (is_device[i]) continue;
        Tensor& t = tensors[i].tensor;
        Buffer slice = job.staging.slice(host_offsets[i], t.nbytes());
        snapshot_copy(slice.mutable_data(), t.data(), t.nbytes());
        t = Tensor(t.dtype(), t.shape(), std::move(slice));
      }
    }
  }
  job.tensors = std::move(tensors);
  std::lock_guard<std::mutex> lock(mutex_);
  job.handle = next_handle_++;
  job.stall_seconds = seconds_since(t0);
  SaveHandle handle = job.handle;
  in_flight_.insert(handle);
  queue_.push_back(std::move(job));
  work_cv_.notify_one();
  return handle;
}

SaveStats Engine::wait(SaveHandle handle) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!in_flight_.count(handle) && !outcomes_.count(handle))
    throw usage_error("unknown save handle " + std::to_string(handle));
  done_cv_.wait(lock, [&] { return outcomes_.count(handle) > 0; });
  Outcome outcome = std::move(outcomes_.at(handle));
  outcomes_.erase(handle);
  if (auto* err = std::get_if<std::exception_ptr>(&outcome)) std::rethrow_exception(*err);
  return std::get<SaveStats>(outcome);
}

void Engine::wait_all() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return queue_.empty() && in_flight_.empty() && flush_queue_.empty() && !flushing_; });
  if (flush_error_) {
    auto err = flush_error_;
    flush_error_ = nullptr;
    std::rethrow_exception(err);
  }
}

void Engine::worker_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Outcome outcome;
    try {
      outcome = process(job);
    } catch (...) {
      outcome = std::current_exception();
    }
    job.tensors.clear();  // drop the slices before the staging buffer goes back
    job.device_copies.reset();  // waits for copies still writing into it (after a failure)
    if (!job.staging.empty()) job.staging_pool->release(std::move(job.staging));
    bool failed = std::holds_alternative<std::exception_ptr>(outcome);
    std::optional<uint64_t> committed = failed ? latest() : std::nullopt;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      outcomes_[job.handle] = std::move(outcome);
      in_flight_.erase(job.handle);
      // A failed save gives its step number back when no later save was queued, so the
      // caller can retry the same step.
      if (failed && last_step_ == job.step) last_step_ = committed;
    }
    done_cv_.notify_all();
  }
}

std::vector<Pending> Engine::encode(const Job& job, const Manifest* parent, bool full) {
  const size_t n = job.tensors.size();
  std::vector<Pending> pending(n);
  std::map<std::string_view, const TensorEntry*> base;
  if (!full)
    for (const auto& e : parent->info.entries) base[e.name] = &e;

  // Checksums first, in parallel: they decide what an incremental step must store.
#pragma omp parallel for schedule(dynamic) num_threads(options_.threads)
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = job.tensors[i].tensor;
    pending[i].entry.xxh3 = XXH3_64bits(t.data(), t.nbytes());
  }

  std::unique_ptr<StepReader> parent_reader;
  codec::LosslessOptions codec_options;
  codec_options.threads = options_.threads;
  codec::LosslessOptions delta_options = codec_options;
  delta_options.delta = true;  // the XOR with the parent step: docs/TKZ.md, the delta layout
  for (size_t i = 0; i < n; ++i) {
    const NamedTensor& nt = job.tensors[i];
    Pending& p = pending[i];
    TensorEntry& e = p.entry;
    e.name = nt.name;
    e.dtype = nt.tensor.dtype();
    e.shape = nt.tensor.shape();
    e.nbytes = nt.tensor.nbytes();
    std::span<const uint8_t> bytes(nt.tensor.data(), nt.tensor.nbytes());
    p.data = bytes;
    e.encoding = "raw";

    if (!full) {
      auto h = holder_.find(e.name);
      if (h != holder_.end() && h->second.dtype == e.dtype && h->second.shape == e.shape && h->second.xxh3 == e.xxh3) {
        e.encoding = "ref";
        e.source_step = h->second.step;
        p.data = {};
        continue;
      }
    }
    auto b = full ? base.end() : base.find(e.name);
    if (b != base.end() && b->second->dtype == e.dtype && b->second->shape == e.shape) {
      const TensorEntry& be = *b->second;
      // Changed since the newest step: try the XOR with the parent's value, which is
      // mostly zero bits when the tensor changed little.
      if (!parent_reader) parent_reader = std::make_unique<StepReader>(dir_, parent->info.step);
      std::vector<uint8_t> delta(e.nbytes);
      parent_reader->read(be, delta);
      codec::bitx_xor(delta, bytes, delta);
      std::vector<uint8_t> frame = codec::lossless_compress(e.dtype, delta, delta_options);
      if (frame.size() <= options_.delta_max_ratio * static_cast<double>(e.nbytes)) {
        e.encoding = "xor-lossless";
        e.source_step = parent->info.step;
        p.encoded = std::move(frame);
        p.data = p.encoded;
        continue;
      }
    }
    if (options_.compression == Compression::kLossless && e.nbytes > 0) {
      std::vector<uint8_t> frame = codec::lossless_compress(e.dtype, bytes, codec_options);
      if (frame.size() < e.nbytes) {
        e.encoding = "lossless";
        p.encoded = std::move(frame);
        p.data = p.encoded;
      }
    }
  }
  return pending;
}

uint64_t Engine::write_step(const io::DirFd& tmp_dir, std::vector<Pending>& pending, std::vector<ShardInfo>& shards,
                           const Metadata& metadata) {
  // Assign stored tensors to shards in manifest order.
  std::vector<std::vector<size_t>> groups;
  uint64_t group_bytes = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].entry.encoding == "ref") continue;
    uint64_t size = pending[i].data.size();
    if (groups.empty() || (options_.shard_bytes > 0 && group_bytes > 0 && group_bytes + size > options_.shard_bytes)) {
      groups.emplace_back();
      group_bytes = 0;
    }
    groups.back().push_back(i);
    group_bytes += size;
  }
  shards.resize(groups.size());
  std::vector<std::exception_ptr> errors(groups.size());
  uint64_t written = 0;

#pragma omp parallel for schedule(dynamic) num_threads(options_.threads) reduction(+ : written)
  for (size_t g = 0; g < groups.size(); ++g) {
    try {
      std::vector<ShardItem> items;
      for (size_t i : groups[g]) {
        const Pending& p = pending[i];
        ShardItem item;
        item.info.name = p.entry.name;
        if (p.entry.encoding == "raw") {
          item.info.dtype = p.entry.dtype;
          item.info.shape = p.entry.shape;
        } else {
          item.info.dtype = DType::kU8;
          item.info.shape = {static_cast<int64_t>(p.data.size())};
        }
        item.info.nbytes = p.data.size();
        item.bytes = p.data;
        items.push_back(std::move(item));
      }
      // The caller's metadata goes into every shard as well, so that a full step of a
      // model file is that file again.
      const std::string name = shard_name(g);
      WrittenShard shard = write_shard(tmp_dir, name, items, metadata);
      for (size_t k = 0; k < groups[g].size(); ++k) {
        Pending& p = pending[groups[g][k]];
        p.entry.shard = name;
        p.entry.offset = shard.offsets[k];
        p.entry.stored_bytes = p.data.size();
      }
      uint64_t offset = shard.bytes;
      shards[g] = {name, offset};
      written += offset;
    } catch (...) {
      errors[g] = std::current_exception();
    }
  }
  for (auto& err : errors)
    if (err) std::rethrow_exception(err);
  return written;
}

SaveStats Engine::process(Job& job) {
  auto t0 = Clock::now();
  SaveStats stats;
  stats.step = job.step;
  stats.stall_seconds = job.stall_seconds;
  if (job.device_copies) job.device_copies->wait();  // the snapshot's bytes from the device

  bool full = !options_.incremental || !last_full_ || since_full_ + 1 >= options_.full_every;
  std::vector<Pending> pending = encode(job, last_full_ ? &*last_full_ : nullptr, full);

  const io::DirFd root = io::DirFd::open(dir_);
  const std::string final_name = step_dir_name(job.step);
  const std::string final_dir = root.child_path(final_name);
  const std::string tmp_name = final_name + ".tmp-" + fs::unique_suffix();
  Manifest manifest;
  std::vector<uint8_t> manifest_bytes;
  try {
    io::DirFd tmp_dir = root.make_dir(tmp_name);
    stats.written_bytes = write_step(tmp_dir, pending, manifest.shards, job.metadata);
    stats.write_seconds = seconds_since(t0);

    StepInfo& info = manifest.info;
    info.step = job.step;
    info.created = utc_now_iso8601();
    info.metadata = job.metadata;
    if (!full) info.parent = last_full_->info.step;
    for (auto& p : pending) {
      stats.logical_bytes += p.entry.nbytes;
      if (p.entry.encoding == "ref") ++stats.tensors_referenced;
      else if (p.entry.encoding.starts_with("xor")) ++stats.tensors_delta;
      else ++stats.tensors_stored;
      info.entries.push_back(std::move(p.entry));
    }
    manifest_bytes = manifest_encode(manifest);
  } catch (...) {
    fs::remove_tree(root, tmp_name);
    throw;
  }
  auto t1 = Clock::now();
  publish_step(root, tmp_name, job.step, manifest_bytes);
  stats.written_bytes += manifest_bytes.size();
  stats.commit_seconds = seconds_since(t1);
  auto t2 = Clock::now();
  if (options_.incremental) remember_holders(manifest.info);
  if (full) {
    manifest.info.dir = final_dir;
    last_full_ = std::move(manifest);
    since_full_ = 0;
  } else {
    ++since_full_;
  }
  if (!options_.durable_dir.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    flush_queue_.emplace_back(job.step, Clock::now());
    flush_cv_.notify_one();
  }
  // The save is done; a retention step that fails is tried again after the next commit
  // (or by gc()) and must not make a committed save look failed.
  if (options_.keep_last > 0 || options_.keep_every > 0) {
    try {
      apply_retention();
    } catch (const Error&) {
    }
  }
  stats.commit_seconds += seconds_since(t2);
  return stats;
}

GcReport Engine::apply_retention() {
  GcReport report;
  std::vector<StepInfo> steps = list();
  std::vector<uint64_t> victims = retention_victims(steps, options_.keep_last, options_.keep_every);
  std::set<uint64_t> busy;
  {
    // Steps still waiting to be copied to the durable tier stay until they are.
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [s, t] : flush_queue_) busy.insert(s);
    if (flushing_) busy.insert(flushing_->first);
  }
  if (last_full_) busy.insert(last_full_->info.step);  // the parent of the next incremental save
  // A step that stays keeps what it depends on, or it could not be read (nor copied).
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    if (busy.count(it->step))
      for (uint64_t d : step_dependencies(*it)) busy.insert(d);
  for (uint64_t s : victims) {
    if (busy.count(s)) continue;
    auto it = std::find_if(steps.begin(), steps.end(), [&](const StepInfo& i) { return i.step == s; });
    report.bytes_freed += it->stored_bytes;
    remove_step(dir_, s);
    report.removed_steps.push_back(s);
  }
  return report;
}

void Engine::flusher_loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      flush_cv_.wait(lock, [&] { return stop_ || !flush_queue_.empty(); });
      if (flush_queue_.empty()) return;
      flushing_ = flush_queue_.front();
      flush_queue_.pop_front();
    }
    try {
      uint64_t step = flushing_->first;
      if (fs::exists(dir_ + "/" + step_dir_name(step) + "/" + kManifestName)) {
        copy_step(dir_, options_.durable_dir, step);
        if (options_.keep_last > 0 || options_.keep_every > 0) {
          std::vector<StepInfo> durable_steps = list_steps(options_.durable_dir);
          for (uint64_t s : retention_victims(durable_steps, options_.keep_last, options_.keep_every))
            remove_step(options_.durable_dir, s);
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!flush_error_) flush_error_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      flushing_.reset();
    }
    done_cv_.notify_all();
  }
}

FlushStatus Engine::flush_status() const {
  FlushStatus status;
  status.latest_committed = latest();
  if (!options_.durable_dir.empty()) {
    auto durable = committed_steps(options_.durable_dir);
    if (!durable.empty()) status.latest_durable = durable.back();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  status.pending = flush_queue_.size() + (flushing_ ? 1 : 0);
  std::optional<Clock::time_point> oldest;
  if (flushing_) oldest = flushing_->second;
  else if (!flush_queue_.empty()) oldest = flush_queue_.front().second;
  if (oldest) status.lag_seconds = seconds_since(*oldest);
  return status;
}

std::optional<uint64_t> Engine::latest() const {
  auto steps = committed_steps(dir_);
  if (steps.empty()) return std::nullopt;
  return steps.back();
}

std::vector<StepInfo> Engine::list() const { return listed_infos(list_each()); }

std::vector<StepListing> Engine::list_each() const {
  std::vector<StepListing> steps = list_steps_each(dir_);
  if (!options_.durable_dir.empty()) {
    auto durable = committed_steps(options_.durable_dir);
    for (auto& s : steps)
      if (s.info) s.info->durable = std::binary_search(durable.begin(), durable.end(), s.step);
  }
  return steps;
}

StepInfo Engine::info(uint64_t step) const {
  StepReader reader(dir_, step);
  StepInfo info = reader.manifest().info;
  if (!options_.durable_dir.empty())
    info.durable = fs::exists(options_.durable_dir + "/" + step_dir_name(step) + "/" + kManifestName);
  return info;
}

std::vector<NamedTensor> Engine::restore(uint64_t step) const {
  StepReader reader(dir_, step);
  reader.require_parts();
  const auto& entries = reader.manifest().info.entries;
  for (const auto& e : entries) reader.check_claims(e);  // before allocating what they claim
  std::vector<NamedTensor> out;
  out.reserve(entries.size());
  for (const auto& e : entries) out.push_back({e.name, Tensor::empty(e.dtype, e.shape)});
  std::vector<std::exception_ptr> errors(entries.size());
#pragma omp parallel for schedule(dynamic) num_threads(options_.threads)
  for (size_t i = 0; i < entries.size(); ++i) {
    try {
      reader.read(entries[i], {out[i].tensor.mutable_data(), entries[i].nbytes});
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (auto& err : errors)
    if (err) std::rethrow_exception(err);
  return out;
}

void Engine::restore_into(uint64_t step, std::span<NamedTensor> targets) const {
  StepReader reader(dir_, step);
  reader.require_parts();
  const auto& entries = reader.manifest().info.entries;
  const auto by_name = entries_by_name(entries);
  std::vector<const TensorEntry*> matched(targets.size());
  std::vector<char> on_device(targets.size());  // read by the threads below: not vector<bool>
  for (size_t i = 0; i < targets.size(); ++i) {
    auto found = by_name.find(targets[i].name);
    if (found == by_name.end()) throw invalid_input("no tensor '" + targets[i].name + "' in step " + std::to_string(step), dir_);
    const TensorEntry* it = found->second;
    const Tensor& t = targets[i].tensor;
    if (t.dtype() != it->dtype || t.shape() != it->shape)
      throw usage_error("restore target is " + std::string(dtype_name(t.dtype())) + " " + shape_to_string(t.shape()) +
                            ", the step holds " + dtype_name(it->dtype) + " " + shape_to_string(it->shape),
                        tensor_where(step, it->name));
    if (!t.buffer().writable()) throw usage_error("restore target is read-only", tensor_where(step, it->name));
    matched[i] = it;
    on_device[i] = in_device_memory(t);
  }
  std::vector<std::exception_ptr> errors(targets.size());
#pragma omp parallel for schedule(dynamic) num_threads(options_.threads)
  for (size_t i = 0; i < targets.size(); ++i) {
    try {
      const uint64_t nbytes = matched[i]->nbytes;
      if (on_device[i]) {
        // Checked in host memory first: the device buffer only ever gets verified bytes.
        Buffer host = Buffer::allocate(nbytes);
        reader.read(*matched[i], {host.mutable_data(), nbytes});
        device_copier().upload(targets[i].tensor.mutable_data(), host.data(), nbytes);
      } else {
        reader.read(*matched[i], {targets[i].tensor.mutable_data(), nbytes});
      }
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (auto& err : errors)
    if (err) std::rethrow_exception(err);
}

void Engine::restore_stream(uint64_t step, const std::vector<std::string>& names, const RestoreSink& sink) const {
  StepReader reader(dir_, step);
  reader.require_parts();
  const auto& entries = reader.manifest().info.entries;
  const auto by_name = entries_by_name(entries);
  std::vector<const TensorEntry*> matched;
  for (const std::string& name : names) {
    auto found = by_name.find(name);
    if (found == by_name.end()) throw invalid_input("no tensor '" + name + "' in step " + std::to_string(step), dir_);
    matched.push_back(found->second);
  }
  for (size_t i = 0; i < matched.size(); ++i) {
    sink.begin(i);
    reader.stream(*matched[i], sink.piece);
    sink.end(i);
  }
}

VerifyReport Engine::verify(uint64_t step) const {
  VerifyReport report;
  report.step = step;
  std::unique_ptr<StepReader> reader;
  try {
    reader = std::make_unique<StepReader>(dir_, step);
  } catch (const Error& err) {
    report.problems.push_back((err.where().empty() ? "" : err.where() + ": ") + err.message());
    return report;
  }
  report.problems = reader->check_layout();
  const auto& entries = reader->manifest().info.entries;
  std::vector<std::string> problems(entries.size());
#pragma omp parallel for schedule(dynamic) num_threads(options_.threads)
  for (size_t i = 0; i < entries.size(); ++i) {
    try {
      // A piece at a time: checking a tensor needs no room for it.
      reader->stream(entries[i], [](std::span<const uint8_t>) {});
    } catch (const Error& err) {
      problems[i] = (err.where().empty() ? "" : err.where() + ": ") + err.message();
    } catch (const std::exception& err) {
      problems[i] = tensor_where(step, entries[i].name) + ": " + err.what();
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!problems[i].empty()) report.problems.push_back(problems[i]);
    report.tensors_checked += 1;
    report.bytes_checked += entries[i].nbytes;
  }
  return report;
}

GcReport Engine::gc() {
  if (options_.read_only) throw usage_error("checkpoint opened read-only", dir_);
  wait_all();
  GcReport report;
  if (options_.keep_last > 0 || options_.keep_every > 0) report = apply_retention();
  report.removed_temp_dirs = cleanup_leftovers(dir_) + std::exchange(leftovers_removed_, 0);
  return report;
}

}  // namespace

SaveStats Checkpointer::save(uint64_t step, std::vector<NamedTensor> tensors, Metadata metadata) {
  return wait(save_async(step, std::move(tensors), std::move(metadata), Snapshot::kBorrow));
}

std::unique_ptr<Checkpointer> Checkpointer::open(const std::string& dir, const Options& options) {
  return std::make_unique<Engine>(dir, options);
}

}  // namespace tk::ckpt
