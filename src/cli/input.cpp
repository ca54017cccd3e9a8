#include "cli/input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/stream.h"

namespace tk::cli {

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// A reader of a spooled copy whose errors name the original stream.
class SpooledReader final : public io::TensorReader {
 public:
  SpooledReader(std::unique_ptr<io::TensorReader> inner, std::string spool, std::string name)
      : inner_(std::move(inner)), spool_(std::move(spool)), name_(std::move(name)) {
    infos_ = inner_->tensors();
    metadata_ = inner_->metadata();
    skipped_ = inner_->skipped();
  }
  io::FileFormat format() const override { return inner_->format(); }
  bool random_access() const override { return true; }
  Tensor read(size_t index) override {
    return renamed([&] { return inner_->read(index); });
  }
  void release(size_t index) override { inner_->release(index); }
  void read_pieces(size_t index, size_t piece_bytes, const PieceSink& sink) override {
    renamed([&] {
      inner_->read_pieces(index, piece_bytes, sink);
      return 0;
    });
  }

 private:
  template <typename Fn> auto renamed(Fn&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const Error& e) {
      throw Error(e.kind(), replace_all(e.message(), spool_, name_), replace_all(e.where(), spool_, name_));
    }
  }
  std::unique_ptr<io::TensorReader> inner_;
  std::string spool_, name_;
};

// Copy `in` to a new temporary file; returns its path.
std::string spool(io::InputStream& in) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/tk-spool-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw io_error(std::string("cannot create a temporary file: ") + std::strerror(errno), path);
  std::vector<uint8_t> block(size_t{1} << 20);
  try {
    for (size_t n; (n = in.read(block.data(), block.size())) > 0;) {
      for (size_t done = 0; done < n;) {
        const ssize_t w = ::write(fd, block.data() + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) throw io_error(std::string("cannot write a temporary copy: ") + std::strerror(errno), in.name());
        done += static_cast<size_t>(w);
      }
    }
  } catch (...) {
    ::close(fd);
    ::unlink(path.c_str());
    throw;
  }
  ::close(fd);
  return path;
}

}  // namespace

void warn_skipped(const Tool& tool, const io::TensorReader& reader, const std::string& path) {
  for (const io::SkippedObject& s : reader.skipped())
    tool.warning("skipped '" + s.name + "': " + s.reason + " (" + io::input_display_name(path) + ")");
}

std::unique_ptr<io::TensorReader> open_reader(const Tool& tool, const std::string& path,
                                              const io::ReadOptions& options) {
  auto reader = io::open_reader(path, options);
  warn_skipped(tool, *reader, path);
  return reader;
}

std::unique_ptr<io::TensorReader> open_seekable_reader(const Tool& tool, const std::string& path) {
  struct stat st{};
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
    return open_reader(tool, path);
  }
  auto in = io::InputStream::open(path);
  const std::string name = in->name();
  const std::string copy = spool(*in);
  std::unique_ptr<io::TensorReader> inner;
  try {
    inner = io::open_reader(copy);
  } catch (const Error& e) {
    ::unlink(copy.c_str());
    throw Error(e.kind(), replace_all(e.message(), copy, name), replace_all(e.where(), copy, name));
  }
  ::unlink(copy.c_str());
  auto reader = std::make_unique<SpooledReader>(std::move(inner), copy, name);
  warn_skipped(tool, *reader, path);
  return reader;
}

}  // namespace tk::cli
