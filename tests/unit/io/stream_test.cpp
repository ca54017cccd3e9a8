#include "tk/io/stream.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "tk/core/error.h"
#include "tk/io/tensor_file.h"

namespace tk::io {
namespace {

std::string scratch_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("tk-stream-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

int count_temp_files(const std::string& dir) {
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) ++n;
  return n;
}

TEST(InputStream, PeekDoesNotConsume) {
  std::string d = scratch_dir();
  auto in = InputStream::open(write_file(d + "/a.bin", "hello world"));
  EXPECT_TRUE(in->is_regular_file());
  ASSERT_EQ(in->size().value(), 11u);
  auto p = in->peek(5);
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(std::memcmp(p.data(), "hello", 5), 0);
  char buf[11];
  in->read_exact(buf, 11, "data");
  EXPECT_EQ(std::string(buf, 11), "hello world");
  EXPECT_EQ(in->position(), 11u);
  EXPECT_EQ(in->peek(4).size(), 0u);
  EXPECT_EQ(in->read(buf, 4), 0u);
}

TEST(InputStream, AMappedFileGoesOnWhereTheReadsStopped) {
  const std::string path = write_file(scratch_dir() + "/mapped.bin", "0123456789abcdef");
  auto in = InputStream::open(path);
  char buf[4] = {};
  in->read_exact(buf, 3, "head");  // the stream has read ahead into its buffer
  ASSERT_TRUE(in->map());
  EXPECT_EQ(in->position(), 3u);
  Buffer view = in->read_view(5, "body");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(view.data()), view.size()), "34567");
  EXPECT_FALSE(view.writable()) << "a view of the mapping, not a copy";
  in->skip(2, "gap");
  in->read_exact(buf, 3, "tail");
  EXPECT_EQ(std::string(buf, 3), "abc");
  EXPECT_EQ(test::kind_of([&] { in->read_view(4, "end"); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(in->read_view(3, "end").size(), 3u);
  auto pipe_like = InputStream::from_buffer(Buffer::borrow_const("xyz", 3), "mem");
  EXPECT_TRUE(pipe_like->map()) << "memory is served as a mapping already";
}

TEST(InputStream, ReadExactPastEndIsTruncation) {
  auto in = InputStream::from_buffer(Buffer::borrow_const("abc", 3), "mem");
  char buf[8];
  try {
    in->read_exact(buf, 4, "header");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_STREQ(e.what(), "truncated header");
    EXPECT_EQ(e.where(), "mem");
  }
}

TEST(InputStream, SkipAndReadAll) {
  std::string d = scratch_dir();
  std::string content(3 << 20, 'x');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
  auto in = InputStream::open(write_file(d + "/big.bin", content));
  in->skip(1000, "data");
  EXPECT_EQ(in->peek(1)[0], static_cast<uint8_t>(content[1000]));
  in->skip(2 << 20, "data");
  Buffer rest = in->read_all();
  ASSERT_EQ(rest.size(), content.size() - 1000 - (2 << 20));
  EXPECT_EQ(std::memcmp(rest.data(), content.data() + 1000 + (2 << 20), rest.size()), 0);
  EXPECT_THROW(in->skip(1, "data"), Error);
}

TEST(InputStream, MissingFileIsIoError) {
  try {
    InputStream::open("/nonexistent/x.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_EQ(std::string(e.what()), "failed to open for reading: No such file or directory");
  }
}

TEST(InputStream, DirectoryIsUsageError) {
  try {
    InputStream::open(scratch_dir());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
}

// Runs `fn` with the working directory at `dir` and the standard streams on pipes that
// hold or take other bytes, so that a path "-" read or written as a standard stream
// shows as a wrong result, never a wait on a terminal. Returns what reached stdout.
template <typename Fn> std::string with_std_streams_elsewhere(const std::string& dir, Fn&& fn) {
  const auto cwd = std::filesystem::current_path();
  int in_pipe[2], out_pipe[2];
  EXPECT_EQ(::pipe(in_pipe), 0);
  EXPECT_EQ(::pipe(out_pipe), 0);
  EXPECT_EQ(::write(in_pipe[1], "standard input", 14), 14);
  ::close(in_pipe[1]);
  const int saved_in = ::dup(STDIN_FILENO), saved_out = ::dup(STDOUT_FILENO);
  ::dup2(in_pipe[0], STDIN_FILENO);
  ::dup2(out_pipe[1], STDOUT_FILENO);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  std::filesystem::current_path(dir);
  try {
    fn();
  } catch (...) {
    ADD_FAILURE() << "unexpected exception";
  }
  std::filesystem::current_path(cwd);
  ::dup2(saved_in, STDIN_FILENO);
  ::dup2(saved_out, STDOUT_FILENO);
  ::close(saved_in);
  ::close(saved_out);
  std::string written;
  char buf[256];
  for (ssize_t n; (n = ::read(out_pipe[0], buf, sizeof buf)) > 0;) written.append(buf, static_cast<size_t>(n));
  ::close(out_pipe[0]);
  return written;
}

TEST(InputStream, ADashIsAFileName) {
  // "-" for stdin is the tools' convention (src/cli), not the library's: here it is
  // the file of that name in the working directory.
  tk::test::TempDir dir("tk-dash");
  write_file(dir.path() + "/-", "the file named dash");
  std::string name, content;
  bool regular = false;
  with_std_streams_elsewhere(dir.path(), [&] {
    auto in = InputStream::open("-");
    name = in->name();
    regular = in->is_regular_file();
    Buffer all = in->read_all();
    content.assign(reinterpret_cast<const char*>(all.data()), all.size());
  });
  EXPECT_EQ(content, "the file named dash");
  EXPECT_EQ(name, "-");
  EXPECT_TRUE(regular);
}

TEST(OutputStream, ADashIsAFileName) {
  tk::test::TempDir dir("tk-dash");
  bool to_stdout = true;
  const std::string reached_stdout = with_std_streams_elsewhere(dir.path(), [&] {
    auto out = OutputStream::open("-");
    to_stdout = out->is_stdout();
    out->write("into the file", 13);
    out->commit();
  });
  EXPECT_FALSE(to_stdout);
  EXPECT_EQ(reached_stdout, "");
  std::ifstream f(dir.path() + "/-", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(s, "into the file");
  EXPECT_EQ(count_temp_files(dir.path()), 0);
}

TEST(InputStream, StandardInputHasItsOwnEntryPoint) {
  tk::test::TempDir dir("tk-dash");
  std::string content;
  with_std_streams_elsewhere(dir.path(), [&] {
    auto in = InputStream::standard_input();
    EXPECT_TRUE(in->is_standard_input());
    EXPECT_FALSE(in->is_regular_file());
    EXPECT_FALSE(in->is_memory());
    EXPECT_EQ(in->name(), "<stdin>");
    EXPECT_EQ(in->path(), "");
    Buffer all = in->read_all();
    content.assign(reinterpret_cast<const char*>(all.data()), all.size());
  });
  EXPECT_EQ(content, "standard input");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/-"));
}

TEST(OutputStream, StandardOutputHasItsOwnEntryPoint) {
  tk::test::TempDir dir("tk-dash");
  const std::string reached_stdout = with_std_streams_elsewhere(dir.path(), [&] {
    auto out = OutputStream::standard_output();
    EXPECT_TRUE(out->is_stdout());
    EXPECT_EQ(out->name(), "<stdout>");
    EXPECT_FALSE(out->temp_path().has_value());
    out->write("to stdout", 9);
    out->commit();
  });
  EXPECT_EQ(reached_stdout, "to stdout");
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(OutputStream, NothingUnderTargetUntilCommit) {
  std::string d = scratch_dir();
  std::string target = d + "/out.bin";
  std::filesystem::remove(target);
  {
    auto out = OutputStream::open(target);
    out->write("abc", 3);
    ASSERT_TRUE(out->temp_path().has_value());
    EXPECT_FALSE(std::filesystem::exists(target));
    EXPECT_TRUE(std::filesystem::exists(*out->temp_path()));
    const char* pending[8];
    EXPECT_GE(pending_temp_paths(pending, 8), 1u);
    out->commit();
  }
  std::ifstream f(target, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(s, "abc");
  EXPECT_EQ(count_temp_files(d), 0);
}

TEST(OutputStream, AbandonedOutputLeavesNothing) {
  std::string d = scratch_dir();
  std::string target = d + "/abandoned.bin";
  std::filesystem::remove(target);
  {
    auto out = OutputStream::open(target);
    std::vector<uint8_t> big(3 << 20, 1);
    out->write(big);
  }
  EXPECT_FALSE(std::filesystem::exists(target));
  EXPECT_EQ(count_temp_files(d), 0);
  const char* pending[8];
  EXPECT_EQ(pending_temp_paths(pending, 8), 0u);
}

TEST(OutputStream, CommitReplacesExistingFileAtomically) {
  std::string d = scratch_dir();
  std::string target = write_file(d + "/replace.bin", "old");
  auto out = OutputStream::open(target, {.durable = true});
  out->write("new", 3);
  std::ifstream before(target);
  std::string s;
  before >> s;
  EXPECT_EQ(s, "old");
  out->commit();
  std::ifstream after(target);
  after >> s;
  EXPECT_EQ(s, "new");
}

TEST(OutputStream, DeviceTargetIsWrittenDirectly) {
  // Renaming a temporary file over /dev/null would replace the device node.
  {
    auto out = OutputStream::open("/dev/null");
    EXPECT_FALSE(out->temp_path().has_value());
    out->write("abc", 3);
    out->commit();
  }
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  if (::stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
    auto out = OutputStream::open("/dev/full");
    std::vector<uint8_t> big(2 << 20, 1);
    try {
      out->write(big);
      out->commit();
      FAIL() << "writing to /dev/full must fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kIo);
    }
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
}

TEST(OutputStream, MemorySink) {
  std::vector<uint8_t> sink;
  auto out = OutputStream::to_memory(&sink);
  out->write("xy", 2);
  EXPECT_FALSE(out->temp_path().has_value());
  out->commit();
  EXPECT_EQ(sink.size(), 2u);
  EXPECT_EQ(out->position(), 2u);
}

TEST(OutputStream, MissingDirectoryIsIoError) {
  try {
    OutputStream::open("/nonexistent-dir/x.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_EQ(std::string(e.what()), "failed to open for writing: No such file or directory");
    EXPECT_EQ(e.where(), "/nonexistent-dir/x.safetensors");
  }
}

TEST(OutputTarget, LinksAreNeverWrittenThrough) {
  test::TempDir dir("output_target");
  const std::string d = dir.path();
  write_file(d + "/file.bin", "keep");
  ASSERT_EQ(::symlink("/dev/null", (d + "/to_device").c_str()), 0);
  ASSERT_EQ(::symlink("file.bin", (d + "/to_file").c_str()), 0);
  ASSERT_EQ(::mkfifo((d + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(output_target(d + "/new.bin"), OutputTarget::kAbsent);
  EXPECT_EQ(output_target(d + "/file.bin"), OutputTarget::kRegularFile);
  EXPECT_EQ(output_target("/dev/null"), OutputTarget::kStream);
  EXPECT_EQ(output_target(d + "/fifo"), OutputTarget::kStream);
  EXPECT_EQ(output_target("/dev/stdout"), OutputTarget::kStream);
  EXPECT_EQ(output_target("/dev/fd/1"), OutputTarget::kStream);
  const std::string link_message = "the output is a symbolic link, which is not written through; remove it or name its target";
  test::expect_error_exact([&] { output_target(d + "/to_device"); }, ErrorKind::kUsage, link_message, d + "/to_device");
  test::expect_error_exact([&] { OutputStream::open(d + "/to_file"); }, ErrorKind::kUsage, link_message, d + "/to_file");
  test::expect_error_exact([&] { output_target(d); }, ErrorKind::kUsage, "is a directory", d);
  // Names a library derives (shards) must be files: devices and FIFOs are refused too.
  const OutputOptions derived{.special_files = false};
  test::expect_error_exact([&] { output_target(d + "/fifo", derived); }, ErrorKind::kUsage,
                           "the output is a FIFO, not a regular file", d + "/fifo");
  test::expect_error_exact([&] { output_target("/dev/null", derived); }, ErrorKind::kUsage,
                           "the output is a character device, not a regular file", "/dev/null");
  std::ifstream f(d + "/file.bin");
  std::string s;
  f >> s;
  EXPECT_EQ(s, "keep");
  EXPECT_EQ(count_temp_files(d), 0);
}

TEST(InputStream, PlantedFifoIsRefusedNotWaitedOn) {
  test::TempDir dir("input_fifo");
  const std::string fifo = dir.path() + "/shard.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Without a writer, a blocking open would never return.
  test::expect_error_exact([&] { InputStream::open(fifo, {.pipes = false}); }, ErrorKind::kInvalidInput,
                           "expected a regular file, found a FIFO", fifo);
  test::expect_error_exact([&] { InputStream::open("/dev/zero"); }, ErrorKind::kInvalidInput,
                           "expected a regular file or a pipe, found a character device", "/dev/zero");
}

TEST(FormatDetect, ByContent) {
  auto detect = [](std::string bytes) {
    auto in = InputStream::from_buffer(Buffer::borrow_const(bytes.data(), bytes.size()), "m");
    return detect_format(*in);
  };
  std::string st("\x02\x00\x00\x00\x00\x00\x00\x00{}", 10);
  EXPECT_EQ(detect(st), FileFormat::kSafetensors);
  std::string st_ws("\x04\x00\x00\x00\x00\x00\x00\x00  {}", 12);
  EXPECT_EQ(detect(st_ws), FileFormat::kSafetensors);
  EXPECT_EQ(detect(std::string("\x89HDF\r\n\x1a\n\0\0", 10)), FileFormat::kHdf5);
  EXPECT_EQ(detect(std::string("\x93NUMPY\x01\x00", 8)), FileFormat::kNpy);
  EXPECT_EQ(detect("  {\"weight_map\": {}}"), FileFormat::kShardIndex);
  // Out-of-bounds lengths are still safetensors, for the reader to name the problem.
  EXPECT_EQ(detect(std::string("\x00\x00\x00\x10\x00\x00\x00\x00{}", 10)), FileFormat::kSafetensors);
  EXPECT_EQ(detect(std::string("\x01\x00\x00\x00\x00\x00\x00\x00{", 9)), FileFormat::kSafetensors);
  EXPECT_EQ(detect("hello"), FileFormat::kUnknown);
  EXPECT_EQ(detect(""), FileFormat::kUnknown);
}

TEST(FormatDetect, ByExtension) {
  EXPECT_EQ(format_from_extension("a/b.SafeTensors"), FileFormat::kSafetensors);
  EXPECT_EQ(format_from_extension("x.h5"), FileFormat::kHdf5);
  EXPECT_EQ(format_from_extension("x.hdf5"), FileFormat::kHdf5);
  EXPECT_EQ(format_from_extension("x.npy"), FileFormat::kNpy);
  EXPECT_EQ(format_from_extension("model.safetensors.index.json"), FileFormat::kShardIndex);
  EXPECT_EQ(format_from_extension("-"), FileFormat::kUnknown);
  EXPECT_EQ(format_parse("H5"), FileFormat::kHdf5);
  EXPECT_EQ(format_parse("st"), FileFormat::kSafetensors);
  EXPECT_EQ(format_parse("zip"), FileFormat::kUnknown);
}

TEST(OpenReader, UnknownAndEmptyContent) {
  std::string d = scratch_dir();
  try {
    open_reader(write_file(d + "/junk.bin", "this is not a tensor file"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(e.where(), d + "/junk.bin");
  }
  try {
    open_reader(write_file(d + "/empty.bin", ""));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_STREQ(e.what(), "empty file, not a tensor file");
  }
}

}  // namespace
}  // namespace tk::io
