// Failed writes, fsyncs and renames (through the fault hook) at every call of one save,
// with EIO and ENOSPC: the save fails with kIo, leaves no step, and every earlier step
// verifies and restores; a later save succeeds. The commit protocol's order of calls.
// Retention: retention_victims against a reference over random step sets, and the
// engine's retention after real saves.
#include "tk/ckpt/checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.h"

namespace tk::ckpt {
namespace {

namespace fs = std::filesystem;
using test::kind_of;
using test::TempDir;

// Small tensors, so that one save makes few calls: one that changes everywhere, one
// that never changes (a reference in incremental mode), one that changes in a few
// places (an XOR delta), and the step counter.
std::vector<NamedTensor> tensors_for(uint64_t step) {
  std::mt19937 rng(static_cast<uint32_t>(step));
  Tensor noise = Tensor::empty(DType::kF32, {64, 32});
  for (uint64_t i = 0; i < noise.numel(); ++i) noise.mutable_data_as<float>()[i] = static_cast<float>(rng() % 1000);
  Tensor frozen = Tensor::empty(DType::kBF16, {300});
  for (uint64_t i = 0; i < frozen.numel(); ++i) frozen.mutable_data_as<uint16_t>()[i] = static_cast<uint16_t>(i * 7);
  Tensor mostly = Tensor::zeros(DType::kU8, {4000});
  for (uint64_t k = 0; k < 8; ++k) mostly.mutable_data()[rng() % 4000] = static_cast<uint8_t>(step);
  Tensor counter = Tensor::empty(DType::kI64, {});
  counter.mutable_data_as<int64_t>()[0] = static_cast<int64_t>(step);
  return {{"noise", noise}, {"frozen", frozen}, {"mostly", mostly}, {"step", counter}};
}

void expect_same(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& want, uint64_t step) {
  ASSERT_EQ(got.size(), want.size()) << "step " << step;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name) << "step " << step;
    EXPECT_EQ(got[i].tensor.dtype(), want[i].tensor.dtype()) << want[i].name;
    EXPECT_EQ(got[i].tensor.shape(), want[i].tensor.shape()) << want[i].name;
    ASSERT_EQ(got[i].tensor.nbytes(), want[i].tensor.nbytes()) << want[i].name;
    EXPECT_EQ(std::memcmp(got[i].tensor.data(), want[i].tensor.data(), want[i].tensor.nbytes()), 0)
        << "step " << step << " tensor " << want[i].name;
  }
}

std::vector<uint64_t> listed_steps(const Checkpointer& ck) {
  std::vector<uint64_t> out;
  for (const auto& s : ck.list()) out.push_back(s.step);
  return out;
}

// Every step of `expected` is listed, verifies and restores to tensors_for(step).
void expect_intact(const Checkpointer& ck, const std::vector<uint64_t>& expected) {
  EXPECT_EQ(listed_steps(ck), expected);
  EXPECT_EQ(ck.latest(), expected.empty() ? std::nullopt : std::optional(expected.back()));
  for (uint64_t s : expected) {
    VerifyReport r = ck.verify(s);
    EXPECT_TRUE(r.ok()) << "step " << s << ": " << (r.problems.empty() ? "" : r.problems.front());
    expect_same(ck.restore(s), tensors_for(s), s);
  }
}

// Remove the hook at the end of a scope, whatever happens in it.
struct HookScope {
  explicit HookScope(FaultHook hook) { set_fault_hook(std::move(hook)); }
  ~HookScope() { set_fault_hook(nullptr); }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;
};

const char* point_name(FaultPoint point) {
  switch (point) {
    case FaultPoint::kWrite: return "write";
    case FaultPoint::kFsync: return "fsync";
    case FaultPoint::kRename: return "rename";
  }
  return "?";
}

struct Call {
  FaultPoint point;
  std::string path;
};

struct Mode {
  const char* name;
  Options options;
};
void PrintTo(const Mode& mode, std::ostream* os) { *os << mode.name; }

Options mode_options(bool incremental, Compression compression, uint64_t shard_bytes) {
  Options o;
  o.incremental = incremental;
  o.full_every = 100;
  o.compression = compression;
  o.shard_bytes = shard_bytes;
  return o;
}

class FaultTest : public ::testing::TestWithParam<Mode> {
 protected:
  // Steps 1 and 2, saved without faults into a directory that each case copies.
  void SetUp() override {
    auto ck = Checkpointer::open(base_.path() + "/ckpt", GetParam().options);
    for (uint64_t s : {1, 2}) ck->save(s, tensors_for(s));
  }

  std::string fresh_copy(const TempDir& into) const {
    std::string dir = into.path() + "/ckpt";
    fs::copy(base_.path() + "/ckpt", dir, fs::copy_options::recursive);
    return dir;
  }

  // The calls the engine announces while saving step 3, in order.
  std::vector<Call> calls_of_one_save(const std::string& dir) const {
    auto ck = Checkpointer::open(dir, GetParam().options);
    std::mutex mutex;
    std::vector<Call> calls;
    HookScope hook([&](FaultPoint point, const std::string& path) {
      std::lock_guard lock(mutex);
      calls.push_back({point, path});
      return 0;
    });
    ck->save(3, tensors_for(3));
    return calls;
  }

  TempDir base_{"ckpt_fault"};
};

TEST_P(FaultTest, EveryFailedCallFailsTheSaveAndKeepsEarlierSteps) {
  TempDir count_dir("ckpt_fault");
  std::vector<Call> calls = calls_of_one_save(fresh_copy(count_dir));
  std::array<int, 3> total{};
  for (const Call& c : calls) ++total[static_cast<int>(c.point)];
  ASSERT_GE(total[static_cast<int>(FaultPoint::kWrite)], 2);   // a shard and the manifest
  ASSERT_GE(total[static_cast<int>(FaultPoint::kFsync)], 4);   // files, step dir, parent, latest
  ASSERT_GE(total[static_cast<int>(FaultPoint::kRename)], 2);  // the step dir and latest

  for (FaultPoint point : {FaultPoint::kWrite, FaultPoint::kFsync, FaultPoint::kRename}) {
    for (int nth = 1; nth <= total[static_cast<int>(point)]; ++nth) {
      for (int err : {EIO, ENOSPC}) {
        SCOPED_TRACE(std::string(point_name(point)) + " call " + std::to_string(nth) + " failing with " +
                     std::strerror(err));
        TempDir scratch("ckpt_fault");
        std::string dir = fresh_copy(scratch);
        auto ck = Checkpointer::open(dir, GetParam().options);
        {
          std::atomic<int> seen{0};
          HookScope hook([&](FaultPoint p, const std::string&) { return p == point && ++seen == nth ? err : 0; });
          SaveHandle h = ck->save_async(3, tensors_for(3));
          try {
            ck->wait(h);
            ADD_FAILURE() << "the save succeeded";
          } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::kIo) << e.what();
            EXPECT_NE(std::string(e.what()).find(std::strerror(err)), std::string::npos) << e.what();
          }
        }
        EXPECT_FALSE(fs::exists(dir + "/step-3"));
        expect_intact(*ck, {1, 2});
        // The same writer retries the same step once the disk behaves.
        ck->save(3, tensors_for(3));
        expect_intact(*ck, {1, 2, 3});
        ck.reset();
        // A new writer cleans up whatever the failure left and sees the same steps.
        ck = Checkpointer::open(dir, GetParam().options);
        for (const auto& entry : fs::directory_iterator(dir)) {
          EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
        }
        expect_intact(*ck, {1, 2, 3});
      }
    }
  }
}

// The documented protocol: every file of the step is written and fsynced, then the step
// directory, before it is renamed to step-N; the parent is fsynced after that rename and
// before `latest` is replaced.
TEST_P(FaultTest, CallsFollowTheCommitProtocol) {
  TempDir scratch("ckpt_fault");
  std::string dir = fresh_copy(scratch);
  std::vector<Call> calls = calls_of_one_save(dir);
  auto normal = [](const std::string& path) {
    std::string p = fs::path(path).lexically_normal().string();
    if (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
  };
  auto is_in_temp = [](const Call& c) { return c.path.find("/step-3.tmp") != std::string::npos; };
  size_t step_rename = calls.size();
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].point == FaultPoint::kRename && calls[i].path.find("step-3") != std::string::npos &&
        calls[i].path.find("latest") == std::string::npos) {
      step_rename = i;
      break;
    }
  }
  ASSERT_LT(step_rename, calls.size()) << "no rename of the step directory";
  size_t last_in_temp = 0;
  bool temp_dir_synced = false;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!is_in_temp(calls[i]) || calls[i].point == FaultPoint::kRename) continue;
    last_in_temp = i;
    if (calls[i].point == FaultPoint::kFsync &&
        fs::path(normal(calls[i].path)).filename().string().rfind("step-3.tmp", 0) == 0)
      temp_dir_synced = true;
  }
  EXPECT_LT(last_in_temp, step_rename) << "a file of the step was written after the rename";
  EXPECT_TRUE(temp_dir_synced) << "the step directory was not fsynced before its rename";

  std::string parent = normal(dir);
  size_t parent_sync = calls.size();
  size_t latest_rename = calls.size();
  for (size_t i = step_rename + 1; i < calls.size(); ++i) {
    std::string p = normal(calls[i].path);
    if (calls[i].point == FaultPoint::kFsync && p == parent && parent_sync == calls.size()) parent_sync = i;
    if (calls[i].point == FaultPoint::kRename && p.find("latest") != std::string::npos) latest_rename = i;
  }
  ASSERT_LT(latest_rename, calls.size()) << "latest was not replaced by a rename";
  EXPECT_LT(parent_sync, latest_rename) << "latest replaced before the parent directory was fsynced";
}

INSTANTIATE_TEST_SUITE_P(Modes, FaultTest,
                         ::testing::Values(Mode{"plain", mode_options(false, Compression::kNone, 0)},
                                           Mode{"incremental", mode_options(true, Compression::kNone, 0)},
                                           Mode{"lossless", mode_options(false, Compression::kLossless, 0)},
                                           Mode{"sharded", mode_options(false, Compression::kNone, 4096)}),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- retention ----

StepInfo step_info(uint64_t step, std::optional<uint64_t> parent = std::nullopt) {
  StepInfo s;
  s.step = step;
  s.parent = parent;
  return s;
}

// The steps `s` takes bytes from: its parent and the source of every reference or delta.
std::set<uint64_t> dependencies(const StepInfo& s) {
  std::set<uint64_t> deps;
  if (s.parent) deps.insert(*s.parent);
  for (const auto& e : s.entries)
    if (e.source_step) deps.insert(*e.source_step);
  return deps;
}

// What the header says, written out plainly: with keep_last 0 everything stays;
// otherwise the newest, the last keep_last, the multiples of keep_every and (repeatedly)
// every step something kept takes bytes from.
std::set<uint64_t> reference_victims(const std::vector<StepInfo>& steps, uint32_t keep_last, uint32_t keep_every) {
  if (keep_last == 0 || steps.empty()) return {};
  std::set<uint64_t> kept = {steps.back().step};
  for (size_t i = steps.size() > keep_last ? steps.size() - keep_last : 0; i < steps.size(); ++i)
    kept.insert(steps[i].step);
  for (const auto& s : steps)
    if (keep_every > 0 && s.step % keep_every == 0) kept.insert(s.step);
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& s : steps)
      if (kept.count(s.step))
        for (uint64_t d : dependencies(s)) grew = kept.insert(d).second || grew;
  }
  std::set<uint64_t> victims;
  for (const auto& s : steps)
    if (!kept.count(s.step)) victims.insert(s.step);
  return victims;
}

// The victims as a set; they must come newest first, so that deleting them in that order
// never orphans an incremental step when the deleting process is killed halfway.
std::set<uint64_t> victims_of(const std::vector<StepInfo>& steps, uint32_t keep_last, uint32_t keep_every) {
  std::vector<uint64_t> v = retention_victims(steps, keep_last, keep_every);
  EXPECT_TRUE(std::is_sorted(v.rbegin(), v.rend())) << "victims not newest first";
  std::set<uint64_t> out(v.begin(), v.end());
  EXPECT_EQ(out.size(), v.size()) << "a victim named twice";
  return out;
}

TEST(Retention, KeepsLastAndEvery) {
  std::vector<StepInfo> steps;
  for (uint64_t s = 1; s <= 10; ++s) steps.push_back(step_info(s));
  EXPECT_EQ(victims_of(steps, 3, 4), (std::set<uint64_t>{1, 2, 3, 5, 6, 7}));
  EXPECT_EQ(victims_of(steps, 1, 0), (std::set<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(victims_of(steps, 0, 3).empty());
  EXPECT_TRUE(victims_of(steps, 10, 0).empty());
  EXPECT_TRUE(victims_of({}, 1, 1).empty());
}

TEST(Retention, KeepsTheParentOfAKeptIncrementalStep) {
  // Full steps 1, 4, 7; the others refer to the full step before them.
  std::vector<StepInfo> steps;
  for (uint64_t s = 1; s <= 9; ++s) steps.push_back(s % 3 == 1 ? step_info(s) : step_info(s, s - (s - 1) % 3));
  EXPECT_EQ(victims_of(steps, 2, 0), (std::set<uint64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(victims_of(steps, 1, 5), (std::set<uint64_t>{1, 2, 3, 6, 8}));  // 5 keeps 4; 9 keeps 7
}

TEST(Retention, MatchesTheReferenceOnRandomSteps) {
  std::mt19937_64 rng(20240611);
  for (int round = 0; round < 5000; ++round) {
    std::vector<StepInfo> steps;
    std::vector<uint64_t> full;
    uint64_t step = rng() % 4;
    size_t n = 1 + rng() % 25;
    for (size_t i = 0; i < n; ++i, step += 1 + rng() % 3) {
      if (full.empty() || rng() % 5 < 2) {
        steps.push_back(step_info(step));
        full.push_back(step);
      } else {
        uint64_t parent = rng() % 5 == 0 ? full[rng() % full.size()] : full.back();
        steps.push_back(step_info(step, parent));
        // Tensors referenced from (or delta-coded against) any earlier step at or after
        // the parent: the step that last stored their bytes.
        std::vector<uint64_t> since;
        for (const auto& earlier : steps)
          if (earlier.step >= parent && earlier.step < step) since.push_back(earlier.step);
        for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
          TensorEntry e;
          e.name = "t" + std::to_string(k);
          e.source_step = since[rng() % since.size()];
          steps.back().entries.push_back(e);
        }
      }
    }
    uint32_t keep_last = static_cast<uint32_t>(rng() % 6);
    uint32_t keep_every = static_cast<uint32_t>(rng() % 7);
    std::set<uint64_t> got = victims_of(steps, keep_last, keep_every);
    SCOPED_TRACE("round " + std::to_string(round) + " keep_last " + std::to_string(keep_last) + " keep_every " +
                 std::to_string(keep_every));
    EXPECT_FALSE(got.count(steps.back().step)) << "the newest step is a victim";
    for (const auto& s : steps) {
      if (s.parent && !got.count(s.step)) {
        EXPECT_FALSE(got.count(*s.parent)) << "parent of kept step " << s.step;
      }
    }
    ASSERT_EQ(got, reference_victims(steps, keep_last, keep_every));
    // Deleted in the order given, every prefix (a writer killed between deletions) leaves
    // each remaining step with every step it takes bytes from.
    std::vector<uint64_t> order = retention_victims(steps, keep_last, keep_every);
    std::set<uint64_t> gone;
    for (uint64_t victim : order) {
      gone.insert(victim);
      for (const auto& s : steps) {
        if (gone.count(s.step)) continue;
        for (uint64_t d : dependencies(s)) {
          ASSERT_FALSE(gone.count(d)) << "step " << s.step << " lost step " << d << " after deleting " << victim;
        }
      }
    }
  }
}

// Steps still waiting for the durable tier are not deleted on the main tier; neither
// may their parents be, or they are left unreadable there.
TEST(Retention, KeepsTheParentOfAStepWaitingForTheDurableTier) {
  TempDir dir("ckpt_fault");
  Options o;
  o.durable_dir = dir.path() + "/durable";
  o.incremental = true;
  o.full_every = 2;
  o.keep_last = 1;
  auto ck = Checkpointer::open(dir.path() + "/ckpt", o);
  {
    // A slow durable tier: every call there takes 50 ms, so steps queue up for it.
    std::string durable = o.durable_dir;
    HookScope hook([durable](FaultPoint, const std::string& path) {
      if (path.rfind(durable, 0) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return 0;
    });
    for (uint64_t s = 1; s <= 6; ++s) {
      ck->save(s, tensors_for(s));
      for (const auto& info : ck->list()) {
        if (info.parent) {
          EXPECT_TRUE(ck->verify(info.step).ok()) << "step " << info.step << " after saving " << s;
        }
      }
    }
    ck->wait_all();
  }
  for (const auto& info : ck->list()) EXPECT_TRUE(ck->verify(info.step).ok()) << "step " << info.step;
}

TEST(Retention, EngineKeepsWhatRetentionSays) {
  TempDir dir("ckpt_fault");
  Options o;
  o.incremental = true;
  o.full_every = 3;
  o.keep_last = 2;
  o.keep_every = 4;
  auto ck = Checkpointer::open(dir.path() + "/ckpt", o);
  for (uint64_t s = 1; s <= 11; ++s) ck->save(s, tensors_for(s));
  ck->wait_all();
  std::vector<StepInfo> steps = ck->list();
  std::vector<uint64_t> kept = listed_steps(*ck);
  EXPECT_TRUE(victims_of(steps, o.keep_last, o.keep_every).empty());
  for (uint64_t s : {4, 8, 10, 11}) EXPECT_TRUE(std::count(kept.begin(), kept.end(), s)) << "step " << s;
  for (const auto& s : steps) {
    for (uint64_t d : dependencies(s))
      EXPECT_TRUE(std::count(kept.begin(), kept.end(), d)) << "step " << s.step << " needs " << d;
  }
  EXPECT_TRUE(reference_victims(steps, o.keep_last, o.keep_every).empty());
  for (uint64_t s : kept) {
    EXPECT_TRUE(ck->verify(s).ok()) << "step " << s;
    expect_same(ck->restore(s), tensors_for(s), s);
  }
}

}  // namespace
}  // namespace tk::ckpt
