// The shard writer's file stream: O_DIRECT in page-aligned blocks where the file
// system takes it, plain writes where it does not. Either way the file holds exactly
// the bytes appended, whatever their sizes and alignment.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>

#include "test_util.h"
#include "tk/ckpt/checkpoint.h"
#include "tk/ckpt/fileops.h"
#include "tk/core/error.h"

namespace tk::ckpt {
namespace {

namespace stdfs = std::filesystem;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

// Appends `total` bytes in pieces of the given sizes (cycled), from a page-aligned
// source `skew` bytes in; returns what was appended.
std::vector<uint8_t> write_in_pieces(const std::string& dir, const std::string& name, size_t total,
                                     const std::vector<size_t>& pieces, bool* direct, size_t skew = 1) {
  const std::vector<uint8_t> want = random_bytes(total, static_cast<uint32_t>(total));
  const size_t room = (total + skew + fs::kDirectAlignment) / fs::kDirectAlignment * fs::kDirectAlignment;
  std::unique_ptr<uint8_t, void (*)(void*)> source(static_cast<uint8_t*>(std::aligned_alloc(fs::kDirectAlignment, room)),
                                                   &std::free);
  std::copy(want.begin(), want.end(), source.get() + skew);
  io::DirFd d = io::DirFd::open(dir);
  fs::File file = fs::create_file(d, name);
  fs::StreamWriter out(file);
  *direct = out.direct();
  size_t done = 0;
  for (size_t k = 0; done < total; ++k) {
    const size_t n = std::min(pieces[k % pieces.size()], total - done);
    out.append({source.get() + skew + done, n});
    done += n;
  }
  out.finish();
  return want;
}

void expect_round_trip(const std::string& dir) {
  SCOPED_TRACE(std::getenv("TK_CKPT_DIRECT") ? "plain writes" : "O_DIRECT where taken");
  const size_t mib = size_t(1) << 20;
  const std::vector<size_t> sizes = {0, 1, 4095, 4096, 4097, 8 * mib, 8 * mib + 4096 + 5, 20 * mib + 3, 70 * mib};
  // Unaligned (everything through the block), and aligned: whole pages straight from
  // memory, the odd pieces through the block, and back.
  for (size_t skew : {1, 0}) {
    for (size_t total : sizes) {
      SCOPED_TRACE("total " + std::to_string(total) + ", skew " + std::to_string(skew));
      bool direct = false;
      const std::string name = "f" + std::to_string(total) + "-" + std::to_string(skew);
      std::vector<uint8_t> want =
          write_in_pieces(dir, name, total, {4096, 3 * mib, 1, 4095, mib + 7, 9 * mib - 7}, &direct, skew);
      EXPECT_EQ(stdfs::file_size(dir + "/" + name), total);
      EXPECT_EQ(fs::read_file(dir + "/" + name, total + 1), want);
    }
  }
}

TEST(StreamWriter, TheFileHoldsExactlyTheBytesAppended) {
  test::TempDir tmp("ckpt_stream");
  expect_round_trip(tmp.path());
}

// Where O_DIRECT is refused, or turned off, the plain way must give the same file.
TEST(StreamWriter, PlainWritesGiveTheSameFile) {
  test::TempDir tmp("ckpt_stream");
  ::setenv("TK_CKPT_DIRECT", "0", 1);
  bool direct = true;
  write_in_pieces(tmp.path(), "probe", 1, {1}, &direct);
  EXPECT_FALSE(direct);
  expect_round_trip(tmp.path());
  ::unsetenv("TK_CKPT_DIRECT");
}

TEST(StreamWriter, AFailedBlockWriteIsAnIoError) {
  test::TempDir tmp("ckpt_stream");
  for (int nth : {1, 2}) {
    SCOPED_TRACE("write " + std::to_string(nth));
    int seen = 0;
    set_fault_hook([&](FaultPoint p, const std::string&) { return p == FaultPoint::kWrite && ++seen == nth ? EIO : 0; });
    bool direct = false;
    EXPECT_EQ(test::kind_of([&] {
                write_in_pieces(tmp.path(), std::string("f").append(std::to_string(nth)), 12 << 20, {5 << 20}, &direct);
              }),
              ErrorKind::kIo);
    set_fault_hook(nullptr);
  }
}

}  // namespace
}  // namespace tk::ckpt
