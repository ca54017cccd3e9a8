// A dense tensor: dtype, row-major shape and the bytes that hold it. The bytes are a
// Buffer (owned, borrowed or memory-mapped); copying a Tensor shares them.
#pragma once

#include <cstdint>
#include <string>

#include "tk/core/buffer.h"
#include "tk/core/dtype.h"
#include "tk/core/shape.h"

namespace tk {

class Tensor {
 public:
  Tensor() = default;

  // Wrap `data`, which must hold exactly dtype_storage_bytes(dtype, numel(shape))
  // bytes. Throws kInvalidInput when the shape overflows or the size does not match.
  Tensor(DType dtype, Shape shape, Buffer data);

  // A new owned tensor with uninitialised (or zeroed) contents.
  static Tensor empty(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  uint64_t numel() const { return numel_; }
  uint64_t nbytes() const { return data_.size(); }
  const Buffer& buffer() const { return data_; }
  const uint8_t* data() const { return data_.data(); }
  uint8_t* mutable_data() { return data_.mutable_data(); }

  template <typename T> const T* data_as() const { return reinterpret_cast<const T*>(data_.data()); }
  template <typename T> T* mutable_data_as() { return reinterpret_cast<T*>(data_.mutable_data()); }

  // A tensor owning a private copy of the bytes (writable).
  Tensor clone() const;
  // Same bytes, another shape of the same element count. Throws kInvalidInput otherwise.
  Tensor reshaped(Shape shape) const;

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  uint64_t numel_ = 0;
  Buffer data_;
};

}  // namespace tk
