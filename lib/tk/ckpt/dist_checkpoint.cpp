// The distributed checkpointer: rank-local writes in a background thread, and a commit
// made of two small collectives (statuses gathered at rank 0, the outcome broadcast).
// Only this file talks to the communicator, and only from the caller's thread.
#include "tk/ckpt/dist_checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <exception>
#include <future>
#include <set>
#include <thread>

#include "tk/ckpt/dist_flush.h"
#include "tk/ckpt/dist_part.h"
#include "tk/ckpt/fileops.h"
#include "tk/ckpt/manifest.h"
#include "tk/ckpt/staging.h"
#include "tk/ckpt/step_reader.h"
#include "tk/ckpt/tier.h"

namespace tk::ckpt {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// What a rank reports and rank 0 answers: a fixed-size record, so the gather moves
// 512 bytes per rank whatever the step holds.
struct Record {
  int32_t kind = -1;  // -1: ok; else an ErrorKind
  uint32_t reserved = 0;
  uint64_t value = 0;   // open: newest step + 1 (0: none); commit: step bytes
  uint64_t value2 = 0;  // commit with a node-local tier: the manifest's size
  char text[488] = {};

  static Record ok(uint64_t value = 0, const std::string& text = {}) {
    Record r;
    r.value = value;
    std::strncpy(r.text, text.c_str(), sizeof r.text - 1);
    return r;
  }
  static Record failure(const Error& e, const std::string& prefix = {}) {
    Record r;
    r.kind = static_cast<int32_t>(e.kind());
    std::string text = prefix + e.message() + (e.where().empty() ? "" : " (" + e.where() + ")");
    std::strncpy(r.text, text.c_str(), sizeof r.text - 1);
    return r;
  }
  static Record from(std::span<const uint8_t> bytes) {
    Record r;
    if (bytes.size() < sizeof r) return failure(internal_error("short status record"));
    std::memcpy(&r, bytes.data(), sizeof r);
    return r;
  }
  bool good() const { return kind < 0; }
  Error error() const { return Error(static_cast<ErrorKind>(kind), std::string(text, strnlen(text, sizeof text))); }
  std::span<uint8_t> bytes() { return {reinterpret_cast<uint8_t*>(this), sizeof *this}; }
};
static_assert(sizeof(Record) == 512);

// Rank 0's verdict on the records gathered from every rank: the first failure, naming
// its rank, or ok.
Record first_failure(const std::vector<std::span<const uint8_t>>& records) {
  for (size_t r = 0; r < records.size(); ++r) {
    Record got = Record::from(records[r]);
    if (!got.good()) return Record::failure(got.error(), "rank " + std::to_string(r) + ": ");
  }
  return Record::ok();
}

// A round in which every rank reports `mine` and gets rank 0's verdict.
Record agree(dist::Comm& comm, Record mine, Clock::time_point deadline) {
  std::vector<uint8_t> all = comm.gather(mine.bytes(), deadline);
  Record verdict;
  if (comm.rank() == 0) {
    std::vector<std::span<const uint8_t>> records;
    for (size_t r = 0; r < static_cast<size_t>(comm.size()); ++r)
      records.emplace_back(all.data() + sizeof(Record) * r, sizeof(Record));
    verdict = first_failure(records);
  }
  comm.broadcast(verdict.bytes(), deadline);
  return verdict;
}

// The box a slice descriptor names: empty offsets are all 0, an empty shape the global one.
Box box_of(const DistSlice& s) {
  return {s.offsets.empty() ? Shape(s.global_shape.size(), 0) : s.offsets, s.shape.empty() ? s.global_shape : s.shape};
}

// Remove temp directory `name` of `dir`; best effort.
void remove_temp(const std::string& dir, const std::string& name) noexcept {
  try {
    fs::remove_tree(io::DirFd::open(dir), name);
  } catch (...) {
  }
}

// What identifies a node's tier: ranks that see the same directory share it.
std::string node_key(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw errno_error("cannot stat the node-local directory", dir, errno);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

}  // namespace

struct DistCheckpointer::Impl {
  std::unique_ptr<fs::DirLock> lock;        // rank 0: the shared directory
  std::unique_ptr<fs::DirLock> local_lock;  // node leaders: the node-local directory
  bool node_leader = false;                 // the lowest rank of its node
  std::string token;                  // names this job's temp directories
  uint64_t sequence = 0;              // saves so far, the same on every rank
  std::optional<uint64_t> last_step;  // newest committed or pending step
  std::optional<uint64_t> committed;  // newest committed step
  StagingPool pool;
  std::unique_ptr<DistFlusher> flusher;  // with a node-local tier

  // The pending save.
  uint64_t step = 0;
  std::string tmp_name;
  std::optional<Error> local_error;  // from save_async's checks
  Buffer staging;
  std::vector<LocalSlice> slices;
  std::vector<uint8_t*> staged;  // where each slice's copy goes in `staging`
  std::future<void> snapshot;    // a lazy snapshot's copy, until it is waited for
  std::thread writer;
  std::exception_ptr write_error;
  uint64_t written = 0;
  std::vector<uint8_t> part;  // this rank's part file, as written
  std::optional<std::string> shard;  // its shard file, when it stored data
  double stall_seconds = 0, write_seconds = 0;
};

DistCheckpointer::DistCheckpointer(std::string dir, std::unique_ptr<dist::Comm> comm, const DistOptions& options)
    : dir_(std::move(dir)), comm_(std::move(comm)), options_(options), impl_(std::make_unique<Impl>()) {
  if (options_.threads < 1) options_.threads = 1;
  if (!(options_.timeout_seconds > 0)) options_.timeout_seconds = 300;
  auto deadline = [&] { return deadline_after(options_.timeout_seconds); };
  Record prepared;
  if (rank() == 0) {
    try {
      if (fs::exists(dir_) && !fs::is_dir(dir_)) throw invalid_input("not a directory", dir_);
      fs::make_dirs(dir_);
      check_checkpoint_dir(dir_);
      impl_->lock = std::make_unique<fs::DirLock>(dir_);
      cleanup_leftovers(dir_);
      repair_latest(dir_);
      auto steps = committed_steps(dir_);
      prepared = Record::ok(steps.empty() ? 0 : steps.back() + 1, fs::unique_suffix());
    } catch (...) {
      prepared = Record::failure(error_from(std::current_exception()), "rank 0: ");
    }
  }
  collective([&] { comm_->broadcast(prepared.bytes(), deadline()); });
  if (!prepared.good()) throw prepared.error();
  try {
    impl_->pool.reserve(options_.staging_bytes);
  } catch (const Error&) {
    // Out of memory now: the first save tries again, and reports it.
  }
  impl_->token = std::string(prepared.text, strnlen(prepared.text, sizeof prepared.text));
  if (prepared.value) impl_->last_step = impl_->committed = prepared.value - 1;
  // Every rank must see the directory rank 0 prepared (a node-local path that differs
  // between nodes would split the step).
  Record seen = fs::exists(dir_ + "/.lock") ? Record::ok()
                                            : Record::failure(invalid_input("does not see the checkpoint directory rank 0 "
                                                                            "prepared (it must be shared by every rank)", dir_));
  if (tiered() && seen.good()) {
    try {
      open_node_tier(impl_->committed);
    } catch (...) {
      seen = Record::failure(error_from(std::current_exception()));
    }
  } else if (tiered()) {
    collective([&] { comm_->allgather({}, deadline()); });  // the node keys' round, taken part in
  }
  Record verdict = collective([&] { return agree(*comm_, seen, deadline()); });
  if (!verdict.good()) throw verdict.error();
  if (tiered()) {
    DistFlusher::Config config;
    config.local_dir = options_.local_dir;
    config.shared_dir = dir_;
    config.rank = static_cast<uint32_t>(rank());
    config.node_leader = impl_->node_leader;
    config.timeout_seconds = options_.timeout_seconds;
    config.keep_last = options_.keep_last;
    impl_->flusher = std::make_unique<DistFlusher>(config);
  }
}

void DistCheckpointer::open_node_tier(std::optional<uint64_t> newest_shared) {
  // Which ranks share this node's directory: the lowest of them looks after it.
  std::string key;
  std::optional<Error> failed;
  try {
    const std::string& local = options_.local_dir;
    if (fs::exists(local) && !fs::is_dir(local)) throw invalid_input("node-local tier is not a directory", local);
    fs::make_dirs(local);
    key = node_key(local);
    if (key == node_key(dir_)) throw usage_error("the node-local tier is the shared directory itself", local);
  } catch (...) {
    failed = error_from(std::current_exception());
  }
  auto keys = collective([&] {
    return comm_->allgather({reinterpret_cast<const uint8_t*>(key.data()), key.size()},
                            deadline_after(options_.timeout_seconds));
  });
  if (failed) throw *failed;
  impl_->node_leader = true;
  for (int r = 0; r < rank(); ++r)
    if (std::string(keys[static_cast<size_t>(r)].begin(), keys[static_cast<size_t>(r)].end()) == key)
      impl_->node_leader = false;
  if (!impl_->node_leader) return;
  const std::string& local = options_.local_dir;
  check_checkpoint_dir(local);
  impl_->local_lock = std::make_unique<fs::DirLock>(local);
  cleanup_leftovers(local);
  // Steps newer than the shared tier's newest were never flushed: a later job may save
  // those step numbers again, so they cannot be trusted as copies.
  for (uint64_t s : committed_steps(local))
    if (!newest_shared || s > *newest_shared) remove_step(local, s);
  repair_latest(local);
}

DistCheckpointer::~DistCheckpointer() {
  if (impl_ && impl_->writer.joinable()) impl_->writer.join();
  if (impl_) impl_->flusher.reset();  // finishes the queued flushes
}

void DistCheckpointer::save_async(uint64_t step, const std::vector<DistSlice>& slices, Snapshot snapshot) {
  begin_save(step, slices, std::nullopt, snapshot);
}

void DistCheckpointer::save_async_refused(uint64_t step, const Error& why) {
  begin_save(step, {}, why, Snapshot::kNow);
  throw why;  // not reached: begin_save rethrows it
}

double DistCheckpointer::snapshot_wait() {
  Impl& m = *impl_;
  if (!m.snapshot.valid()) return 0;
  auto t0 = Clock::now();
  m.snapshot.get();
  const double blocked = seconds_since(t0);
  m.stall_seconds += blocked;
  return blocked;
}

void DistCheckpointer::begin_save(uint64_t step, const std::vector<DistSlice>& slices, const std::optional<Error>& refused,
                                  Snapshot snapshot) {
  auto t0 = Clock::now();
  if (broken_) throw runtime_error("checkpointer unusable after a failed collective", dir_);
  if (pending_) throw usage_error("a save is already pending; wait() for it first", dir_);
  Impl& m = *impl_;
  m.step = step;
  m.local_error.reset();
  m.write_error = nullptr;
  m.written = 0;
  m.write_seconds = 0;
  m.slices.clear();
  m.part.clear();
  m.shard.reset();
  m.tmp_name = step_dir_name(step) + ".tmp-" + m.token + '-' + std::to_string(++m.sequence);
  const auto deadline = deadline_after(options_.timeout_seconds);

  std::vector<LocalSlice> local;
  try {
    if (refused) throw *refused;
    if (m.last_step && step <= *m.last_step)
      throw usage_error("step " + std::to_string(step) + " is not after the newest step " + std::to_string(*m.last_step), dir_);
    for (const auto& s : slices) {
      LocalSlice l;
      l.name = s.name;
      l.dtype = s.dtype;
      l.global_shape = s.global_shape;
      l.box = box_of(s);
      l.bytes = {s.data, s.nbytes};
      l.replicated = s.replicated;
      if (s.nbytes > 0 && s.data == nullptr) throw usage_error("data is NULL", "tensor '" + s.name + "'");
      local.push_back(std::move(l));
    }
    check_local_slices(local);
  } catch (const Error& e) {
    m.local_error = e;
    local.clear();
  }
  // Which rank saves each replicated tensor: the lowest that passes it.
  std::string names;
  for (const auto& l : local)
    if (l.replicated) names += l.name + '\0';
  auto everyone = collective([&] {
    return comm_->allgather({reinterpret_cast<const uint8_t*>(names.data()), names.size()}, deadline);
  });
  pending_ = true;
  if (m.local_error) {
    m.stall_seconds = seconds_since(t0);
    throw *m.local_error;
  }
  try {
    std::set<std::string> lower;
    for (int r = 0; r < rank(); ++r) {
      const auto& list = everyone[static_cast<size_t>(r)];
      for (size_t a = 0, b = 0; b < list.size(); ++b)
        if (list[b] == 0) lower.emplace(reinterpret_cast<const char*>(list.data() + a), b - a), a = b + 1;
    }
    for (auto& l : local)
      if (l.replicated && lower.count(l.name)) l.store = false;

    // Copy everything, replicas another rank stores included (they are hashed in the
    // background, to check them against the saved copy), so that the caller may change
    // its memory as soon as this returns (Snapshot::kNow) or snapshot_wait() does (kLazy:
    // the writer takes the copy first).
    uint64_t total = 0;
    std::vector<uint64_t> offsets;
    for (const auto& l : local) {
      offsets.push_back(total);
      // Page-aligned copies: the shard writer sends them to the device as they are.
      total += (l.bytes.size() + fs::kDirectAlignment - 1) / fs::kDirectAlignment * fs::kDirectAlignment;
    }
    m.staging = m.pool.acquire(total);
    m.staged.clear();
    for (size_t i = 0; i < local.size(); ++i) m.staged.push_back(m.staging.mutable_data() + offsets[i]);
    m.slices = std::move(local);
    if (snapshot == Snapshot::kNow) copy_snapshot();
    m.last_step = step;
  } catch (...) {
    // Too late to refuse the save alone (the others are past the allgather): fail it
    // through wait() on every rank.
    m.local_error = error_from(std::current_exception());
    m.slices.clear();
    m.stall_seconds = seconds_since(t0);
    throw *m.local_error;
  }
  std::promise<void> copied;
  if (snapshot == Snapshot::kLazy) m.snapshot = copied.get_future();
  m.stall_seconds = seconds_since(t0);
  m.writer = std::thread([this, snapshot, copied = std::move(copied)]() mutable {
    Impl& w = *impl_;
    auto t1 = Clock::now();
    if (snapshot == Snapshot::kLazy) {
      copy_snapshot();
      copied.set_value();
    }
    try {
      io::DirFd root = io::DirFd::open(write_dir());
      io::DirFd tmp = root.make_dir(w.tmp_name);
      RankPart part = write_rank_part(tmp, w.step, static_cast<uint32_t>(rank()), static_cast<uint32_t>(size()),
                                      w.slices, options_.threads, &w.written, &w.part);
      if (part.shard) w.shard = part.shard->file;
    } catch (...) {
      w.write_error = std::current_exception();
    }
    w.write_seconds = seconds_since(t1);
  });
}

void DistCheckpointer::copy_snapshot() {
  Impl& m = *impl_;
  for (size_t i = 0; i < m.slices.size(); ++i) {
    snapshot_copy(m.staged[i], m.slices[i].bytes.data(), m.slices[i].bytes.size());
    m.slices[i].bytes = {m.staged[i], m.slices[i].bytes.size()};
  }
}

DistSaveStats DistCheckpointer::wait() {
  if (broken_) throw runtime_error("checkpointer unusable after a failed collective", dir_);
  if (!pending_) throw usage_error("no save is pending", dir_);
  Impl& m = *impl_;
  if (m.writer.joinable()) m.writer.join();
  snapshot_wait();  // taken by now: the writer took it first
  pending_ = false;
  m.slices.clear();
  if (!m.staging.empty()) m.pool.release(std::move(m.staging));
  m.staging = Buffer();
  auto t0 = Clock::now();
  const auto deadline = deadline_after(options_.timeout_seconds);

  // Each rank's status and, when it succeeded, its part: rank 0 merges the parts into
  // the global manifest without reading any file.
  Record mine = m.local_error ? Record::failure(*m.local_error)
                : m.write_error ? Record::failure(error_from(m.write_error))
                                : Record::ok(m.written);
  std::vector<uint8_t> report(mine.bytes().begin(), mine.bytes().end());
  if (mine.good()) report.insert(report.end(), m.part.begin(), m.part.end());
  std::vector<std::vector<uint8_t>> all = collective([&] { return comm_->gatherv(report, deadline); });

  Record outcome;
  std::vector<uint8_t> manifest;
  std::vector<uint64_t> part_bytes;
  if (rank() == 0) {
    std::vector<std::span<const uint8_t>> records(all.begin(), all.end());
    outcome = first_failure(records);
    // Whatever happens here becomes the outcome every rank gets: rank 0 must reach
    // the broadcast, or the others would wait for it until their deadline.
    try {
      if (outcome.good()) {
        std::vector<RankPart> parts;
        for (size_t r = 0; r < all.size(); ++r) {
          std::span<const uint8_t> bytes = std::span<const uint8_t>(all[r]).subspan(sizeof(Record));
          RankPart part = part_decode(bytes, step_dir_name(m.step) + ": rank " + std::to_string(r));
          if (part.rank != r || part.step != m.step) throw internal_error("rank " + std::to_string(r) + " sent another part");
          parts.push_back(std::move(part));
          part_bytes.push_back(bytes.size());
        }
        Manifest merged = step_manifest(m.step, parts, part_bytes);
        manifest = manifest_encode(merged);
        outcome = Record::ok(merged.info.logical_bytes);
        outcome.value2 = manifest.size();
        if (!tiered()) {
          publish_step(io::DirFd::open(dir_), m.tmp_name, m.step, manifest);
          keep_newest(dir_, options_.keep_last);
        }
      }
    } catch (...) {
      outcome = Record::failure(error_from(std::current_exception()), "rank 0: ");
    }
  }
  collective([&] { comm_->broadcast(outcome.bytes(), deadline); });
  // A failed step's temp directory goes, removed by whoever publishes into it (every
  // rank writing there has finished).
  if (!outcome.good() && (tiered() ? m.node_leader : rank() == 0)) remove_temp(write_dir(), m.tmp_name);

  if (tiered() && outcome.good()) {
    // The node-local commit: every node's leader publishes its node's parts with the
    // global manifest, and the step counts only when every node has.
    manifest.resize(outcome.value2);
    collective([&] { comm_->broadcast(manifest, deadline); });
    Record published = Record::ok();
    if (m.node_leader) {
      try {
        publish_step(io::DirFd::open(write_dir()), m.tmp_name, m.step, manifest);
      } catch (...) {
        published = Record::failure(error_from(std::current_exception()));
      }
    }
    Record verdict = collective([&] { return agree(*comm_, published, deadline); });
    if (!verdict.good()) {
      if (m.node_leader && published.good()) uncommit_step(write_dir(), m.step);
      outcome = verdict;
    }
  }
  if (!outcome.good()) {
    m.last_step = m.committed;  // the step number may be tried again
    throw outcome.error();
  }
  m.committed = m.step;
  if (m.flusher) {
    FlushJob job;
    job.step = m.step;
    job.tmp_name = m.tmp_name;
    job.shard = m.shard;
    job.world_size = static_cast<uint32_t>(size());
    job.part_bytes = std::move(part_bytes);
    if (rank() == 0) job.manifest = std::move(manifest);
    job.committed = Clock::now();
    m.flusher->enqueue(std::move(job));
  }
  DistSaveStats stats;
  stats.step = m.step;
  stats.stall_seconds = m.stall_seconds;
  stats.write_seconds = m.write_seconds;
  stats.commit_seconds = seconds_since(t0);
  stats.written_bytes = m.written;
  stats.step_bytes = outcome.value;
  return stats;
}

void DistCheckpointer::flush() {
  if (broken_) throw runtime_error("checkpointer unusable after a failed collective", dir_);
  // A rank whose flushes failed at once waits here for those still waiting on theirs:
  // up to the timeout for each step queued.
  const size_t queued = impl_->flusher ? impl_->flusher->queued() : 0;
  std::optional<Error> failed = impl_->flusher ? impl_->flusher->drain() : std::nullopt;
  const auto deadline = deadline_after(options_.timeout_seconds * static_cast<double>(queued + 1));
  Record verdict = collective([&] { return agree(*comm_, failed ? Record::failure(*failed) : Record::ok(), deadline); });
  if (!verdict.good()) throw verdict.error();
}

DistFlushStatus DistCheckpointer::flush_status() const {
  DistFlushStatus status;
  status.latest_committed = impl_->committed;
  status.latest_durable = latest();
  if (impl_->flusher) status.steps = impl_->flusher->lags();
  return status;
}

std::optional<uint64_t> DistCheckpointer::latest() const {
  auto steps = committed_steps(dir_);
  if (steps.empty()) return std::nullopt;
  return steps.back();
}

uint32_t DistCheckpointer::world_size(uint64_t step) const {
  StepReader reader(dir_, step);
  return std::max<uint32_t>(reader.manifest().info.world_size, 1);
}

namespace {

// Fill each wanted box from `reader`'s step.
void restore_from(const StepReader& reader, uint64_t step, const std::vector<DistSlice>& wanted, int threads) {
  const auto& entries = reader.manifest().info.entries;
  std::vector<const TensorEntry*> matched(wanted.size());
  std::vector<Box> boxes(wanted.size());
  for (size_t i = 0; i < wanted.size(); ++i) {
    const DistSlice& w = wanted[i];
    const std::string where = tensor_where(step, w.name);
    auto it = std::find_if(entries.begin(), entries.end(), [&](const TensorEntry& e) { return e.name == w.name; });
    if (it == entries.end()) throw invalid_input("no such tensor in the step", where);
    if (w.dtype != it->dtype || w.global_shape != it->shape)
      throw usage_error("wanted as " + std::string(dtype_name(w.dtype)) + " " + shape_to_string(w.global_shape) +
                            ", the step holds " + dtype_name(it->dtype) + " " + shape_to_string(it->shape),
                        where);
    boxes[i] = box_of(w);
    if (!box_inside(boxes[i], it->shape))
      throw usage_error("wanted box lies outside the global shape " + shape_to_string(it->shape), where);
    const bool whole = boxes[i].shape == it->shape;
    const uint64_t need = whole ? it->nbytes : slice_element_bytes(it->dtype, where) * box_numel(boxes[i]);
    if (w.nbytes != need)
      throw usage_error("buffer holds " + std::to_string(w.nbytes) + " bytes, the box needs " + std::to_string(need), where);
    if (need > 0 && w.data == nullptr) throw usage_error("data is NULL", where);
    matched[i] = &*it;
  }
  std::vector<std::exception_ptr> errors(wanted.size());
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (size_t i = 0; i < wanted.size(); ++i) {
    try {
      reader.read_box(*matched[i], boxes[i], {wanted[i].data, wanted[i].nbytes});
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (auto& err : errors)
    if (err) std::rethrow_exception(err);
}

// Whether `local`'s copy of the step holds every shard that the wanted boxes need,
// each of its recorded size.
bool holds_what_is_wanted(const std::string& local_step, const Manifest& manifest, const std::vector<DistSlice>& wanted) {
  std::map<std::string, uint64_t> sizes;
  for (const auto& sh : manifest.shards) sizes[sh.file] = sh.bytes;
  io::DirFd dir = io::DirFd::open(local_step);
  auto present = [&](const std::string& file) {
    auto it = sizes.find(file);
    return it != sizes.end() && dir.file_size(file) == it->second;
  };
  for (const DistSlice& w : wanted) {
    auto e = std::find_if(manifest.info.entries.begin(), manifest.info.entries.end(),
                          [&](const TensorEntry& t) { return t.name == w.name; });
    if (e == manifest.info.entries.end()) return false;
    if (e->slices.empty()) {
      if (!e->shard.empty() && !present(e->shard)) return false;
      continue;
    }
    const Box want = box_of(w);
    for (const SliceEntry& s : e->slices)
      if (box_intersect(want, Box{s.start, s.shape}) && !present(s.shard)) return false;
  }
  return true;
}

}  // namespace

RestoreSource DistCheckpointer::restore(uint64_t step, const std::vector<DistSlice>& wanted) const {
  if (tiered()) {
    try {
      const std::string name = step_dir_name(step);
      const std::string local_step = options_.local_dir + "/" + name;
      const std::string shared_manifest = dir_ + "/" + name + "/" + kManifestName;
      // The same step as the shared tier's, when that has it: its manifest, byte for byte.
      const bool same = fs::exists(local_step + "/" + kManifestName) &&
                        (!fs::exists(shared_manifest) ||
                         fs::read_file(shared_manifest, kMaxManifestBytes) ==
                             fs::read_file(local_step + "/" + kManifestName, kMaxManifestBytes));
      if (same) {
        StepReader reader(options_.local_dir, step);
        if (holds_what_is_wanted(local_step, reader.manifest(), wanted)) {
          restore_from(reader, step, wanted, options_.threads);
          return RestoreSource::kNodeLocal;
        }
      }
    } catch (const Error&) {
      // Damaged, or removed by the flush meanwhile: the shared copy decides.
    }
  }
  StepReader reader(dir_, step);
  restore_from(reader, step, wanted, options_.threads);
  return RestoreSource::kShared;
}

}  // namespace tk::ckpt
