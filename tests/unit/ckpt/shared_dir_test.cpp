// Checkpoint directories written by someone else: a manifest cannot name a shard
// outside its step, and a planted .lock is never written through.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "tk/ckpt/checkpoint.h"
#include "tk/ckpt/manifest.h"
#include "tk/core/error.h"

namespace tk::ckpt {
namespace {

namespace stdfs = std::filesystem;
using test::kind_of;

std::vector<NamedTensor> small_state() {
  Tensor t = Tensor::empty(DType::kU8, {16});
  for (int i = 0; i < 16; ++i) t.mutable_data()[i] = static_cast<uint8_t>(i);
  return {{"w", t}};
}

TEST(SharedDir, AManifestShardNamingAPathOutsideTheStepIsRefused) {
  test::TempDir tmp("ckpt_shared");
  const std::string from = tmp.path() + "/from", to = tmp.path() + "/to";
  Checkpointer::open(from, {})->save(1, small_state(), {});
  // Rewrite the manifest (checksum and all, as a writer of the directory could) so
  // that its shard list names a file two levels up.
  const std::string step = from + "/step-1";
  Manifest m = read_manifest(step);
  ASSERT_EQ(m.shards.size(), 1u);
  stdfs::copy_file(step + "/" + m.shards[0].file, tmp.path() + "/escape-src");
  m.shards[0].file = "../../escape";
  std::vector<uint8_t> bytes = manifest_encode(m);
  std::ofstream(step + "/" + kManifestName, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(kind_of([&] { read_manifest(step); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { flush_steps(from, to); }), ErrorKind::kInvalidInput);
  EXPECT_FALSE(stdfs::exists(tmp.path() + "/escape"));
}

TEST(SharedDir, APlantedLockLinkIsRefusedAndItsTargetKept) {
  test::TempDir tmp("ckpt_shared");
  const std::string dir = tmp.path() + "/ck", victim = tmp.path() + "/victim.txt";
  Checkpointer::open(dir, {})->save(1, small_state(), {});
  std::ofstream(victim) << "keep";
  stdfs::remove(dir + "/.lock");
  stdfs::create_symlink(victim, dir + "/.lock");
  EXPECT_EQ(kind_of([&] { Checkpointer::open(dir, {}); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { flush_steps(dir, tmp.path() + "/tier"); }), ErrorKind::kInvalidInput);
  std::ifstream in(victim);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "keep");
}

}  // namespace
}  // namespace tk::ckpt
