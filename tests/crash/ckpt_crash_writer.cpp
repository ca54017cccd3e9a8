// Writer and checker for the checkpoint crash test (tests/crash/ckpt_crash.py).
//
//   tk_ckpt_crash_writer write DIR --seed S [--steps N] [--incremental] [--full-every F]
//       [--compression lossless] [--durable DIR2] [--keep-last K] [--keep-every E]
//       [--shard-bytes B] [--trace FILE]
//   tk_ckpt_crash_writer check DIR --seed S [--min-step N] [--max-step N] [--absent N]
//       [--durable DIR2] [--keep-last K] [--keep-every E] [--settled] [--all]
//
// `write` continues from latest()+1 and saves steps forever (or N of them), alternating
// copy and borrow snapshots, printing "committed N" after each wait(); a failed save
// prints "failed N" and exits 1. The content of every step is a function of (seed, step)
// alone, so `check` can regenerate what any listed step must hold. `--trace` names a
// small file the fault hook records each write, fsync and rename in before it happens;
// the memory map survives SIGKILL, so the driver learns where each kill landed.
//
// `check` opens DIR read-only and exits 1 naming every broken promise: a listed step
// that is not a committed step directory, a committed one that is not listed, latest()
// not the newest listed step or outside [min-step, max-step], a failed verify(), a
// restored step that differs from the regenerated content. With --settled (after a
// clean exit) retention must have removed every victim and the durable tier must hold
// the newest step. On success it prints one summary line for the driver.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tk/ckpt/checkpoint.h"
#include "tk/core/error.h"

namespace {

using tk::DType;
using tk::Shape;
using tk::Tensor;
using tk::ckpt::Checkpointer;
using tk::ckpt::NamedTensor;

// ---- deterministic content ----

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

enum class Fill {
  kHalf,     // F16 values of moderate exponent (compress well byte-grouped)
  kBHalf,    // BF16 likewise
  kSparse,   // F32 base that never changes plus a few hundred elements set per version
  kWide,     // any 64-bit pattern
  kMask,     // bytes 0 / 1
  kBytes,    // any byte
  kCounter,  // I64 scalar: the step itself
};

struct TensorSpec {
  const char* name;
  DType dtype;
  Shape shape;
  uint32_t period;  // the content changes every `period` steps; 0 = never
  Fill fill;
};

// About 6 MiB a step, so that kills land inside writes and fsyncs, with dtypes of every
// width, a 0-rank tensor, an odd-sized one, tensors that never change (references in
// incremental mode) and one that changes a little (an XOR delta).
const std::vector<TensorSpec>& tensor_specs() {
  static const std::vector<TensorSpec> specs = {
      {"model.embed", DType::kF16, {1024, 1024}, 0, Fill::kHalf},
      {"model.layers.0.weight", DType::kF32, {512, 1024}, 1, Fill::kSparse},
      {"model.layers.0.bias", DType::kBF16, {4096}, 1, Fill::kBHalf},
      {"model.norm", DType::kF64, {128, 1024}, 3, Fill::kWide},
      {"data.mask", DType::kU8, {1000, 1000}, 4, Fill::kMask},
      {"quant.scales", DType::kF8E4M3, {3, 5, 7}, 2, Fill::kBytes},
      {"optimizer.counts", DType::kI32, {999}, 1, Fill::kWide},
      {"optimizer.step", DType::kI64, {}, 1, Fill::kCounter},
  };
  return specs;
}

void fill_words(uint64_t key, uint8_t* out, uint64_t nbytes) {
  for (uint64_t i = 0; i < nbytes; i += 8) {
    uint64_t h = mix(key + i);
    std::memcpy(out + i, &h, std::min<uint64_t>(8, nbytes - i));
  }
}

Tensor make_tensor(const TensorSpec& spec, size_t index, uint64_t seed, uint64_t step) {
  uint64_t version = spec.period == 0 ? 0 : step / spec.period;
  uint64_t key = mix(mix(seed) ^ mix(index + 1) ^ mix(version + 0x5bd1e995ull * (index + 1)));
  Tensor t = Tensor::empty(spec.dtype, spec.shape);
  uint8_t* p = t.mutable_data();
  uint64_t n = t.numel();
  switch (spec.fill) {
    case Fill::kHalf:
    case Fill::kBHalf: {
      auto* h = reinterpret_cast<uint16_t*>(p);
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t r = mix(key + i);
        uint16_t sign = (r & 1) << 15;
        h[i] = spec.fill == Fill::kHalf ? sign | ((12 + (r >> 1) % 5) << 10) | ((r >> 8) & 0x3ff)
                                        : sign | ((120 + (r >> 1) % 7) << 7) | ((r >> 8) & 0x7f);
      }
      break;
    }
    case Fill::kSparse: {
      auto* f = reinterpret_cast<float*>(p);
      uint64_t base = mix(mix(seed) ^ mix(index + 1));
      for (uint64_t i = 0; i < n; ++i)
        f[i] = static_cast<float>(static_cast<int>(mix(base + i) % 4096) - 2048) / 1024.0f;
      for (uint64_t k = 0; k < n / 256; ++k) {
        uint64_t r = mix(key + k);
        f[r % n] = static_cast<float>(static_cast<int>((r >> 32) % 65536) - 32768) / 4096.0f;
      }
      break;
    }
    case Fill::kWide:
    case Fill::kBytes:
      fill_words(key, p, t.nbytes());
      break;
    case Fill::kMask:
      for (uint64_t i = 0; i < n; ++i) p[i] = mix(key + i / 64) >> (i % 64) & 1;
      break;
    case Fill::kCounter: {
      int64_t v = static_cast<int64_t>(step);
      std::memcpy(p, &v, sizeof v);
      break;
    }
  }
  return t;
}

std::vector<NamedTensor> make_step(uint64_t seed, uint64_t step) {
  std::vector<NamedTensor> out;
  const auto& specs = tensor_specs();
  for (size_t i = 0; i < specs.size(); ++i) out.push_back({specs[i].name, make_tensor(specs[i], i, seed, step)});
  return out;
}

// ---- arguments ----

struct Args {
  std::string mode;
  std::string dir;
  uint64_t seed = 0;
  bool seed_given = false;
  uint64_t steps = 0;  // write: stop after this many saves; 0 = forever
  bool incremental = false;
  uint32_t full_every = 4;
  bool lossless = false;
  std::string durable;
  uint32_t keep_last = 0;
  uint32_t keep_every = 0;
  uint64_t shard_bytes = 0;
  std::string trace;
  std::optional<uint64_t> min_step;
  std::optional<uint64_t> max_step;
  std::vector<uint64_t> absent;
  bool settled = false;
  bool all = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "tk_ckpt_crash_writer: %s\nusage: tk_ckpt_crash_writer write|check DIR --seed S [options]\n",
               why.c_str());
  std::exit(2);
}

uint64_t parse_number(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') usage("bad number for " + flag + ": " + text);
  return v;
}

Args parse_args(int argc, char** argv) {
  if (argc < 3) usage("missing mode or directory");
  Args a;
  a.mode = argv[1];
  a.dir = argv[2];
  if (a.mode != "write" && a.mode != "check") usage("unknown mode " + a.mode);
  for (int i = 3; i < argc; ++i) {
    std::string f = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(f + " needs a value");
      return argv[++i];
    };
    if (f == "--seed") a.seed = parse_number(f, value()), a.seed_given = true;
    else if (f == "--steps") a.steps = parse_number(f, value());
    else if (f == "--incremental") a.incremental = true;
    else if (f == "--full-every") a.full_every = static_cast<uint32_t>(parse_number(f, value()));
    else if (f == "--compression") {
      std::string c = value();
      if (c != "lossless" && c != "none") usage("unknown compression " + c);
      a.lossless = c == "lossless";
    } else if (f == "--durable") a.durable = value();
    else if (f == "--keep-last") a.keep_last = static_cast<uint32_t>(parse_number(f, value()));
    else if (f == "--keep-every") a.keep_every = static_cast<uint32_t>(parse_number(f, value()));
    else if (f == "--shard-bytes") a.shard_bytes = parse_number(f, value());
    else if (f == "--trace") a.trace = value();
    else if (f == "--min-step") a.min_step = parse_number(f, value());
    else if (f == "--max-step") a.max_step = parse_number(f, value());
    else if (f == "--absent") a.absent.push_back(parse_number(f, value()));
    else if (f == "--settled") a.settled = true;
    else if (f == "--all") a.all = true;
    else usage("unknown option " + f);
  }
  if (!a.seed_given) usage("--seed is required");
  return a;
}

tk::ckpt::Options make_options(const Args& a) {
  tk::ckpt::Options o;
  o.durable_dir = a.durable;
  o.keep_last = a.keep_last;
  o.keep_every = a.keep_every;
  o.compression = a.lossless ? tk::ckpt::Compression::kLossless : tk::ckpt::Compression::kNone;
  o.incremental = a.incremental;
  o.full_every = a.full_every;
  o.shard_bytes = a.shard_bytes;
  return o;
}

std::string describe(const tk::Error& e) {
  std::string s = std::string(tk::error_kind_name(e.kind())) + ": " + e.what();
  return e.where().empty() ? s : s + " (" + e.where() + ")";
}

// ---- write ----

// The last two file-system calls the engine announced, kept in a shared memory map so
// that they outlive a SIGKILL: "SEQ OP PATH\nOP PATH\n" (the newest first).
class Trace {
 public:
  static constexpr size_t kBytes = 4096;

  explicit Trace(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::ftruncate(fd, kBytes) != 0) usage("cannot create trace file " + path);
    void* m = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) usage("cannot map trace file " + path);
    map_ = static_cast<char*>(m);
  }

  void record(tk::ckpt::FaultPoint point, const std::string& path) {
    static const char* names[] = {"write", "fsync", "rename"};
    std::lock_guard lock(mutex_);
    ++seq_;
    std::string call = std::string(names[static_cast<int>(point)]) + " " + path;
    std::snprintf(map_, kBytes, "%llu %s\n%s\n", static_cast<unsigned long long>(seq_), call.c_str(),
                  previous_.c_str());
    previous_ = std::move(call);
  }

 private:
  std::mutex mutex_;
  char* map_ = nullptr;
  uint64_t seq_ = 0;
  std::string previous_;
};

// TK_CKPT_FAULT="write:N[:errno]" (or fsync, rename): a hook that fails the N-th call
// of that kind in this process (counting from 1) with EIO or the errno given. False
// when the variable is unset or malformed.
bool install_env_fault() {
  const char* text = std::getenv("TK_CKPT_FAULT");
  if (!text || !*text) return false;
  char kind[16] = {};
  unsigned long long nth = 0;
  int err = EIO;
  const int fields = std::sscanf(text, "%15[a-z]:%llu:%d", kind, &nth, &err);
  if (fields < 2 || nth == 0) return false;
  const std::string k = kind;
  tk::ckpt::FaultPoint point;
  if (k == "write") point = tk::ckpt::FaultPoint::kWrite;
  else if (k == "fsync") point = tk::ckpt::FaultPoint::kFsync;
  else if (k == "rename") point = tk::ckpt::FaultPoint::kRename;
  else return false;
  if (fields < 3) err = EIO;
  auto calls = std::make_shared<std::atomic<uint64_t>>(0);
  tk::ckpt::set_fault_hook([=](tk::ckpt::FaultPoint p, const std::string&) {
    return p == point && ++*calls == nth ? err : 0;
  });
  return true;
}

int run_write(const Args& a) {
  std::unique_ptr<Trace> trace;
  // The fault pass runs untraced: one hook at a time.
  if (!install_env_fault() && !a.trace.empty()) {
    trace = std::make_unique<Trace>(a.trace);
    tk::ckpt::set_fault_hook([t = trace.get()](tk::ckpt::FaultPoint point, const std::string& path) {
      t->record(point, path);
      return 0;
    });
  }
  std::unique_ptr<Checkpointer> ck;
  try {
    ck = Checkpointer::open(a.dir, make_options(a));
  } catch (const tk::Error& e) {
    std::printf("open failed\n");
    std::fflush(stdout);
    std::fprintf(stderr, "tk_ckpt_crash_writer: open: %s\n", describe(e).c_str());
    return 1;
  }
  uint64_t step = ck->latest().value_or(0) + 1;
  std::printf("start %llu\n", static_cast<unsigned long long>(step));
  std::fflush(stdout);
  for (uint64_t saved = 0; a.steps == 0 || saved < a.steps; ++saved, ++step) {
    std::vector<NamedTensor> tensors = make_step(a.seed, step);
    std::vector<NamedTensor> held = tensors;  // shares the buffers
    tk::ckpt::Snapshot mode = step % 2 ? tk::ckpt::Snapshot::kCopy : tk::ckpt::Snapshot::kBorrow;
    tk::ckpt::Metadata meta = {{"seed", std::to_string(a.seed)}, {"step", std::to_string(step)}};
    try {
      tk::ckpt::SaveHandle h = ck->save_async(step, std::move(tensors), meta, mode);
      // A copy snapshot is taken on return: scribbling over the caller's tensors now must
      // not reach the checkpoint.
      if (mode == tk::ckpt::Snapshot::kCopy) {
        for (auto& t : held) std::memset(t.tensor.mutable_data(), 0xa5, t.tensor.nbytes());
      }
      ck->wait(h);
    } catch (const tk::Error& e) {
      std::printf("failed %llu\n", static_cast<unsigned long long>(step));
      std::fflush(stdout);
      std::fprintf(stderr, "tk_ckpt_crash_writer: step %llu: %s\n", static_cast<unsigned long long>(step),
                   describe(e).c_str());
      return 1;
    }
    std::printf("committed %llu\n", static_cast<unsigned long long>(step));
    std::fflush(stdout);
  }
  try {
    ck->wait_all();
    ck.reset();
  } catch (const tk::Error& e) {
    std::fprintf(stderr, "tk_ckpt_crash_writer: wait_all: %s\n", describe(e).c_str());
    return 1;
  }
  return 0;
}

// ---- check ----

class Checker {
 public:
  explicit Checker(const Args& a) : a_(a) {}

  void fail(const std::string& what) {
    std::fprintf(stderr, "check: %s\n", what.c_str());
    ok_ = false;
  }
  bool ok() const { return ok_; }

  // Check one tier; returns its newest step and the temp directories found in it.
  std::optional<uint64_t> check_tier(const std::string& dir, const std::string& tier, bool restore_all,
                                     std::vector<std::string>* temp_dirs) {
    namespace fs = std::filesystem;
    if (!fs::exists(dir)) return std::nullopt;  // killed before the writer created it
    tk::ckpt::Options o;
    o.read_only = true;
    std::unique_ptr<Checkpointer> ck = Checkpointer::open(dir, o);
    std::vector<tk::ckpt::StepInfo> steps = ck->list();

    // A step exists exactly when step-N/manifest.json does: list() shows those and only
    // those, oldest first, each under its final name.
    std::set<uint64_t> on_disk;
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::string name = entry.path().filename().string();
      std::string digits = name.rfind("step-", 0) == 0 ? name.substr(5) : "";
      if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos) {
        if (fs::exists(entry.path() / "manifest.json")) on_disk.insert(std::stoull(digits));
      } else if (temp_dirs && name != "latest" && name != ".lock" && name != "durable") {
        temp_dirs->push_back(name);  // temp or half-deleted entries a killed writer left
      }
    }
    std::set<uint64_t> listed;
    uint64_t previous = 0;
    for (const auto& s : steps) {
      std::string expect_dir = "step-" + std::to_string(s.step);
      if (fs::path(s.dir).filename().string() != expect_dir)
        fail(tier + ": step " + std::to_string(s.step) + " listed from " + s.dir);
      if (!listed.empty() && s.step <= previous) fail(tier + ": list() not in increasing step order");
      previous = s.step;
      listed.insert(s.step);
    }
    for (uint64_t s : on_disk)
      if (!listed.count(s)) fail(tier + ": committed step " + std::to_string(s) + " not listed");
    for (uint64_t s : listed)
      if (!on_disk.count(s)) fail(tier + ": listed step " + std::to_string(s) + " has no step-N/manifest.json");

    std::optional<uint64_t> latest = ck->latest();
    std::optional<uint64_t> newest = steps.empty() ? std::nullopt : std::optional(steps.back().step);
    if (latest != newest)
      fail(tier + ": latest() is " + (latest ? std::to_string(*latest) : "none") + " but the newest listed step is " +
           (newest ? std::to_string(*newest) : "none"));

    for (const auto& s : steps) {
      tk::ckpt::VerifyReport r = ck->verify(s.step);
      for (const auto& p : r.problems) fail(tier + ": verify step " + std::to_string(s.step) + ": " + p);
      if (s.parent && !listed.count(*s.parent))
        fail(tier + ": step " + std::to_string(s.step) + " refers to missing parent " + std::to_string(*s.parent));
      for (const auto& e : s.entries)
        if (e.source_step && !listed.count(*e.source_step))
          fail(tier + ": step " + std::to_string(s.step) + " takes tensor '" + e.name + "' from missing step " +
               std::to_string(*e.source_step));
    }
    for (const auto& s : steps) {
      if (restore_all || s.step == newest) compare(*ck, tier, s);
    }
    return newest;
  }

  void compare(const Checkpointer& ck, const std::string& tier, const tk::ckpt::StepInfo& info) {
    std::string where = tier + ": step " + std::to_string(info.step);
    auto meta = [&](const char* key) {
      auto it = info.metadata.find(key);
      return it == info.metadata.end() ? std::string("(missing)") : it->second;
    };
    if (meta("seed") != std::to_string(a_.seed) || meta("step") != std::to_string(info.step))
      fail(where + ": metadata seed=" + meta("seed") + " step=" + meta("step"));
    std::vector<NamedTensor> got = ck.restore(info.step);
    std::vector<NamedTensor> want = make_step(a_.seed, info.step);
    if (got.size() != want.size()) {
      fail(where + ": restored " + std::to_string(got.size()) + " tensors, expected " + std::to_string(want.size()));
      return;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      const Tensor& g = got[i].tensor;
      const Tensor& w = want[i].tensor;
      if (got[i].name != want[i].name || g.dtype() != w.dtype() || g.shape() != w.shape() ||
          g.nbytes() != w.nbytes() || std::memcmp(g.data(), w.data(), w.nbytes()) != 0)
        fail(where + ": tensor '" + want[i].name + "' differs from the content saved (restored as '" + got[i].name +
             "')");
    }
  }

  bool listed(const std::string& dir, uint64_t step) {
    if (!std::filesystem::exists(dir)) return false;
    tk::ckpt::Options o;
    o.read_only = true;
    for (const auto& info : Checkpointer::open(dir, o)->list())
      if (info.step == step) return true;
    return false;
  }

  void check_retention(const std::string& dir, const std::string& tier) {
    tk::ckpt::Options o;
    o.read_only = true;
    std::vector<tk::ckpt::StepInfo> steps = Checkpointer::open(dir, o)->list();
    for (uint64_t v : tk::ckpt::retention_victims(steps, a_.keep_last, a_.keep_every))
      fail(tier + ": step " + std::to_string(v) + " outlived retention after a clean exit");
  }

 private:
  const Args& a_;
  bool ok_ = true;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s.empty() ? "-" : s;
}

int run_check(const Args& a) {
  Checker c(a);
  std::vector<std::string> temp_dirs;
  std::optional<uint64_t> latest;
  std::optional<uint64_t> durable_latest;
  try {
    latest = c.check_tier(a.dir, "main", a.all, &temp_dirs);
    if (a.min_step && (!latest || *latest < *a.min_step))
      c.fail("main: latest is " + (latest ? std::to_string(*latest) : "none") + ", below step " +
             std::to_string(*a.min_step) + " already reported committed");
    if (a.max_step && latest && *latest > *a.max_step)
      c.fail("main: latest is " + std::to_string(*latest) + ", above step " + std::to_string(*a.max_step) +
             " that any writer could have reached");
    for (uint64_t s : a.absent)
      if (c.listed(a.dir, s)) c.fail("main: step " + std::to_string(s) + " is listed although its save failed");
    if (!a.durable.empty() && std::filesystem::exists(a.durable)) {
      durable_latest = c.check_tier(a.durable, "durable", a.all, nullptr);
      if (durable_latest && (!latest || *durable_latest > *latest))
        c.fail("durable: newest step " + std::to_string(*durable_latest) + " is ahead of the main tier");
    }
    if (a.settled) {
      if (a.keep_last > 0 || a.keep_every > 0) {
        c.check_retention(a.dir, "main");
        if (!a.durable.empty()) c.check_retention(a.durable, "durable");
      }
      if (!a.durable.empty() && durable_latest != latest)
        c.fail("durable: newest step is " + (durable_latest ? std::to_string(*durable_latest) : "none") +
               " after a clean exit, main tier has " + (latest ? std::to_string(*latest) : "none"));
    }
  } catch (const tk::Error& e) {
    c.fail(describe(e));
  }
  if (!c.ok()) return 1;
  std::printf("latest=%s durable_latest=%s temp=%s\n", latest ? std::to_string(*latest).c_str() : "-",
              durable_latest ? std::to_string(*durable_latest).c_str() : "-", join(temp_dirs).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse_args(argc, argv);
  return a.mode == "write" ? run_write(a) : run_check(a);
}
