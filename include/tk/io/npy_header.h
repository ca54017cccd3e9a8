// The .npy header: the magic/version/length prefix and the Python-literal dict
// {'descr': ..., 'fortran_order': ..., 'shape': (...)} that describes the one array.
// Parsing is strict (a small tokenizer, not an evaluator) and bounded; formatting
// reproduces np.save byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/core/shape.h"

namespace tk::io {

inline constexpr uint8_t kNpyMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// Largest header (the dict text) accepted from a 2.0/3.0 file. Version 1.0 is limited
// to 65535 by its u16 length; a header we could ever need is a few kilobytes.
inline constexpr uint64_t kNpyMaxHeader = 1 << 20;
// NumPy's own limit on the number of dimensions (NPY_MAXDIMS in NumPy 2).
inline constexpr size_t kNpyMaxRank = 64;

// The fixed-size prefix: magic, version, header length.
struct NpyPrefix {
  int major = 1;
  int minor = 0;
  size_t prefix_bytes = 10;  // 10 for version 1.0, 12 for 2.0 and 3.0
  uint64_t header_bytes = 0; // length of the dict text that follows, padding included
};

// What the header dict says.
struct NpyHeader {
  DType dtype = DType::kF32;
  bool big_endian = false;     // stored big-endian ('>'): swap each element on read
  bool fortran_order = false;  // stored column-major: transpose on read
  Shape shape;
};

// Bytes in the prefix of a file whose first 8 bytes (magic and version) are `head`:
// 10 or 12. Throws kInvalidInput for a bad magic or an unsupported version.
size_t npy_prefix_size(std::span<const uint8_t> head);
// Decode the full prefix (npy_prefix_size(head) bytes). Throws kInvalidInput for a bad
// magic, an unsupported version or a header length beyond kNpyMaxHeader.
NpyPrefix npy_parse_prefix(std::span<const uint8_t> prefix);

// Parse the dict text. `utf8` is set for version 3.0 (the text is UTF-8 rather than
// latin-1; it matters only inside strings, which must be ASCII to be understood).
// Throws kInvalidInput "malformed .npy header: ..." for syntax errors, missing,
// unknown or duplicate keys and bad shapes, and "unsupported .npy dtype '...'" for a
// descr that is not one of the supported scalar types.
NpyHeader npy_parse_header(std::string_view text, bool utf8);

// The NumPy descr of a dtype in little-endian form ('<f4', '|b1', ...), or nullopt for
// dtypes NumPy has no type for (BF16, F8_*, F4, F6_*).
std::optional<std::string> npy_descr(DType dtype);

// The complete header (prefix, dict, padding, '\n') that np.save writes for a C-order
// little-endian array of `dtype` and `shape`: version 1.0, or 2.0 when it would not fit,
// padded so that the data starts at a multiple of 64. Throws kUsage for dtypes NumPy
// cannot represent.
std::vector<uint8_t> npy_make_header(DType dtype, const Shape& shape);

}  // namespace tk::io
