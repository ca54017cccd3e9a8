// Helpers shared by the safetensors header parser, reader and writer (not a public
// interface: include only from lib/tk/io/safetensors_*.cpp and tests).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tk/core/dtype.h"

namespace tk::io::detail {

// Offset of the first byte that breaks strict UTF-8 (no overlongs, no surrogates,
// nothing above U+10FFFF), or npos-like `bytes.size()` when all of it is valid.
size_t utf8_invalid_at(std::span<const uint8_t> bytes);
inline bool utf8_valid(std::string_view s) {
  return utf8_invalid_at({reinterpret_cast<const uint8_t*>(s.data()), s.size()}) == s.size();
}

// "tensor 'name'" for error locations, very long names shortened. The bytes are kept as
// they are: the tools escape every message they print (src/cli/display_text.h).
std::string tensor_where(std::string_view name);

// Rank of a dtype in the reference implementation's Dtype enum (BOOL lowest, U64
// highest); its writer stores tensors by this rank, descending, then by name.
int safetensors_dtype_rank(DType dtype);

}  // namespace tk::io::detail
