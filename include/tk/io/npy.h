// NumPy .npy files (format versions 1.0, 2.0 and 3.0): one tensor per file.
#pragma once

#include <memory>
#include <string>

#include "tk/io/npy_header.h"
#include "tk/io/tensor_file.h"

namespace tk::io {

// Read a .npy file from `in`; the tensor is named `tensor_name` (the file's stem).
std::unique_ptr<TensorReader> npy_open(std::unique_ptr<InputStream> in, const std::string& tensor_name,
                                       const ReadOptions& options);

// Where the array of a .npy image lies, from the image's first bytes.
struct NpyLayout {
  NpyHeader header;
  uint64_t data_offset = 0;  // from the start of the image
  uint64_t data_bytes = 0;
};
// Parse the prefix and header at the start of `head`. Throws kInvalidInput ("truncated
// .npy header" when `head` ends inside it).
NpyLayout npy_parse_layout(std::span<const uint8_t> head);

// The stored array bytes `raw` as a C-order little-endian tensor: a view when they already
// are one and aligned, else a converted copy. `writable`: `raw` is the caller's own and
// may be byte-swapped in place.
Tensor npy_decode(const NpyHeader& header, Buffer raw, bool writable);

// Write a .npy file holding exactly one tensor (begin() with more throws kUsage).
std::unique_ptr<TensorWriter> npy_writer(std::unique_ptr<OutputStream> out);

}  // namespace tk::io
