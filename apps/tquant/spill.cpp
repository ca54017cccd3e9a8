#include "spill.h"

#include <cerrno>

#include "tk/core/error.h"

namespace tk::tquant {

uint64_t PartSpill::append(const Tensor& t) {
  if (file_.fd() < 0) {
    if (!file_.create("tk-parts")) {
      throw errno_error("cannot create a temporary file for quantized parts", io::TempFile::directory(), errno);
    }
    file_.remove_name();
  }
  const uint64_t at = size_;
  file_.write_at(at, {t.data(), t.nbytes()}, "cannot write quantized parts to a temporary file",
                 io::TempFile::directory());
  size_ += t.nbytes();
  return at;
}

Tensor PartSpill::read(uint64_t offset, DType dtype, const Shape& shape) const {
  Tensor t = Tensor::empty(dtype, shape);
  file_.read_at(offset, {t.mutable_data(), t.nbytes()}, "cannot read quantized parts back from a temporary file",
                io::TempFile::directory());
  return t;
}

}  // namespace tk::tquant
