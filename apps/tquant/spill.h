// Quantized parts set aside until the writer wants them, in an unlinked temporary file
// (io::TempFile), so that a run over a model larger than memory holds only the tensor in
// hand, and nothing is left behind whatever happens.
#pragma once

#include <cstdint>

#include "tk/core/tensor.h"
#include "tk/io/temp_file.h"

namespace tk::tquant {

class PartSpill {
 public:
  // Append the tensor's bytes (the file is created on first use); returns their offset.
  // Throws kIo naming the temporary files' directory.
  uint64_t append(const Tensor& t);
  // The tensor of `dtype` and `shape` stored at `offset`.
  Tensor read(uint64_t offset, DType dtype, const Shape& shape) const;

 private:
  io::TempFile file_;
  uint64_t size_ = 0;
};

}  // namespace tk::tquant
