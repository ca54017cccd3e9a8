#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "ckpt/ckpt_test_util.h"
#include "test_util.h"
#include "tk/ckpt/checkpoint.h"
#include "tk/ckpt/manifest.h"
#include "tk/io/tensor_file.h"

namespace tk::ckpt {
namespace {

namespace stdfs = std::filesystem;

using test::random_tensor;

// A float32 tensor of N(0,1) values: compressible the way real weights are.
Tensor gaussian_f32(int64_t n, uint64_t seed) {
  Tensor t = Tensor::empty(DType::kF32, {n});
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  float* p = t.mutable_data_as<float>();
  for (int64_t i = 0; i < n; ++i) p[i] = dist(rng);
  return t;
}

std::vector<NamedTensor> make_state(uint64_t seed) {
  return {{"layer.0.weight", gaussian_f32(4096, seed)},
          {"layer.0.bias", random_tensor(DType::kBF16, {64}, seed + 1)},
          {"counter", random_tensor(DType::kI64, {1}, seed + 2)},
          {"mask", random_tensor(DType::kU8, {3, 5}, seed + 3)},
          {"scalar", random_tensor(DType::kF64, {}, seed + 4)}};
}

void expect_same(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  test::expect_same_tensors(a, b);
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : stdfs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void flip_bit(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c;
  f.read(&c, 1);
  c ^= 0x10;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

TEST(Checkpoint, SaveRestoreRoundTripAndLayout) {
  test::TempDir tmp;
  std::string dir = tmp.path() + "/ck";
  auto state = make_state(1);
  {
    auto ck = Checkpointer::open(dir);
    EXPECT_FALSE(ck->latest());
    SaveStats s = ck->wait(ck->save_async(7, state, {{"epoch", "3"}}));
    EXPECT_EQ(s.step, 7u);
    EXPECT_EQ(s.tensors_stored, state.size());
    EXPECT_GT(s.written_bytes, s.logical_bytes);
    EXPECT_EQ(ck->latest(), 7u);
    expect_same(state, ck->restore(7));
    EXPECT_TRUE(ck->verify(7).ok());
  }
  EXPECT_EQ(entries(dir), (std::vector<std::string>{".lock", "latest", "step-7"}));
  EXPECT_EQ(entries(dir + "/step-7"), (std::vector<std::string>{"manifest.json", "shard-00000.safetensors"}));
  std::ifstream latest(dir + "/latest");
  std::string line;
  std::getline(latest, line);
  EXPECT_EQ(line, "step-7");

  // A full uncompressed step is an ordinary safetensors file.
  auto reader = io::open_reader(dir + "/step-7/shard-00000.safetensors");
  ASSERT_EQ(reader->tensors().size(), state.size());
  for (const auto& nt : state) {
    auto idx = reader->find(nt.name);
    ASSERT_TRUE(idx) << nt.name;
    Tensor t = reader->read(*idx);
    EXPECT_EQ(0, std::memcmp(t.data(), nt.tensor.data(), t.nbytes()));
  }

  // Reopen read-only: the metadata came through.
  Options ro;
  ro.read_only = true;
  auto ck = Checkpointer::open(dir, ro);
  StepInfo info = ck->info(7);
  EXPECT_EQ(info.metadata.at("epoch"), "3");
  EXPECT_EQ(info.tensors, state.size());
  EXPECT_EQ(test::kind_of([&] { ck->save_async(8, state); }), ErrorKind::kUsage);
}

TEST(Checkpoint, CopySnapshotIsIndependentOfTheCaller) {
  test::TempDir tmp;
  auto ck = Checkpointer::open(tmp.path() + "/ck");
  auto state = make_state(2);
  auto expected = state;
  for (auto& nt : expected) nt.tensor = nt.tensor.clone();
  SaveHandle h = ck->save_async(1, state, {}, Snapshot::kCopy);
  // The caller overwrites its tensors right away; the step holds the old values.
  for (auto& nt : state) std::memset(nt.tensor.mutable_data(), 0xAB, nt.tensor.nbytes());
  ck->wait(h);
  expect_same(expected, ck->restore(1));
}

TEST(Checkpoint, ManyAsyncSavesCommitInOrder) {
  test::TempDir tmp;
  Options o;
  o.staging_limit = 1 << 20;  // forces saves to wait for staging buffers
  auto ck = Checkpointer::open(tmp.path() + "/ck", o);
  std::vector<SaveHandle> handles;
  for (uint64_t s = 1; s <= 12; ++s) handles.push_back(ck->save_async(s, make_state(s), {}, Snapshot::kCopy));
  for (auto h : handles) ck->wait(h);
  auto steps = ck->list();
  ASSERT_EQ(steps.size(), 12u);
  for (uint64_t s = 1; s <= 12; ++s) expect_same(make_state(s), ck->restore(s));
  EXPECT_EQ(test::kind_of([&] { ck->save_async(12, make_state(1)); }), ErrorKind::kUsage);
  EXPECT_EQ(test::kind_of([&] { ck->wait(999); }), ErrorKind::kUsage);
}

TEST(Checkpoint, BadArguments) {
  test::TempDir tmp;
  auto ck = Checkpointer::open(tmp.path() + "/ck");
  Tensor t = random_tensor(DType::kF32, {2}, 1);
  EXPECT_EQ(test::kind_of([&] { ck->save_async(1, {{"a", t}, {"a", t}}); }), ErrorKind::kUsage);
  EXPECT_EQ(test::kind_of([&] { ck->save_async(1, {{"", t}}); }), ErrorKind::kUsage);
  EXPECT_EQ(test::kind_of([&] { ck->restore(3); }), ErrorKind::kInvalidInput);
  EXPECT_FALSE(ck->verify(3).ok());
}

TEST(Checkpoint, NotACheckpointDirectoryAndLock) {
  test::TempDir tmp;
  std::string dir = tmp.path() + "/other";
  stdfs::create_directories(dir);
  std::ofstream(dir + "/notes.txt") << "x";
  test::expect_error_exact([&] { Checkpointer::open(dir); }, ErrorKind::kInvalidInput,
                           "not a checkpoint directory (unexpected entry 'notes.txt')", dir);
  std::ofstream(tmp.path() + "/file") << "x";
  EXPECT_EQ(test::kind_of([&] { Checkpointer::open(tmp.path() + "/file"); }), ErrorKind::kInvalidInput);
  Options ro;
  ro.read_only = true;
  EXPECT_EQ(test::kind_of([&] { Checkpointer::open(tmp.path() + "/missing", ro); }), ErrorKind::kIo);

  std::string ckdir = tmp.path() + "/ck";
  auto first = Checkpointer::open(ckdir);
  test::expect_error_exact([&] { Checkpointer::open(ckdir); }, ErrorKind::kUsage,
                           "checkpoint directory is in use by another writer (pid " + std::to_string(::getpid()) + ")",
                           ckdir);
  // Readers need no lock.
  EXPECT_NO_THROW(Checkpointer::open(ckdir, ro));
}

TEST(Checkpoint, LeftoversAreRemovedOnOpenAndNeverListed) {
  test::TempDir tmp;
  std::string dir = tmp.path() + "/ck";
  {
    auto ck = Checkpointer::open(dir);
    ck->save(1, make_state(1));
  }
  // What a writer killed mid-save or mid-delete leaves behind.
  stdfs::create_directories(dir + "/step-2.tmp-123-1-5");
  std::ofstream(dir + "/step-2.tmp-123-1-5/shard-00000.safetensors") << "partial";
  stdfs::create_directories(dir + "/step-0.del-99-1-1");
  std::ofstream(dir + "/latest.tmp-5-5-5") << "step-2";
  Options ro;
  ro.read_only = true;
  EXPECT_EQ(Checkpointer::open(dir, ro)->list().size(), 1u);
  auto ck = Checkpointer::open(dir);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{".lock", "latest", "step-1"}));
}

TEST(Checkpoint, StaleLatestIsRepaired) {
  test::TempDir tmp;
  std::string dir = tmp.path() + "/ck";
  {
    auto ck = Checkpointer::open(dir);
    ck->save(1, make_state(1));
    ck->save(2, make_state(2));
  }
  std::ofstream(dir + "/latest") << "step-1\n";  // killed between rename and pointer update
  auto ck = Checkpointer::open(dir);
  EXPECT_EQ(ck->latest(), 2u);
  std::ifstream latest(dir + "/latest");
  std::string line;
  std::getline(latest, line);
  EXPECT_EQ(line, "step-2");
}

TEST(Checkpoint, CorruptionIsReportedNamingTheTensor) {
  test::TempDir tmp;
  std::string dir = tmp.path() + "/ck";
  auto ck = Checkpointer::open(dir);
  ck->save(1, make_state(1));
  StepInfo info = ck->info(1);
  const TensorEntry* w = nullptr;
  for (const auto& e : info.entries)
    if (e.name == "layer.0.weight") w = &e;
  ASSERT_NE(w, nullptr);
  flip_bit(dir + "/step-1/" + w->shard, w->offset + 100);
  VerifyReport r = ck->verify(1);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0], "step-1: tensor 'layer.0.weight': checksum mismatch");
  test::expect_error_exact([&] { ck->restore(1); }, ErrorKind::kInvalidInput, "checksum mismatch",
                           "step-1: tensor 'layer.0.weight'");

  // A damaged manifest is refused as a whole.
  ck->save(2, make_state(2));
  flip_bit(dir + "/step-2/manifest.json", 40);
  EXPECT_EQ(test::kind_of([&] { ck->restore(2); }), ErrorKind::kInvalidInput);
  EXPECT_FALSE(ck->verify(2).ok());

  // A missing shard.
  ck->save(3, make_state(3));
  stdfs::remove(dir + "/step-3/shard-00000.safetensors");
  EXPECT_EQ(test::kind_of([&] { ck->restore(3); }), ErrorKind::kInvalidInput);
  EXPECT_FALSE(ck->verify(3).ok());
}

// A manifest nested 10^5 levels deep is refused, by list() as a whole and by
// list_each() for that step only; verify fails that step and passes the others.
TEST(Checkpoint, DeepManifestIsListedAsInvalid) {
  test::TempDir tmp;
  std::string dir = tmp.path() + "/ck";
  auto ck = Checkpointer::open(dir);
  for (uint64_t step : {1, 2, 3}) ck->save(step, make_state(step));
  std::ofstream(dir + "/step-2/manifest.json") << std::string(100000, '[') << std::string(100000, ']');
  test::expect_error_exact([&] { ck->list(); }, ErrorKind::kInvalidInput,
                           "invalid JSON in checkpoint manifest: nested deeper than 127 levels",
                           dir + "/step-2/manifest.json");
  std::vector<StepListing> listed = ck->list_each();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_TRUE(listed[0].info && !listed[0].error && listed[0].info->step == 1);
  EXPECT_TRUE(!listed[1].info && listed[1].error && listed[1].step == 2);
  EXPECT_TRUE(listed[2].info && listed[2].info->step == 3);
  EXPECT_TRUE(ck->verify(1).ok());
  EXPECT_FALSE(ck->verify(2).ok());
  EXPECT_TRUE(ck->verify(3).ok());
}

TEST(Checkpoint, RestoreIntoCallerBuffers) {
  test::TempDir tmp;
  auto ck = Checkpointer::open(tmp.path() + "/ck");
  auto state = make_state(4);
  ck->save(1, state);
  std::vector<NamedTensor> targets = {{"counter", Tensor::zeros(DType::kI64, {1})},
                                      {"layer.0.weight", Tensor::zeros(DType::kF32, {4096})}};
  ck->restore_into(1, targets);
  EXPECT_EQ(0, std::memcmp(targets[0].tensor.data(), state[2].tensor.data(), 8));
  EXPECT_EQ(0, std::memcmp(targets[1].tensor.data(), state[0].tensor.data(), 4096 * 4));
  std::vector<NamedTensor> wrong = {{"counter", Tensor::zeros(DType::kI32, {1})}};
  EXPECT_EQ(test::kind_of([&] { ck->restore_into(1, wrong); }), ErrorKind::kUsage);
  std::vector<NamedTensor> missing = {{"nope", Tensor::zeros(DType::kI32, {1})}};
  EXPECT_EQ(test::kind_of([&] { ck->restore_into(1, missing); }), ErrorKind::kInvalidInput);
}

TEST(Checkpoint, CompressionRoundTrips) {
  test::TempDir tmp;
  Options o;
  o.compression = Compression::kLossless;
  auto ck = Checkpointer::open(tmp.path() + "/ck", o);
  std::vector<NamedTensor> state = {{"w", gaussian_f32(1 << 18, 5)}, {"noise", random_tensor(DType::kU8, {5000}, 6)}};
  SaveStats s = ck->save(1, state);
  EXPECT_LT(s.written_bytes, s.logical_bytes);
  StepInfo info = ck->info(1);
  EXPECT_EQ(info.entries[0].encoding, "lossless");
  EXPECT_EQ(info.entries[1].encoding, "raw");  // random bytes do not compress
  expect_same(state, ck->restore(1));
  EXPECT_TRUE(ck->verify(1).ok());
}

TEST(Checkpoint, IncrementalStoresOnlyWhatChanged) {
  test::TempDir tmp;
  std::string dir = tmp.path() + "/ck";
  Options o;
  o.incremental = true;
  o.full_every = 4;
  auto ck = Checkpointer::open(dir, o);
  std::vector<NamedTensor> state;
  for (int i = 0; i < 10; ++i) state.push_back({"t" + std::to_string(i), gaussian_f32(1 << 15, 100 + i)});
  SaveStats full = ck->save(1, state);
  EXPECT_EQ(full.tensors_stored, 10u);

  // Step 2: one tensor changes a little (delta), one completely (stored), rest same.
  auto next = state;
  next[3].tensor = state[3].tensor.clone();
  next[3].tensor.mutable_data_as<float>()[17] += 1.0f;
  next[5].tensor = gaussian_f32(1 << 15, 999);
  SaveStats inc = ck->save(2, next);
  EXPECT_EQ(inc.tensors_referenced, 8u);
  EXPECT_EQ(inc.tensors_delta, 1u);
  EXPECT_EQ(inc.tensors_stored, 1u);
  EXPECT_LT(inc.written_bytes, full.written_bytes * 15 / 100);
  EXPECT_EQ(ck->info(2).parent, 1u);
  expect_same(next, ck->restore(2));
  expect_same(state, ck->restore(1));
  EXPECT_TRUE(ck->verify(2).ok());

  ck->save(3, next);
  ck->save(4, next);
  SaveStats again_full = ck->save(5, next);  // full_every = 4: steps 1 and 5 are full
  EXPECT_EQ(again_full.tensors_stored, 10u);
  EXPECT_FALSE(ck->info(5).parent);

  // A damaged base makes the dependent step fail verification too, naming the base.
  StepInfo first = ck->info(1);
  const TensorEntry& base = first.entries[0];
  flip_bit(dir + "/step-1/" + base.shard, base.offset + 8);
  VerifyReport r = ck->verify(2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.problems[0], "step-1: tensor 't0': checksum mismatch");
}

TEST(Checkpoint, RetentionKeepsNewestAndParents) {
  test::TempDir tmp;
  std::string dir = tmp.path() + "/ck";
  Options o;
  o.incremental = true;
  o.full_every = 5;
  o.keep_last = 2;
  o.keep_every = 100;
  auto ck = Checkpointer::open(dir, o);
  auto state = make_state(1);
  for (uint64_t s = 1; s <= 8; ++s) {
    state[2].tensor = random_tensor(DType::kI64, {1}, s);
    ck->save(s, state);
  }
  // Steps 1 and 6 are full; 7 and 8 are the last two and refer to 6.
  std::vector<uint64_t> kept;
  for (const auto& s : ck->list()) kept.push_back(s.step);
  EXPECT_EQ(kept, (std::vector<uint64_t>{6, 7, 8}));
  expect_same(state, ck->restore(8));
}

TEST(Checkpoint, DurableTierGetsEveryStep) {
  test::TempDir tmp;
  std::string fast = tmp.path() + "/fast", durable = tmp.path() + "/durable";
  Options o;
  o.durable_dir = durable;
  {
    auto ck = Checkpointer::open(fast, o);
    for (uint64_t s = 1; s <= 3; ++s) ck->save(s, make_state(s));
    ck->wait_all();
    FlushStatus st = ck->flush_status();
    EXPECT_EQ(st.latest_durable, 3u);
    EXPECT_EQ(st.pending, 0u);
    EXPECT_EQ(st.lag_seconds, 0);
    for (const auto& s : ck->list()) EXPECT_TRUE(s.durable);
  }
  Options ro;
  ro.read_only = true;
  auto copy = Checkpointer::open(durable, ro);
  EXPECT_EQ(copy->latest(), 3u);
  for (uint64_t s = 1; s <= 3; ++s) {
    expect_same(make_state(s), copy->restore(s));
    EXPECT_TRUE(copy->verify(s).ok());
  }
  // flush_steps copies only what is missing.
  std::string third = tmp.path() + "/third";
  EXPECT_EQ(flush_steps(fast, third), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_TRUE(flush_steps(fast, third).empty());
}

TEST(Checkpoint, ShardsSplitLargeSteps) {
  test::TempDir tmp;
  Options o;
  o.shard_bytes = 20000;
  auto ck = Checkpointer::open(tmp.path() + "/ck", o);
  std::vector<NamedTensor> state;
  for (int i = 0; i < 6; ++i) state.push_back({"t" + std::to_string(i), gaussian_f32(4000, i)});
  ck->save(1, state);
  std::set<std::string> shards;
  for (const auto& e : ck->info(1).entries) shards.insert(e.shard);
  EXPECT_GE(shards.size(), 3u);
  expect_same(state, ck->restore(1));
  EXPECT_TRUE(ck->verify(1).ok());
}

}  // namespace
}  // namespace tk::ckpt

namespace tk::ckpt {
namespace {

TEST(Checkpoint, IncrementalRefersToTheStepHoldingTheBytes) {
  test::TempDir tmp;
  std::string dir = tmp.path() + "/ck";
  Options o;
  o.incremental = true;
  o.keep_last = 1;
  auto ck = Checkpointer::open(dir, o);
  std::vector<NamedTensor> state;
  for (int i = 0; i < 4; ++i) state.push_back({"t" + std::to_string(i), random_tensor(DType::kF32, {1000}, i)});
  ck->save(1, state);
  state[2].tensor = random_tensor(DType::kF32, {1000}, 50);  // changes at step 2 only
  ck->save(2, state);
  SaveStats s3 = ck->save(3, state);  // nothing changed since step 2
  EXPECT_EQ(s3.tensors_referenced, 4u);
  StepInfo info = ck->info(3);
  EXPECT_EQ(*info.entries[2].source_step, 2u);
  EXPECT_EQ(*info.entries[0].source_step, 1u);
  // keep_last = 1 keeps step 3 and both steps it takes bytes from.
  std::vector<uint64_t> kept;
  for (const auto& s : ck->list()) kept.push_back(s.step);
  EXPECT_EQ(kept, (std::vector<uint64_t>{1, 2, 3}));
  expect_same(state, ck->restore(3));
  EXPECT_TRUE(ck->verify(3).ok());
  // Reopened, the engine still knows where each tensor's bytes are.
  ck.reset();
  ck = Checkpointer::open(dir, o);
  EXPECT_EQ(ck->save(4, state).tensors_referenced, 4u);
  kept.clear();
  for (const auto& s : ck->list()) kept.push_back(s.step);
  EXPECT_EQ(kept, (std::vector<uint64_t>{1, 2, 4}));
  expect_same(state, ck->restore(4));
}

TEST(Checkpoint, ClaimsAreCheckedAgainstTheShardBeforeAllocating) {
  // A manifest (checksum right) that claims a 4 TiB raw tensor: its shard holds a few
  // KB, so restore and verify refuse it as invalid input instead of allocating it.
  test::TempDir tmp;
  const std::string dir = tmp.path() + "/ck";
  {
    auto ck = Checkpointer::open(dir);
    ck->save(1, {{"w", random_tensor(DType::kF32, {1000}, 1)}});  // incompressible: stored raw
  }
  const std::string manifest_path = dir + "/" + step_dir_name(1) + "/" + kManifestName;
  Manifest m = read_manifest(dir + "/" + step_dir_name(1));
  ASSERT_EQ(m.info.entries.size(), 1u);
  TensorEntry& e = m.info.entries[0];
  ASSERT_EQ(e.encoding, "raw");
  e.shape = {int64_t{1} << 40};
  e.nbytes = e.stored_bytes = uint64_t{4} << 40;
  const std::vector<uint8_t> text = manifest_encode(m);
  stdfs::remove(manifest_path);
  std::ofstream(manifest_path, std::ios::binary).write(reinterpret_cast<const char*>(text.data()), text.size());
  auto ck = Checkpointer::open(dir);
  EXPECT_EQ(test::kind_of([&] { ck->restore(1); }), ErrorKind::kInvalidInput);
  VerifyReport report = ck->verify(1);
  ASSERT_FALSE(report.problems.empty());
  bool truncated = false;
  for (const auto& p : report.problems) truncated |= p.find("truncated") != std::string::npos;
  EXPECT_TRUE(truncated) << report.problems[0];
}

}  // namespace
}  // namespace tk::ckpt
