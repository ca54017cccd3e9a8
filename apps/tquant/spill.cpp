#include "spill.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tk/core/error.h"

namespace tk::tquant {

namespace {

std::string temp_dir() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

[[noreturn]] void fail(const char* what) {
  throw io_error(std::string(what) + ": " + std::strerror(errno), temp_dir());
}

}  // namespace

PartSpill::~PartSpill() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t PartSpill::append(const Tensor& t) {
  if (fd_ < 0) {
    std::string path = temp_dir() + "/tk-parts-XXXXXX";
    fd_ = ::mkstemp(path.data());
    if (fd_ < 0) fail("cannot create a temporary file for quantized parts");
    ::unlink(path.c_str());
  }
  const uint64_t at = size_;
  const auto* p = t.data();
  for (size_t done = 0, n = t.nbytes(); done < n;) {
    const ssize_t w = ::pwrite(fd_, p + done, n - done, static_cast<off_t>(at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail("cannot write quantized parts to a temporary file");
    done += static_cast<size_t>(w);
  }
  size_ += t.nbytes();
  return at;
}

Tensor PartSpill::read(uint64_t offset, DType dtype, const Shape& shape) const {
  Tensor t = Tensor::empty(dtype, shape);
  auto* p = t.mutable_data();
  for (size_t done = 0, n = t.nbytes(); done < n;) {
    const ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail("cannot read quantized parts back from a temporary file");
    done += static_cast<size_t>(r);
  }
  return t;
}

}  // namespace tk::tquant
