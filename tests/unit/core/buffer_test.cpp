#include "tk/core/buffer.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tk/core/background.h"
#include "tk/core/error.h"
#include "tk/core/mapped_files.h"

namespace tk {
namespace {

using test::kind_of;

TEST(Buffer, AllocateIsAlignedAndWritable) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000}}) {
    Buffer b = Buffer::allocate(bytes);
    EXPECT_EQ(b.size(), bytes);
    EXPECT_TRUE(b.writable());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kBufferAlignment, 0u);
    if (bytes) b.mutable_data()[bytes - 1] = 7;
  }
  EXPECT_TRUE(Buffer().empty());
  EXPECT_EQ(kind_of([] { Buffer::allocate(SIZE_MAX - 10); }), ErrorKind::kUnavailable);
}

TEST(Buffer, ZerosAndSharedStorage) {
  Buffer a = Buffer::zeros(100);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(a.data()[i], 0);
  Buffer copy = a;
  a.mutable_data()[5] = 42;
  EXPECT_EQ(copy.data()[5], 42);
}

TEST(Buffer, SliceBounds) {
  Buffer a = Buffer::zeros(10);
  a.mutable_data()[3] = 9;
  Buffer s = a.slice(3, 4);
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s.data()[0], 9);
  EXPECT_EQ(a.slice(10, 0).size(), 0u);
  EXPECT_EQ(kind_of([&] { a.slice(8, 3); }), ErrorKind::kInternal);
  EXPECT_EQ(kind_of([&] { a.slice(11, 0); }), ErrorKind::kInternal);
  EXPECT_EQ(kind_of([&] { a.slice(1, SIZE_MAX); }), ErrorKind::kInternal);
}

TEST(Buffer, BorrowConstIsReadOnly) {
  uint8_t raw[4] = {1, 2, 3, 4};
  Buffer w = Buffer::borrow(raw, 4);
  EXPECT_TRUE(w.borrowed());
  EXPECT_FALSE(Buffer::allocate(4).borrowed());
  w.mutable_data()[0] = 9;
  EXPECT_EQ(raw[0], 9);
  Buffer r = Buffer::borrow_const(raw, 4);
  EXPECT_FALSE(r.writable());
  EXPECT_EQ(r.data()[1], 2);
  EXPECT_EQ(kind_of([&] { r.mutable_data(); }), ErrorKind::kInternal);
  EXPECT_EQ(kind_of([&] { r.slice(1, 2).mutable_data(); }), ErrorKind::kInternal);
}

TEST(Buffer, WrapReleasesWithTheLastCopy) {
  bool released = false;
  auto* bytes = new uint8_t[256];
  Buffer slice;
  {
    Buffer b = Buffer::wrap(std::shared_ptr<void>(bytes, [&](void* p) {
                              delete[] static_cast<uint8_t*>(p);
                              released = true;
                            }),
                            256);
    EXPECT_EQ(b.data(), bytes);
    EXPECT_EQ(b.size(), 256u);
    EXPECT_TRUE(b.writable());
    EXPECT_TRUE(b.sole_owner());
    EXPECT_FALSE(b.borrowed());
    slice = b.slice(64, 128);
  }
  EXPECT_FALSE(released);
  slice.mutable_data()[0] = 7;
  slice = Buffer();
  EXPECT_TRUE(released);
}

TEST(Buffer, MapFile) {
  char path[] = "/tmp/tk_buffer_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char text[] = "tensorkit";
  ASSERT_EQ(write(fd, text, 9), 9);
  close(fd);
  {
    Buffer m = Buffer::map_file(path);
    EXPECT_EQ(m.size(), 9u);
    EXPECT_EQ(std::memcmp(m.data(), text, 9), 0);
    EXPECT_FALSE(m.writable());
    EXPECT_EQ(kind_of([&] { m.mutable_data(); }), ErrorKind::kInternal);
    Buffer tail = m.slice(6, 3);
    m = Buffer();
    EXPECT_EQ(std::memcmp(tail.data(), "kit", 3), 0);  // the slice keeps the mapping alive
  }
  std::remove(path);
  EXPECT_EQ(kind_of([&] { Buffer::map_file(path); }), ErrorKind::kIo);
}

// A mapped file cut short while it is read: the lost pages read as zeros, the process
// lives, and check_mapped_files() names the file until it has been reported.
TEST(Buffer, MappedFileTruncatedWhileRead) {
  char path[] = "/tmp/tk_buffer_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> bytes(size_t{1} << 20, 0xab);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  EXPECT_NO_THROW(check_mapped_files());
  {
    Buffer m = Buffer::map_file(path);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    EXPECT_EQ(m.data()[100], 0xab);                  // the page still in the file
    EXPECT_EQ(m.data()[m.size() - 1], 0);            // SIGBUS without the handler
    EXPECT_EQ(m.data()[m.size() / 2], 0);
    std::string what;
    try {
      check_mapped_files();
    } catch (const Error& e) {
      what = std::string(e.what()) + " " + e.where();
    }
    EXPECT_NE(what.find("truncated while it was being read"), std::string::npos) << what;
    EXPECT_NE(what.find(path), std::string::npos) << what;
  }
  // Released after the shrink: reported once more, then forgotten.
  EXPECT_EQ(kind_of([] { check_mapped_files(); }), ErrorKind::kIo);
  EXPECT_NO_THROW(check_mapped_files());
  close(fd);
  std::remove(path);
}

// A mapping that shrank without a page fault (only the kernel read it) is told by its size
// once something has failed, not before.
TEST(Buffer, MappedFileShorterAfterFailure) {
  char path[] = "/tmp/tk_buffer_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> bytes(size_t{1} << 16, 1);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  Buffer m = Buffer::map_file(path);
  ASSERT_EQ(ftruncate(fd, 10), 0);
  EXPECT_NO_THROW(check_mapped_files());
  EXPECT_EQ(kind_of([] { check_mapped_files(/*after_failure=*/true); }), ErrorKind::kIo);
  EXPECT_EQ(errno_error("write failed", "out", EFAULT).where(), path);  // the input, not the output
  m = Buffer();
  EXPECT_EQ(kind_of([] { check_mapped_files(/*after_failure=*/true); }), ErrorKind::kIo);
  EXPECT_NO_THROW(check_mapped_files(/*after_failure=*/true));
  close(fd);
  std::remove(path);
}

// A FIFO planted where a reader maps a file it checked before: refused at once, never
// waited on for a writer.
TEST(Buffer, MapFileRefusesAFifoWithoutBlocking) {
  char dir[] = "/tmp/tk_buffer_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/f";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(kind_of([&] { Buffer::map_file(fifo); }), ErrorKind::kInvalidInput);
  std::remove(fifo.c_str());
  rmdir(dir);
}

TEST(Buffer, MapEmptyFile) {
  char path[] = "/tmp/tk_buffer_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  Buffer m = Buffer::map_file(path);
  EXPECT_TRUE(m.empty());
  std::remove(path);
}

TEST(BufferPool, ReusesOnlyWhatNobodyHolds) {
  BufferPool pool(5000);  // bytes
  Buffer a = pool.take(1000);
  const uint8_t* first = a.data();
  Buffer held = pool.take(1000);
  EXPECT_NE(held.data(), first);  // a is still held
  a = Buffer();
  Buffer again = pool.take(800);
  EXPECT_EQ(again.data(), first);  // a's memory, now free
  EXPECT_EQ(again.size(), 800u);
  EXPECT_TRUE(again.writable());
  Buffer bigger = pool.take(4000);  // no free buffer that large: a fresh one, not kept
  again = Buffer();
  bigger = Buffer();
  held = Buffer();
  Buffer next = pool.take(4000);  // kept in place of a free one that is too small
  Buffer small = pool.take(10);
  EXPECT_NE(next.data(), small.data());
}

TEST(BackgroundQueue, RunsInOrderAndRethrowsTheFirstFailure) {
  std::vector<uint8_t> seen;
  {
    BackgroundQueue q([&](const Buffer& b) { seen.push_back(b.data()[0]); }, 2);
    for (uint8_t i = 0; i < 100; ++i) {
      Buffer b = Buffer::allocate(1);
      b.mutable_data()[0] = i;
      q.push(b);
    }
    q.finish();
  }
  ASSERT_EQ(seen.size(), 100u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);

  BackgroundQueue failing([](const Buffer& b) {
    if (b.data()[0] == 3) throw io_error("disk full");
  }, 1);
  ErrorKind kind = kind_of([&] {
    for (uint8_t i = 0; i < 100; ++i) {
      Buffer piece = Buffer::allocate(1);
      piece.mutable_data()[0] = i;
      failing.push(piece);
    }
    failing.finish();
  });
  EXPECT_EQ(kind, ErrorKind::kIo);
}

TEST(BackgroundQueue, DestroyedUnfinishedDropsWhatWaits) {
  std::atomic<int> done{0};
  {
    BackgroundQueue q([&](const Buffer&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ++done;
    }, 1 << 20);
    for (int i = 0; i < 50; ++i) q.push(Buffer::allocate(1));
  }
  EXPECT_LT(done.load(), 50);
}

}  // namespace
}  // namespace tk
