// Directory descriptors: nothing below the opened directory is followed out of it.
#include "tk/io/dir_fd.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "tk/core/error.h"

namespace tk::io {
namespace {

namespace stdfs = std::filesystem;
using test::kind_of;

// A tree "d" with a victim directory "outside" beside it, which every test checks
// survives untouched.
class DirFdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stdfs::create_directories(root() + "/d/sub");
    stdfs::create_directories(root() + "/outside");
    std::ofstream(root() + "/outside/keep.txt") << "keep";
  }
  std::string root() const { return tmp_.path(); }
  bool victim_intact() const { return stdfs::exists(root() + "/outside/keep.txt"); }

  test::TempDir tmp_{"dir_fd"};
};

TEST_F(DirFdTest, RemoveTreeRemovesALinkNotItsTarget) {
  stdfs::create_directory_symlink("../../outside", root() + "/d/sub/link");
  DirFd d = DirFd::open(root() + "/d");
  EXPECT_TRUE(d.remove_tree("sub"));
  EXPECT_FALSE(stdfs::exists(root() + "/d/sub"));
  EXPECT_TRUE(victim_intact());
  EXPECT_FALSE(d.remove_tree("sub"));  // gone: false, no error
}

TEST_F(DirFdTest, LinksAndWrongTypesAreRefusedNamingThePath) {
  stdfs::create_directory_symlink("../outside", root() + "/d/linkdir");
  stdfs::create_symlink("../outside/keep.txt", root() + "/d/linkfile");
  DirFd d = DirFd::open(root() + "/d");
  try {
    d.open_dir("linkdir");
    ADD_FAILURE() << "followed a symlink";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()), "expected a directory, found a symbolic link");
    EXPECT_EQ(e.where(), root() + "/d/linkdir");
  }
  EXPECT_EQ(kind_of([&] { d.open_file("linkfile", O_RDONLY); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { d.open_file("linkfile", O_RDWR | O_CREAT); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { d.open_file("sub", O_RDONLY); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { d.file_size("linkfile"); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { d.create_file("linkfile"); }), ErrorKind::kIo);  // O_EXCL: exists
  EXPECT_EQ(d.type("linkfile"), EntryType::kSymlink);
  EXPECT_TRUE(d.unlink("linkfile"));  // the link itself
  EXPECT_EQ(std::ifstream(root() + "/outside/keep.txt").get(), 'k');
}

TEST_F(DirFdTest, NamesAreSingleComponents) {
  DirFd d = DirFd::open(root() + "/d");
  for (const char* name : {"..", ".", "", "../outside", "sub/../../outside"}) {
    EXPECT_EQ(kind_of([&] { d.remove_tree(name); }), ErrorKind::kInvalidInput) << name;
    EXPECT_EQ(kind_of([&] { d.create_file(name); }), ErrorKind::kInvalidInput) << name;
  }
  EXPECT_TRUE(victim_intact());
}

TEST_F(DirFdTest, AFifoDoesNotBlockAndIsRefused) {
  ASSERT_EQ(::mkfifo((root() + "/d/lock").c_str(), 0644), 0);
  DirFd d = DirFd::open(root() + "/d");
  EXPECT_EQ(kind_of([&] { d.open_lock_file("lock", true); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { d.open_file("lock", O_RDONLY); }), ErrorKind::kInvalidInput);
}

TEST_F(DirFdTest, LockFileWithASecondLinkIsRefused) {
  DirFd d = DirFd::open(root() + "/d");
  Fd fresh = d.open_lock_file("lock", true);
  ASSERT_TRUE(fresh.valid());
  ASSERT_EQ(::link((root() + "/outside/keep.txt").c_str(), (root() + "/d/lock2").c_str()), 0);
  EXPECT_EQ(kind_of([&] { d.open_lock_file("lock2", true); }), ErrorKind::kInvalidInput);
  Fd missing = d.open_lock_file("none", false);
  EXPECT_FALSE(missing.valid());
  EXPECT_EQ(missing.error(), ENOENT);
}

TEST_F(DirFdTest, RenameAcrossDirectoriesAndMakeDir) {
  DirFd d = DirFd::open(root() + "/d");
  DirFd made = d.make_dir("made");
  EXPECT_EQ(d.make_dir("made").path(), made.path());  // existing is fine
  Fd f = made.create_file("a");
  ASSERT_TRUE(f.valid());
  f.close();
  DirFd sub = *d.open_dir("sub");
  made.rename("a", sub, "b");
  EXPECT_EQ(sub.list(), std::vector<std::string>{"b"});
  EXPECT_EQ(kind_of([] { DirFd::open("/nonexistent-tk-dir"); }), ErrorKind::kIo);
}

}  // namespace
}  // namespace tk::io
