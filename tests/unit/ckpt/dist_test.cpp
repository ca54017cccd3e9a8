// Distributed steps without MPI: ranks are threads (dist/thread_comm.h) around the real
// DistCheckpointer, so the commit, its bad-input paths, timeouts and the resharding
// reader are all tested here; tests/capi runs the same under mpirun.
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "test_util.h"
#include "dist/thread_comm.h"
#include "tk/ckpt/checkpoint.h"
#include "tk/ckpt/dist_checkpoint.h"
#include "tk/ckpt/dist_part.h"
#include "tk/ckpt/manifest.h"
#include "tk/ckpt/step_reader.h"

namespace tk::ckpt {
namespace {

namespace stdfs = std::filesystem;
using test::run_ranks;

// Global tensors of the tests: "w" F32 [1000, 37], "v" F64 [24, 333]; every value a
// function of (step, global index).
float w_at(uint64_t step, int64_t i, int64_t j) { return static_cast<float>(step * 1000003 + i * 37 + j); }
double v_at(uint64_t step, int64_t i, int64_t j) { return static_cast<double>(step) * 1e7 + i * 333 + j + 0.5; }
const Shape kW = {1000, 37}, kV = {24, 333};

// Rank r of `world`'s share of n items, proportional to r + 1: never even.
std::pair<int64_t, int64_t> share(int64_t n, int world, int r) {
  int64_t total = int64_t(world) * (world + 1) / 2, before = int64_t(r) * (r + 1) / 2;
  int64_t first = n * before / total;
  return {first, n * (before + r + 1) / total - first};
}

// A box of a global tensor with its bytes, filled from the value functions.
struct Piece {
  DistSlice slice;
  std::vector<uint8_t> bytes;
};

template <typename T, typename F> Piece make_piece(const std::string& name, DType dtype, const Shape& global,
                                                   const Shape& start, const Shape& shape, F value) {
  Piece p;
  p.slice.name = name;
  p.slice.dtype = dtype;
  p.slice.global_shape = global;
  p.slice.offsets = start;
  p.slice.shape = shape;
  p.bytes.resize(shape_numel(shape) * sizeof(T));
  T* d = reinterpret_cast<T*>(p.bytes.data());
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j) d[i * shape[1] + j] = value(start[0] + i, start[1] + j);
  p.slice.data = p.bytes.data();
  p.slice.nbytes = p.bytes.size();
  return p;
}

Piece w_piece(uint64_t step, const Shape& start, const Shape& shape) {
  return make_piece<float>("w", DType::kF32, kW, start, shape, [&](int64_t i, int64_t j) { return w_at(step, i, j); });
}
Piece v_piece(uint64_t step, const Shape& start, const Shape& shape) {
  return make_piece<double>("v", DType::kF64, kV, start, shape, [&](int64_t i, int64_t j) { return v_at(step, i, j); });
}

// Rank r's state: w by rows, v by columns (or the other way round with `swap`).
std::vector<Piece> rank_state(uint64_t step, int world, int r, bool swap = false) {
  auto [wr0, wrn] = share(kW[swap ? 1 : 0], world, r);
  auto [vc0, vcn] = share(kV[swap ? 0 : 1], world, r);
  std::vector<Piece> out;
  if (!swap) {
    out.push_back(w_piece(step, {wr0, 0}, {wrn, kW[1]}));
    out.push_back(v_piece(step, {0, vc0}, {kV[0], vcn}));
  } else {
    out.push_back(w_piece(step, {0, wr0}, {kW[0], wrn}));
    out.push_back(v_piece(step, {vc0, 0}, {vcn, kV[1]}));
  }
  return out;
}

std::vector<DistSlice> slices_of(std::vector<Piece>& pieces) {
  std::vector<DistSlice> out;
  for (auto& p : pieces) out.push_back(p.slice);
  return out;
}

void save_world(const std::string& dir, int world, uint64_t step) {
  run_ranks(world, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir, std::move(comm));
    auto state = rank_state(step, world, r);
    ck.save_async(step, slices_of(state));
    DistSaveStats s = ck.wait();
    EXPECT_EQ(s.step, step);
    EXPECT_EQ(s.step_bytes, 1000u * 37 * 4 + 24u * 333 * 8);
  });
}

// Restore onto `world` ranks, each wanting its own (possibly swapped) slicing; compare
// bit for bit with the value functions.
void expect_restores(const std::string& dir, int world, uint64_t step, bool swap) {
  run_ranks(world, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir, std::move(comm));
    ASSERT_EQ(ck.latest(), step);
    auto want = rank_state(step, world, r, swap);
    std::vector<Piece> got = want;
    for (auto& p : got) {
      std::fill(p.bytes.begin(), p.bytes.end(), 0xAB);
      p.slice.data = p.bytes.data();
    }
    ck.restore(step, slices_of(got));
    for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(want[k].bytes, got[k].bytes) << want[k].slice.name << " rank " << r;
  });
}

TEST(DistCheckpoint, ReshardsNtoMBitExact) {
  for (auto [n, m] : std::vector<std::pair<int, int>>{{4, 2}, {4, 3}, {2, 4}, {3, 1}}) {
    SCOPED_TRACE(std::to_string(n) + " to " + std::to_string(m));
    test::TempDir dir("dist");
    save_world(dir.path(), n, 5);
    expect_restores(dir.path(), m, 5, false);
    expect_restores(dir.path(), m, 5, true);  // the other slicing axis
  }
}

// A lazy save copies in the background: once snapshot_wait returns, the caller's
// memory may change (an optimizer update), and the step still holds what it held at
// the save; the stall counts the time blocked in snapshot_wait.
TEST(DistCheckpoint, ALazySnapshotKeepsTheStateAsItWasAtTheSave) {
  test::TempDir dir("dist");
  run_ranks(3, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir.path(), std::move(comm));
    for (uint64_t step : {4u, 5u}) {
      auto state = rank_state(step, 3, r);
      ck.save_async(step, slices_of(state), DistCheckpointer::Snapshot::kLazy);
      const double blocked = ck.snapshot_wait();
      EXPECT_GE(blocked, 0.0);
      EXPECT_EQ(ck.snapshot_wait(), 0.0);  // taken: the second call returns at once
      for (auto& p : state) std::fill(p.bytes.begin(), p.bytes.end(), 0xEE);  // the update
      DistSaveStats s = ck.wait();
      EXPECT_EQ(s.step, step);
      EXPECT_GE(s.stall_seconds, blocked);
    }
    EXPECT_EQ(ck.snapshot_wait(), 0.0);  // none pending
  });
  expect_restores(dir.path(), 2, 5, false);
  // Without snapshot_wait, wait() takes the copy first.
  run_ranks(2, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir.path(), std::move(comm));
    auto state = rank_state(6, 2, r);
    ck.save_async(6, slices_of(state), DistCheckpointer::Snapshot::kLazy);
    ck.wait();
  });
  expect_restores(dir.path(), 3, 6, true);
}

TEST(DistCheckpoint, ToolsReadItWithoutTheTransport) {
  test::TempDir dir("dist");
  save_world(dir.path(), 3, 7);
  Options o;
  o.read_only = true;
  auto ck = Checkpointer::open(dir.path(), o);
  StepInfo info = ck->info(7);
  EXPECT_EQ(info.world_size, 3u);
  EXPECT_TRUE(ck->verify(7).ok());
  auto all = ck->restore(7);
  ASSERT_EQ(all.size(), 2u);
  const auto& w = all[0].name == "w" ? all[0].tensor : all[1].tensor;
  ASSERT_EQ(w.shape(), kW);
  for (int64_t i = 0; i < kW[0]; i += 97)
    for (int64_t j = 0; j < kW[1]; ++j) ASSERT_EQ(w.data_as<float>()[i * kW[1] + j], w_at(7, i, j));
}

TEST(DistCheckpoint, ReplicatedIsSavedOnceByTheLowestHolder) {
  test::TempDir dir("dist");
  std::vector<float> b(37);
  for (size_t j = 0; j < b.size(); ++j) b[j] = static_cast<float>(j) * 0.5f;
  run_ranks(4, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir.path(), std::move(comm));
    auto state = rank_state(1, 4, r);
    std::vector<DistSlice> slices = slices_of(state);
    std::vector<float> mine = b;
    if (r > 0) {  // rank 0 does not hold it
      DistSlice s;
      s.name = "b";
      s.dtype = DType::kF32;
      s.global_shape = {37};
      s.data = reinterpret_cast<uint8_t*>(mine.data());
      s.nbytes = 37 * 4;
      s.replicated = true;
      slices.push_back(s);
    }
    ck.save_async(1, slices);
    ck.wait();
  });
  Manifest m = read_manifest(dir.path() + "/step-1");
  auto it = std::find_if(m.info.entries.begin(), m.info.entries.end(), [](const TensorEntry& e) { return e.name == "b"; });
  ASSERT_NE(it, m.info.entries.end());
  ASSERT_EQ(it->slices.size(), 1u);
  EXPECT_EQ(it->slices[0].rank, 1u);
}

// Every rank runs `body`, which saves step 1 with some rank's input made bad; every rank
// must get the same error from wait() and no step may appear.
void expect_refused_everywhere(const std::function<void(int, std::vector<Piece>&)>& spoil, ErrorKind kind,
                               const std::string& needle) {
  test::TempDir dir("dist");
  std::mutex mutex;
  std::set<std::string> messages;
  run_ranks(4, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir.path(), std::move(comm));
    auto state = rank_state(1, 4, r);
    spoil(r, state);
    try {
      ck.save_async(1, slices_of(state));
    } catch (const Error&) {  // the bad rank learns at once; wait() follows anyway
    }
    try {
      ck.wait();
      ADD_FAILURE() << "rank " << r << ": step committed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      std::lock_guard<std::mutex> lock(mutex);
      messages.insert(e.what());
    }
    EXPECT_FALSE(ck.latest());
  });
  ASSERT_EQ(messages.size(), 1u) << "ranks got different errors";
  EXPECT_NE(messages.begin()->find(needle), std::string::npos) << *messages.begin();
  for (const auto& e : stdfs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find("step-"), std::string::npos) << e.path();
}

TEST(DistCheckpoint, SliceOutsideTheGlobalShapeFailsOnEveryRank) {
  expect_refused_everywhere([](int r, std::vector<Piece>& s) { if (r == 2) s[0].slice.offsets[0] = 990; },
                            ErrorKind::kUsage, "rank 2: slice [990:");
}

TEST(DistCheckpoint, RanksDisagreeingOnShapeOrDtypeFailOnEveryRank) {
  expect_refused_everywhere([](int r, std::vector<Piece>& s) { if (r == 1) s[1].slice.global_shape = {24, 334}; },
                            ErrorKind::kUsage, "rank 0 saves it as F64 [24, 333], rank 1 as F64 [24, 334]");
  expect_refused_everywhere([](int r, std::vector<Piece>& s) { if (r == 3) s[0].slice.dtype = DType::kI32; },
                            ErrorKind::kUsage, "rank 3 as I32");
}

TEST(DistCheckpoint, OverlapsAndGapsFailOnEveryRank) {
  expect_refused_everywhere([](int r, std::vector<Piece>& s) { if (r == 1) s[0] = w_piece(1, {0, 0}, {200, 37}); },
                            ErrorKind::kUsage, "overlap");
  // Rank 3 forgets w: rows 600..999 are saved by nobody.
  expect_refused_everywhere([](int r, std::vector<Piece>& s) { if (r == 3) s.erase(s.begin()); },
                            ErrorKind::kUsage, "missing slice: the saved slices cover 22200 of 37000 elements, none covers index [600, 0]");
}

TEST(DistCheckpoint, AFailedStepCanBeRetriedAndStepsMustIncrease) {
  test::TempDir dir("dist");
  run_ranks(2, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir.path(), std::move(comm));
    auto state = rank_state(3, 2, r);
    auto bad = state;
    if (r == 1) bad[0].slice.nbytes -= 4;
    try {
      ck.save_async(3, slices_of(bad));
    } catch (const Error&) {
    }
    EXPECT_THROW(ck.wait(), Error);
    ck.save_async(3, slices_of(state));
    EXPECT_EQ(ck.wait().step, 3u);
    EXPECT_EQ(test::kind_of([&] { ck.save_async(3, slices_of(state)); }), ErrorKind::kUsage);
    EXPECT_THROW(ck.wait(), Error);
  });
  expect_restores(dir.path(), 3, 3, false);
}

TEST(DistCheckpoint, ADeadRankTimesOutInsteadOfHanging) {
  test::TempDir dir("dist");
  DistOptions o;
  o.timeout_seconds = 0.3;
  std::atomic<int> timed_out{0};
  run_ranks(3, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir.path(), std::move(comm), o);
    auto state = rank_state(1, 3, r);
    ck.save_async(1, slices_of(state));
    if (r == 2) return;  // "dies" before the commit
    auto t0 = std::chrono::steady_clock::now();
    try {
      ck.wait();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
      EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
      ++timed_out;
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
    EXPECT_TRUE(ck.broken());
    EXPECT_THROW(ck.save_async(2, slices_of(state)), Error);
  });
  EXPECT_EQ(timed_out.load(), 2);
  // Nothing visible; the next job's open removes what the dead one left.
  run_ranks(1, [&](int, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir.path(), std::move(comm));
    EXPECT_FALSE(ck.latest());
  });
  for (const auto& e : stdfs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find("step-"), std::string::npos) << e.path();
}

TEST(DistCheckpoint, AFailedPublicationFailsOnEveryRank) {
  test::TempDir dir("dist");
  set_fault_hook([](FaultPoint point, const std::string& path) {
    return point == FaultPoint::kRename && path.ends_with("/step-1") ? EIO : 0;
  });
  std::mutex mutex;
  std::set<std::string> messages;
  run_ranks(3, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir.path(), std::move(comm));
    auto state = rank_state(1, 3, r);
    ck.save_async(1, slices_of(state));
    try {
      ck.wait();
      ADD_FAILURE() << "committed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kIo);
      std::lock_guard<std::mutex> lock(mutex);
      messages.insert(e.what());
    }
    EXPECT_FALSE(ck.broken());
  });
  set_fault_hook(nullptr);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages.begin()->find("rank 0: failed to rename"), std::string::npos) << *messages.begin();
  for (const auto& e : stdfs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find("step-"), std::string::npos) << e.path();
}

// A tensor of 4 MiB over 2 ranks, so that each slice has two 1 MiB blocks.
void save_big(const std::string& dir) {
  run_ranks(2, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(dir, std::move(comm));
    Piece p = make_piece<float>("big", DType::kF32, {1024, 1024}, {512 * r, 0}, {512, 1024},
                                [](int64_t i, int64_t j) { return static_cast<float>(i * 1024 + j); });
    ck.save_async(1, {p.slice});
    ck.wait();
  });
}

std::vector<uint8_t> read_big(const std::string& dir, const Box& box) {
  StepReader reader(dir, 1);
  std::vector<uint8_t> out(box_numel(box) * 4);
  reader.read_box(reader.manifest().info.entries.at(0), box, out);
  return out;
}

TEST(DistCheckpoint, BoxReadsAreExactWhateverTheirAlignment) {
  test::TempDir dir("dist");
  save_big(dir.path());  // two slices of 512 rows, each of two 1 MiB blocks (256 rows)
  const std::vector<Box> boxes = {
      {{0, 0}, {1024, 1024}},  // whole: every block straight into the output
      {{256, 0}, {256, 1024}}, // exactly one block
      {{100, 0}, {600, 1024}}, // block edges inside, across both slices
      {{511, 0}, {3, 1024}},   // across the slices' boundary
      {{700, 10}, {100, 20}},  // columns: every row a run of its own
      {{1023, 1023}, {1, 1}},  // one element
  };
  for (const Box& box : boxes) {
    auto got = read_big(dir.path(), box);
    const float* g = reinterpret_cast<const float*>(got.data());
    size_t wrong = 0;
    for (int64_t i = 0; i < box.shape[0]; ++i)
      for (int64_t j = 0; j < box.shape[1]; ++j)
        wrong += g[i * box.shape[1] + j] != static_cast<float>((box.start[0] + i) * 1024 + box.start[1] + j);
    EXPECT_EQ(wrong, 0u) << box_to_string(box);
  }
}

TEST(DistCheckpoint, RestoreReadsAndChecksOnlyTheBlocksItNeeds) {
  test::TempDir dir("dist");
  save_big(dir.path());
  Manifest m = read_manifest(dir.path() + "/step-1");
  const SliceEntry& second = m.info.entries[0].slices.at(1);
  ASSERT_EQ(second.rank, 1u);
  ASSERT_EQ(second.blocks.size(), 2u);
  // Flip a byte in the second block of rank 1's slice (rows 768..1023).
  {
    std::fstream f(dir.path() + "/step-1/" + second.shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(second.offset + kSliceBlockBytes + 100));
    f.put('\x7f');
  }
  // Rows 0..767 do not touch it and come back exact.
  auto good = read_big(dir.path(), {{100, 0}, {600, 1024}});
  const float* g = reinterpret_cast<const float*>(good.data());
  for (int64_t i = 0; i < 600; i += 50) EXPECT_EQ(g[i * 1024 + 3], static_cast<float>((100 + i) * 1024 + 3));
  // A box reaching into it is refused, naming the block.
  try {
    read_big(dir.path(), {{700, 10}, {100, 20}});
    ADD_FAILURE() << "corruption not detected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("checksum mismatch in block 1"), std::string::npos) << e.what();
    EXPECT_NE(e.where().find("slice [512:1024, 0:1024] of rank 1"), std::string::npos) << e.where();
  }
  Options o;
  o.read_only = true;
  EXPECT_FALSE(Checkpointer::open(dir.path(), o)->verify(1).ok());
}

TEST(DistCheckpoint, IncompletePartsAndUncoveredBoxesAreNamed) {
  test::TempDir dir("dist");
  save_world(dir.path(), 3, 2);
  const std::string step = dir.path() + "/step-2";
  // A box no saved slice covers (a manifest entry that lost a slice).
  {
    StepReader reader(dir.path(), 2);
    TensorEntry w = reader.manifest().info.entries.at(0);
    ASSERT_EQ(w.name, "w");
    w.slices.erase(w.slices.begin() + 1);  // rank 1's rows, [166:500)
    std::vector<uint8_t> out(10 * 37 * 4);
    test::expect_error_exact([&] { reader.read_box(w, {{160, 0}, {10, 37}}, out); }, ErrorKind::kInvalidInput,
                             "no saved slice covers index [166, 0] of the wanted box [160:170, 0:37]", "step-2: tensor 'w'");
    // Such a manifest is refused as a whole when read.
    Manifest m = read_manifest(step);
    m.info.entries[0] = w;
    std::vector<uint8_t> bytes = manifest_encode(m);
    test::expect_error_exact([&] { manifest_decode(bytes, "manifest.json"); }, ErrorKind::kInvalidInput,
                             "missing slice: the saved slices cover 24642 of 37000 elements, none covers index [166, 0]",
                             "manifest.json: tensor 'w'");
  }
  // A rank's part gone: verify names the rank.
  stdfs::remove(step + "/rank-00001.json");
  Options o;
  o.read_only = true;
  VerifyReport r = Checkpointer::open(dir.path(), o)->verify(2);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0], "step-2: rank 1: part rank-00001.json is missing (the rank did not finish its part)");
}

// Tiers: four ranks on two "nodes" (ranks 0-1 and 2-3, each pair sharing a node-local
// directory) in front of one shared directory.
struct Tiers {
  test::TempDir root{"dist_tiers"};
  std::string shared = root.path() + "/shared";
  std::string node(int r) const { return root.path() + (r < 2 ? "/node-a" : "/node-b"); }
  DistOptions options(int r, uint32_t keep_last = 0, double timeout = 30) const {
    DistOptions o;
    o.local_dir = node(r);
    o.keep_last = keep_last;
    o.timeout_seconds = timeout;
    return o;
  }
};

std::set<std::string> entries_of(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : stdfs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST(DistCheckpoint, TiersCommitOnEveryNodeAndFlushToTheSharedDirectory) {
  Tiers t;
  run_ranks(4, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(t.shared, std::move(comm), t.options(r, 2));
    for (uint64_t step = 1; step <= 3; ++step) {
      auto state = rank_state(step, 4, r);
      ck.save_async(step, slices_of(state));
      ck.wait();
      // Committed on this node: the global manifest and this node's parts and shards.
      const std::string local = t.node(r) + "/" + step_dir_name(step);
      EXPECT_TRUE(stdfs::exists(local + "/manifest.json"));
      EXPECT_TRUE(stdfs::exists(local + "/" + shard_file_name(static_cast<uint32_t>(r))));
      EXPECT_FALSE(stdfs::exists(local + "/" + shard_file_name(r < 2 ? 2u : 0u)));
    }
    ck.flush();
    DistFlushStatus status = ck.flush_status();
    EXPECT_EQ(status.latest_committed, 3u);
    EXPECT_EQ(status.latest_durable, 3u);
    ASSERT_EQ(status.steps.size(), 3u);
    for (const StepLag& lag : status.steps) {
      EXPECT_TRUE(lag.durable) << lag.step;
      EXPECT_FALSE(lag.error) << lag.error->what();
      EXPECT_GE(lag.lag_seconds, 0);
      EXPECT_LT(lag.lag_seconds, 30);
    }
  });
  // The shared tier keeps the newest two, complete; each node only the newest.
  EXPECT_EQ(entries_of(t.shared), (std::set<std::string>{".lock", "latest", "step-2", "step-3"}));
  EXPECT_EQ(entries_of(t.node(0)), (std::set<std::string>{".lock", "latest", "step-3"}));
  EXPECT_EQ(entries_of(t.node(2)), (std::set<std::string>{".lock", "latest", "step-3"}));
  Options ro;
  ro.read_only = true;
  EXPECT_TRUE(Checkpointer::open(t.shared, ro)->verify(3).ok());
  expect_restores(t.shared, 3, 3, true);
}

TEST(DistCheckpoint, RestorePrefersAnIntactNodeLocalCopy) {
  Tiers t;
  run_ranks(4, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(t.shared, std::move(comm), t.options(r));
    auto state = rank_state(5, 4, r);
    ck.save_async(5, slices_of(state));
    ck.wait();
    ck.flush();
  });
  // Damage the shared copy of rank 0's shard: the ranks of node a never read it.
  {
    std::fstream f(t.shared + "/step-5/" + shard_file_name(static_cast<uint32_t>(0)), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4, std::ios::end);
    f.write("\xff\xff\xff\xff", 4);
  }
  // Node b lost rank 3's shard (as on a node the job did not run on), and rank 2's
  // copy is damaged: those ranks read the shared copies.
  stdfs::remove(t.node(3) + "/step-5/" + shard_file_name(static_cast<uint32_t>(3)));
  {
    std::fstream f(t.node(2) + "/step-5/" + shard_file_name(static_cast<uint32_t>(2)), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4, std::ios::end);
    f.write("\x01\x02\x03\x04", 4);
  }
  std::vector<RestoreSource> sources(4);
  run_ranks(4, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(t.shared, std::move(comm), t.options(r));
    ASSERT_EQ(ck.latest(), 5u);
    auto want = rank_state(5, 4, r);
    std::vector<Piece> got = want;
    for (auto& p : got) p.slice.data = p.bytes.data();
    for (auto& p : got) std::fill(p.bytes.begin(), p.bytes.end(), 0);
    sources[static_cast<size_t>(r)] = ck.restore(5, slices_of(got));
    for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(want[k].bytes, got[k].bytes) << want[k].slice.name << " rank " << r;
  });
  EXPECT_EQ(sources[0], RestoreSource::kNodeLocal);
  EXPECT_EQ(sources[1], RestoreSource::kNodeLocal);
  EXPECT_EQ(sources[2], RestoreSource::kShared);  // its node-local copy fails its checksum
  EXPECT_EQ(sources[3], RestoreSource::kShared);  // its node-local copy lacks the shard
}

TEST(DistCheckpoint, ANodeThatCannotCommitFailsTheStepOnEveryRank) {
  Tiers t;
  set_fault_hook([&](FaultPoint point, const std::string& path) {
    return point == FaultPoint::kRename && path == t.node(2) + "/step-1" ? EIO : 0;
  });
  std::mutex mutex;
  std::set<std::string> messages;
  run_ranks(4, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(t.shared, std::move(comm), t.options(r));
    auto state = rank_state(1, 4, r);
    ck.save_async(1, slices_of(state));
    try {
      ck.wait();
      ADD_FAILURE() << "committed";
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.insert(e.what());
    }
    if (r == 0) set_fault_hook(nullptr);
    ck.flush();
    // The number may be tried again.
    ck.save_async(1, slices_of(state));
    ck.wait();
    ck.flush();
  });
  set_fault_hook(nullptr);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages.begin()->find("rank 2: failed to rename"), std::string::npos) << *messages.begin();
  EXPECT_EQ(entries_of(t.shared), (std::set<std::string>{".lock", "latest", "step-1"}));
  expect_restores(t.shared, 2, 1, false);
}

TEST(DistCheckpoint, AFlushThatFailsIsReportedAndTheStepStaysNodeLocal) {
  Tiers t;
  set_fault_hook([&](FaultPoint point, const std::string& path) {
    return point == FaultPoint::kRename && path.starts_with(t.shared + "/step-1.tmp-") &&
                   path.ends_with("/rank-00003.json")
               ? EIO
               : 0;
  });
  std::mutex mutex;
  std::set<std::string> messages;
  run_ranks(4, [&](int r, std::unique_ptr<dist::Comm> comm) {
    DistCheckpointer ck(t.shared, std::move(comm), t.options(r, 0, 1.0));
    auto state = rank_state(1, 4, r);
    ck.save_async(1, slices_of(state));
    ck.wait();  // committed on the nodes
    try {
      ck.flush();
      ADD_FAILURE() << "flushed";
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.insert(e.what());
    }
    DistFlushStatus status = ck.flush_status();
    EXPECT_EQ(status.latest_committed, 1u);
    EXPECT_FALSE(status.latest_durable);
    ASSERT_EQ(status.steps.size(), 1u);
    EXPECT_FALSE(status.steps[0].durable);
    EXPECT_TRUE(status.steps[0].error);
    EXPECT_TRUE(stdfs::exists(t.node(r) + "/step-1/manifest.json"));
    if (r == 0) set_fault_hook(nullptr);
    // The next step flushes, and replaces the node-local one.
    auto next = rank_state(2, 4, r);
    ck.save_async(2, slices_of(next));
    ck.wait();
    ck.flush();
    EXPECT_EQ(ck.flush_status().latest_durable, 2u);
  });
  set_fault_hook(nullptr);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages.begin()->find("rank 0: rank 3's part did not reach the shared tier"), std::string::npos)
      << *messages.begin();
  EXPECT_EQ(entries_of(t.shared), (std::set<std::string>{".lock", "latest", "step-2"}));
  EXPECT_EQ(entries_of(t.node(0)), (std::set<std::string>{".lock", "latest", "step-2"}));
}

TEST(DistCheckpoint, ANodeLocalTierMustNotBeTheSharedDirectory) {
  test::TempDir dir("dist");
  run_ranks(2, [&](int, std::unique_ptr<dist::Comm> comm) {
    DistOptions o;
    o.local_dir = dir.path();
    test::expect_error_exact([&] { DistCheckpointer ck(dir.path(), std::move(comm), o); }, ErrorKind::kUsage,
                             "rank 0: the node-local tier is the shared directory itself (" + dir.path() + ")");
  });
}

}  // namespace
}  // namespace tk::ckpt
