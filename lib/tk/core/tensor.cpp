#include "tk/core/tensor.h"

#include <cstring>

#include "tk/core/error.h"

namespace tk {

Tensor::Tensor(DType dtype, Shape shape, Buffer data)
    : dtype_(dtype), shape_(std::move(shape)), data_(std::move(data)) {
  numel_ = shape_numel(shape_);
  uint64_t want = dtype_storage_bytes(dtype_, numel_);
  if (want != data_.size())
    throw invalid_input("tensor of " + std::string(dtype_name(dtype_)) + " " +
                        shape_to_string(shape_) + " needs " + std::to_string(want) +
                        " bytes, got " + std::to_string(data_.size()));
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  uint64_t bytes = dtype_storage_bytes(dtype, shape_numel(shape));
  return Tensor(dtype, std::move(shape), Buffer::allocate(bytes));
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  uint64_t bytes = dtype_storage_bytes(dtype, shape_numel(shape));
  return Tensor(dtype, std::move(shape), Buffer::zeros(bytes));
}

Tensor Tensor::clone() const {
  Buffer copy = Buffer::allocate(data_.size());
  if (data_.size()) std::memcpy(copy.mutable_data(), data_.data(), data_.size());
  return Tensor(dtype_, shape_, std::move(copy));
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel_)
    throw invalid_input("cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  return Tensor(dtype_, std::move(shape), data_);
}

}  // namespace tk
