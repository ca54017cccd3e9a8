// Quantized parts set aside until the writer wants them: appended to an unlinked
// temporary file in $TMPDIR, so that a run over a model larger than memory holds only
// the tensor in hand, and nothing is left behind whatever happens.
#pragma once

#include <cstdint>
#include <string>

#include "tk/core/tensor.h"

namespace tk::tquant {

class PartSpill {
 public:
  PartSpill() = default;
  PartSpill(const PartSpill&) = delete;
  PartSpill& operator=(const PartSpill&) = delete;
  ~PartSpill();
  // Append the tensor's bytes (the file is created on first use); returns their offset.
  // Throws kIo naming the temporary file's directory.
  uint64_t append(const Tensor& t);
  // The tensor of `dtype` and `shape` stored at `offset`.
  Tensor read(uint64_t offset, DType dtype, const Shape& shape) const;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace tk::tquant
