// NumPy .npy files (format versions 1.0, 2.0 and 3.0): one tensor per file.
#pragma once

#include <memory>
#include <string>

#include "tk/io/tensor_file.h"

namespace tk::io {

// Read a .npy file from `in`; the tensor is named `tensor_name` (the file's stem).
std::unique_ptr<TensorReader> npy_open(std::unique_ptr<InputStream> in, const std::string& tensor_name,
                                       const ReadOptions& options);

// Write a .npy file holding exactly one tensor (begin() with more throws kUsage).
std::unique_ptr<TensorWriter> npy_writer(std::unique_ptr<OutputStream> out);

}  // namespace tk::io
