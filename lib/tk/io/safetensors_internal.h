// Helpers shared by the safetensors header parser, reader and writer, and by format
// detection (not a public interface: include only from lib/tk/io and tests).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/io/tensor_file.h"

namespace tk::io::detail {

// Offset of the first byte that breaks strict UTF-8 (no overlongs, no surrogates,
// nothing above U+10FFFF), or npos-like `bytes.size()` when all of it is valid.
size_t utf8_invalid_at(std::span<const uint8_t> bytes);
inline bool utf8_valid(std::string_view s) {
  return utf8_invalid_at({reinterpret_cast<const uint8_t*>(s.data()), s.size()}) == s.size();
}

// The start of a safetensors file: the 8-byte little-endian header length and whether a
// JSON object follows it (after whitespace, which the reference reader allows). Format
// detection and damage reports read it alike; nullopt for fewer than 9 bytes.
struct SafetensorsPrefix {
  uint64_t header_bytes = 0;
  bool json_follows = false;
};
std::optional<SafetensorsPrefix> safetensors_prefix(std::span<const uint8_t> head);

// Read the `n` bytes of tensor `name` that a header claims from a stream whose length is
// not known (a pipe): allocated at once up to kDirectAllocLimit (untouched pages cost
// address space, not memory), beyond it in a buffer that grows by doubling as the bytes
// arrive. Memory follows the bytes sent, never the claim alone. Throws kInvalidInput
// "truncated data (G of N bytes present)" when the stream ends first.
inline constexpr uint64_t kDirectAllocLimit = uint64_t{1} << 30;
Buffer read_claimed_bytes(InputStream& in, uint64_t n, const std::string& name);

// "tensor 'name'" for error locations, very long names shortened. The bytes are kept as
// they are: the tools escape every message they print (src/cli/display_text.h).
std::string tensor_where(std::string_view name);

// One tensor entry of a header, before the offsets are checked against each other.
struct HeaderEntry {
  TensorInfo info;
  uint64_t begin = 0, end = 0;
};

// The header's tensor table built straight from parse events, for the usual header:
// every entry an object with a known dtype, a shape of unsigned integers and two data
// offsets, no duplicate name or field, metadata null or an object of strings. Returns
// false, having filled nothing reliable, for any other header that parses (the caller
// then parses it member by member, which names the problem); throws the JSON policy's
// error for one that does not.
bool header_table_from_events(std::string_view text, std::vector<HeaderEntry>& entries, Metadata& metadata);
// The same for any header, member by member through a DOM of one entry at a time:
// throws kInvalidInput naming the first problem (by key order, as the reference).
void header_table_from_members(std::string_view text, std::vector<HeaderEntry>& entries, Metadata& metadata);

// Rank of a dtype in the reference implementation's Dtype enum (BOOL lowest, U64
// highest); its writer stores tensors by this rank, descending, then by name.
int safetensors_dtype_rank(DType dtype);

}  // namespace tk::io::detail
