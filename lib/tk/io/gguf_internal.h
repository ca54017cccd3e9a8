// What the GGUF reader and writer share: the parsed header.
#pragma once

#include <cstdint>
#include <vector>

#include "tk/io/gguf.h"
#include "tk/io/stream.h"

namespace tk::io::detail {

struct GgufHeader {
  uint32_t version = 3;
  uint32_t alignment = kGgufDefaultAlignment;
  std::vector<GgufKv> kvs;
  std::vector<GgufTensor> tensors;  // in storage (offset) order
  uint64_t data_start = 0;          // file offset of the data section
  uint64_t data_end = 0;            // end of the last tensor, in the data section
};

// Parse and validate the header from `in` at the start of the file, consuming it up to
// the end of the tensor records (not the padding). `file_size` bounds every claim when
// known. Does not check the tensors against the file's length; gguf_check_extent does.
GgufHeader gguf_parse_header(InputStream& in, std::optional<uint64_t> file_size);

// Check that the tensors lie inside `data_bytes` of data section, and that no more than
// the alignment's padding follows the last one. Throws kInvalidInput.
void gguf_check_extent(const GgufHeader& header, uint64_t data_bytes);

}  // namespace tk::io::detail
