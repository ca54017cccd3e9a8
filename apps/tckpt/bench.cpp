// tckpt bench: what a save costs the training loop, and how close the engine comes to
// the disk. Every figure is measured in the same run against the raw bandwidth of the
// same directory: a sequential write + fsync (what `dd conv=fsync` does) and a read
// with the page cache dropped for the file (posix_fadvise DONTNEED).

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/number_format.h"
#include "cli/report.h"
#include "tckpt.h"
#include "tk/bench/disk.h"
#include "tk/bench/machine.h"
#include "tk/bench/timing.h"
#include "tk/ckpt/checkpoint.h"
#include "tk/core/error.h"

namespace tk::tckpt {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) { return bench::summarize(std::move(v)).median; }

// Fill with pseudo-random bytes quickly (xorshift), so generating 1 GiB takes no time.
void fill_random(uint8_t* p, uint64_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<uint8_t>(x >> (i % 8 * 8));
}

std::vector<ckpt::NamedTensor> make_state(uint64_t total, int count) {
  std::vector<ckpt::NamedTensor> state;
  int64_t per = static_cast<int64_t>(total / static_cast<uint64_t>(count) / 4);
#pragma omp parallel for ordered schedule(static)
  for (int i = 0; i < count; ++i) {
    Tensor t = Tensor::empty(DType::kF32, {per});
    fill_random(t.mutable_data(), t.nbytes(), static_cast<uint64_t>(i) + 1);
#pragma omp ordered
    state.push_back({fmt::format("layer.{:03d}.weight", i), std::move(t)});
  }
  return state;
}

// The raw references, timed: a sequential write made durable, and a sequential read of
// the whole file into `dst` (tk/bench/disk.h, the limit tbench io measures too).
double raw_write(const std::string& path, const uint8_t* src, uint64_t bytes) {
  auto t0 = Clock::now();
  bench::write_file_synced(path, src, bytes);
  return since(t0);
}

double raw_read(const std::string& path, uint8_t* dst, uint64_t capacity) {
  auto t0 = Clock::now();
  bench::read_file_through(path, dst, capacity);
  return since(t0);
}

std::vector<std::string> shard_paths(const ckpt::StepInfo& info) {
  std::vector<std::string> paths;
  for (const auto& e : info.entries)
    if (!e.shard.empty() && std::find(paths.begin(), paths.end(), info.dir + "/" + e.shard) == paths.end())
      paths.push_back(info.dir + "/" + e.shard);
  return paths;
}

}  // namespace

int run_bench(cli::Tool& tool, const BenchOptions& o) {
  const uint64_t size = cli::bytes_parse(o.size, "--size");
  if (size < uint64_t(o.tensors) * 4) throw usage_error("--size is too small for --tensors");
  namespace stdfs = std::filesystem;
  std::string root;
  bool own_root = o.dir.empty();
  if (own_root) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/tckpt-bench-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw errno_error("failed to create a directory", tmpl, errno);
    root = tmpl;
  } else {
    root = o.dir;
    stdfs::create_directories(root);
  }
  const std::string fast = root + "/fast", durable = o.durable.empty() ? root + "/durable" : o.durable;
  const std::string incr = root + "/incremental";
  for (const auto& d : {fast, durable, incr})
    if (stdfs::exists(d) && !stdfs::is_empty(d)) throw usage_error("bench directory is not empty", d);
  stdfs::create_directories(fast);
  stdfs::create_directories(durable);

  tool.summary(fmt::format("state: {} in {} f32 tensors; {} repetitions; directory {}", cli::format_bytes(size),
                           o.tensors, o.repeat, fast));
  std::vector<ckpt::NamedTensor> state = make_state(size, o.tensors);
  uint64_t state_bytes = 0;
  for (const auto& t : state) state_bytes += t.tensor.nbytes();

  std::vector<double> raw_w, raw_w_durable, raw_r_cold, sync_s, stall_copy, stall_borrow, flush_s, restore_cold,
      restore_warm, raw_r_warm;
  Buffer scratch = Buffer::allocate(state_bytes);
  fill_random(scratch.mutable_data(), state_bytes, 99);  // also faults the pages in before timing

  {
    ckpt::Options opts;
    if (tool.options().threads > 0) opts.threads = tool.options().threads;
    auto ck = ckpt::Checkpointer::open(fast, opts);
    // Warm-up: page the staging pool in, so copy-mode stalls are the steady state.
    ck->wait(ck->save_async(0, state, {}, ckpt::Snapshot::kCopy));
    uint64_t step = 1;
    std::vector<ckpt::NamedTensor> targets;
    for (const auto& t : state) targets.push_back({t.name, Tensor::empty(t.tensor.dtype(), t.tensor.shape())});
    for (int r = 0; r < o.repeat; ++r) {
      tool.verbose(1, fmt::format("repetition {}", r + 1));
      // Each measured operation runs back to back with its raw reference, after the same
      // preceding work, and the two swap order on odd repetitions: on a shared virtual
      // disk the bandwidth right after a large write differs from the bandwidth after a
      // pause, and that must not decide the ratio.
      const bool swap = r % 2 == 1;
      auto timed = [](auto&& fn) {
        auto t0 = Clock::now();
        fn();
        return since(t0);
      };
      std::string raw = fast + "/raw.tmp-bench";
      uint64_t sync_step = step;
      auto do_raw_write = [&] { raw_w.push_back(raw_write(raw, scratch.data(), state_bytes)); };
      auto do_sync_save = [&] { sync_s.push_back(timed([&] { ck->save(sync_step, state); })); };
      if (swap) { do_sync_save(); do_raw_write(); } else { do_raw_write(); do_sync_save(); }
      step++;

      // Asynchronous saves: the stall is the time inside save_async().
      auto h = ck->save_async(step++, state, {}, ckpt::Snapshot::kCopy);
      stall_copy.push_back(ck->wait(h).stall_seconds);
      h = ck->save_async(step++, state, {}, ckpt::Snapshot::kBorrow);
      stall_borrow.push_back(ck->wait(h).stall_seconds);

      // Restore with verification against a plain read, cold and warm.
      ckpt::StepInfo info = ck->info(sync_step);
      auto do_raw_cold = [&] {
        bench::drop_file_cache(raw);
        raw_r_cold.push_back(raw_read(raw, scratch.mutable_data(), state_bytes));
      };
      auto do_restore_cold = [&] {
        for (const auto& p : shard_paths(info)) bench::drop_file_cache(p);
        restore_cold.push_back(timed([&] { ck->restore_into(sync_step, targets); }));
      };
      if (swap) { do_restore_cold(); do_raw_cold(); } else { do_raw_cold(); do_restore_cold(); }
      raw_r_warm.push_back(raw_read(raw, scratch.mutable_data(), state_bytes));
      restore_warm.push_back(timed([&] { ck->restore_into(sync_step, targets); }));
      stdfs::remove(raw);

      // Flush one step to the durable tier against a raw write into the same directory.
      std::string tier = durable + fmt::format("/tier-{}", r);
      std::string one = root + fmt::format("/one-{}", r);
      {
        auto single = ckpt::Checkpointer::open(one);
        single->save(1, state);
      }
      std::string raw2 = durable + "/raw.tmp-bench";
      auto do_raw_durable = [&] { raw_w_durable.push_back(raw_write(raw2, scratch.data(), state_bytes)); };
      auto do_flush = [&] { flush_s.push_back(timed([&] { ckpt::flush_steps(one, tier); })); };
      if (swap) { do_flush(); do_raw_durable(); } else { do_raw_durable(); do_flush(); }
      stdfs::remove(raw2);
      stdfs::remove_all(one);
      stdfs::remove_all(tier);
      ck->gc();
      for (uint64_t s : ck->steps())
        if (s + 3 < step) stdfs::remove_all(fast + fmt::format("/step-{}", s));
    }
    for (auto& t : targets)
      for (size_t i = 0; i < state.size(); ++i)
        if (state[i].name == t.name && std::memcmp(state[i].tensor.data(), t.tensor.data(), t.tensor.nbytes()) != 0)
          throw runtime_error("restored data differs from the saved state", t.name);
  }

  // Incremental: a share of the tensors changes each step.
  std::vector<double> incr_ratio;
  uint64_t full_written = 0;
  {
    ckpt::Options opts;
    opts.incremental = true;
    opts.full_every = 1000;
    auto ck = ckpt::Checkpointer::open(incr, opts);
    full_written = ck->save(1, state).written_bytes;
    int changed = std::max(1, static_cast<int>(o.changed * o.tensors + 0.5));
    std::mt19937_64 rng(7);
    for (int r = 0; r < o.repeat; ++r) {
      std::vector<int> idx(o.tensors);
      for (int i = 0; i < o.tensors; ++i) idx[i] = i;
      std::shuffle(idx.begin(), idx.end(), rng);
      for (int k = 0; k < changed; ++k) {
        Tensor& t = state[idx[k]].tensor;
        Tensor fresh = Tensor::empty(t.dtype(), t.shape());
        fill_random(fresh.mutable_data(), fresh.nbytes(), rng());
        t = fresh;
      }
      uint64_t w = ck->save(static_cast<uint64_t>(r) + 2, state).written_bytes;
      incr_ratio.push_back(static_cast<double>(w) / static_cast<double>(full_written));
    }
  }

  const double gb = static_cast<double>(state_bytes) / 1e9;
  double m_sync = median(sync_s), m_stall_copy = median(stall_copy), m_stall_borrow = median(stall_borrow);
  double m_raw_w = gb / median(raw_w), m_raw_w_durable = gb / median(raw_w_durable);
  double m_flush = gb / median(flush_s);
  double m_raw_r_cold = gb / median(raw_r_cold), m_restore_cold = gb / median(restore_cold);
  double m_raw_r_warm = gb / median(raw_r_warm), m_restore_warm = gb / median(restore_warm);
  double m_incr = median(incr_ratio);

  cli::TextTable table({"MEASURE", "VALUE", "REFERENCE", "RATIO"});
  auto pct = [](double v) { return fmt::format("{:.1f}%", 100 * v); };
  table.add_row({"save_async stall (copy)", fmt::format("{:.3f} s", m_stall_copy), fmt::format("sync save {:.3f} s", m_sync),
                 pct(m_stall_copy / m_sync)});
  table.add_row({"save_async stall (borrow)", fmt::format("{:.6f} s", m_stall_borrow),
                 fmt::format("sync save {:.3f} s", m_sync), pct(m_stall_borrow / m_sync)});
  table.add_row({"sync save", fmt::format("{:.2f} GB/s", gb / m_sync), fmt::format("raw write+fsync {:.2f} GB/s", m_raw_w),
                 pct(gb / m_sync / m_raw_w)});
  table.add_row({"flush to durable tier", fmt::format("{:.2f} GB/s", m_flush),
                 fmt::format("raw write+fsync {:.2f} GB/s", m_raw_w_durable), pct(m_flush / m_raw_w_durable)});
  table.add_row({"restore+verify (cold)", fmt::format("{:.2f} GB/s", m_restore_cold),
                 fmt::format("raw read {:.2f} GB/s", m_raw_r_cold), pct(m_restore_cold / m_raw_r_cold)});
  table.add_row({"restore+verify (warm)", fmt::format("{:.2f} GB/s", m_restore_warm),
                 fmt::format("raw read {:.2f} GB/s", m_raw_r_warm), pct(m_restore_warm / m_raw_r_warm)});
  table.add_row({fmt::format("incremental, {:.0f}% changed", 100 * o.changed), cli::format_bytes(static_cast<uint64_t>(m_incr * full_written)),
                 fmt::format("full step {}", cli::format_bytes(full_written)), pct(m_incr)});
  if (tool.options().text_report()) cli::write_stdout(table.render());
  if (tool.options().json) {
    bench::MachineInfo machine = bench::describe_machine();
    json doc = {{"bench", "ckpt"},
                {"machine", {{"cpu", machine.cpu_model}, {"cores", machine.logical_cpus}}},
                {"state_bytes", state_bytes},
                {"tensors", o.tensors},
                {"repeat", o.repeat},
                {"sync_save_s", m_sync},
                {"stall_copy_s", m_stall_copy},
                {"stall_borrow_s", m_stall_borrow},
                {"stall_copy_ratio", m_stall_copy / m_sync},
                {"raw_write_GBps", m_raw_w},
                {"raw_write_durable_GBps", m_raw_w_durable},
                {"flush_GBps", m_flush},
                {"flush_ratio", m_flush / m_raw_w_durable},
                {"raw_read_cold_GBps", m_raw_r_cold},
                {"restore_cold_GBps", m_restore_cold},
                {"restore_cold_ratio", m_restore_cold / m_raw_r_cold},
                {"raw_read_warm_GBps", m_raw_r_warm},
                {"restore_warm_GBps", m_restore_warm},
                {"restore_warm_ratio", m_restore_warm / m_raw_r_warm},
                {"incremental_changed", o.changed},
                {"incremental_written_ratio", m_incr}};
    cli::write_json(doc, *tool.options().json);
  }
  if (!o.keep) {
    stdfs::remove_all(fast);
    stdfs::remove_all(incr);
    if (o.durable.empty()) stdfs::remove_all(durable);
    if (own_root) stdfs::remove_all(root);
  }
  return cli::kExitOk;
}

}  // namespace tk::tckpt
