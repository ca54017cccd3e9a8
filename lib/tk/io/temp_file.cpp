#include "tk/io/temp_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/stream.h"

namespace tk::io {

TempFile::~TempFile() {
  remove_name();
  if (fd_ >= 0) ::close(fd_);
}

std::string TempFile::directory() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

bool TempFile::create(const std::string& prefix) {
  path_ = directory() + "/" + prefix + "-XXXXXX";
  fd_ = ::mkstemp(path_.data());
  if (fd_ < 0) path_.clear();
  return fd_ >= 0;
}

void TempFile::remove_name() {
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

void TempFile::write_at(uint64_t offset, std::span<const uint8_t> bytes, const char* what,
                        const std::string& where) const {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t w = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw errno_error(what, where, errno);
    done += static_cast<size_t>(w);
  }
}

void TempFile::read_at(uint64_t offset, std::span<uint8_t> out, const char* what, const std::string& where) const {
  for (size_t done = 0; done < out.size();) {
    const ssize_t r = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw errno_error(what, where, errno);
    if (r == 0) throw io_error(std::string(what) + ": the temporary file is shorter than written", where);
    done += static_cast<size_t>(r);
  }
}

uint64_t copy_to_temp(InputStream& in, const TempFile& file) {
  std::vector<uint8_t> chunk(size_t{1} << 20);
  uint64_t total = 0;
  for (size_t got; (got = in.read(chunk.data(), chunk.size())) > 0; total += got) {
    file.write_at(total, {chunk.data(), got}, "cannot buffer the stream in a temporary file", in.name());
  }
  return total;
}

}  // namespace tk::io
