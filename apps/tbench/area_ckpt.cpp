// tbench ckpt: what a checkpoint costs a training loop (the stall inside save_async, by
// snapshot mode), how fast a step reaches durable storage, and how fast it restores
// with every checksum checked, in a scratch checkpoint directory under --dir.
#include <filesystem>

#include "tbench.h"
#include "tk/bench/disk.h"
#include "tk/ckpt/checkpoint.h"
#include "tk/core/error.h"

namespace tk::tbench {
namespace {

namespace fs = std::filesystem;

bench::Measurement from_seconds(std::vector<double> seconds) {
  bench::Measurement m;
  m.summary = bench::summarize(seconds);
  m.seconds = std::move(seconds);
  return m;
}

void drop_step_cache(const ckpt::StepInfo& info) {
  for (const auto& entry : fs::directory_iterator(info.dir))
    if (entry.is_regular_file()) bench::drop_file_cache(entry.path().string());
}

void run_save(const Cell& cell, Result& r, ckpt::Snapshot snapshot) {
  std::string dir = make_scratch_dir(cell.dir, "ckpt");
  struct Cleanup {
    std::string path;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } cleanup{dir};

  ckpt::Options options;
  options.keep_last = 1;  // bound the disk used to one step
  options.threads = static_cast<int>(param_number(cell, "engine_threads"));
  options.compression = cell.params.at("compression") == "lossless" ? ckpt::Compression::kLossless
                                                                    : ckpt::Compression::kNone;
  auto checkpointer = ckpt::Checkpointer::open(dir + "/ckpt", options);
  const Tensor& state = cell.input->data;
  uint64_t bytes = state.nbytes();

  std::vector<double> stalls, saves;
  uint64_t step = 0, written = 0;
  int runs = cell.timing.warmup + cell.timing.repetitions;
  for (int i = 0; i < runs; ++i) {
    double t0 = bench::monotonic_seconds();
    ckpt::SaveHandle h = checkpointer->save_async(++step, {{"state", state}}, {}, snapshot);
    double stall = bench::monotonic_seconds() - t0;
    ckpt::SaveStats stats = checkpointer->wait(h);
    double save = bench::monotonic_seconds() - t0;
    written = stats.written_bytes;
    if (i < cell.timing.warmup) continue;
    stalls.push_back(stall);
    saves.push_back(save);
  }
  ckpt::StepInfo info = checkpointer->info(step);
  auto restore = bench::measure([&] { checkpointer->restore(step); }, cell.timing, bytes,
                                [&] { drop_step_cache(info); });

  r.set_time("stall_ms", from_seconds(stalls), 1e3, "ms");
  r.set_rate("save_mb_s", from_seconds(saves), bytes, 1e6, "MB/s");
  r.set_rate("restore_mb_s", restore, bytes, 1e6, "MB/s");
  r.set("ratio", static_cast<double>(bytes) / static_cast<double>(written), "x", bench::Better::kHigher);
}

}  // namespace

Area ckpt_area() {
  Area a;
  a.name = "ckpt";
  a.description = "Checkpoint save stall (copy/borrow), save-to-durable throughput and restore";
  a.methods = {
      {"copy", {"compression", "engine_threads"}, "snapshot copied into the staging pool; the caller may go on"},
      {"borrow", {"compression", "engine_threads"}, "no copy; the caller waits before touching its tensors"},
  };
  a.default_methods = {"copy", "borrow"};
  a.params = {{"compression", "none", "none or lossless", {"none", "lossless"}},
              {"engine_threads", "2", "background threads of the checkpoint engine", {}}};
  a.default_shapes = {"2048x1024"};
  a.default_dists = {"gaussian"};
  a.run = [](const Cell& cell, Result& r) {
    run_save(cell, r, cell.method == "borrow" ? ckpt::Snapshot::kBorrow : ckpt::Snapshot::kCopy);
  };
  return a;
}

}  // namespace tk::tbench
