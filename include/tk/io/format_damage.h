// Telling a damaged tensor file from a file of no known format: tcompress keeps both as
// opaque bytes (restored exactly either way), but a user who compresses a truncated
// HDF5 file or a safetensors file with a broken header should hear of it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "tk/io/tensor_file.h"

namespace tk::io {

// Bytes of the file's start that format_damage needs.
inline constexpr size_t kFormatDamageHead = 64;

struct FormatDamage {
  FileFormat looks_like = FileFormat::kUnknown;
  std::string why;  // "its header length 9223372036854775807 is impossible", ...
};

// Why a file of `size` bytes whose first bytes are `head` (up to kFormatDamageHead of
// them), detected as `detected`, looks like a tensor file that does not parse:
//  - safetensors: bytes 8.. open a JSON object but the 8-byte header length is out of
//    bounds (beyond the file, over the 100 MB limit, or under 2), whether detection took
//    it for safetensors (it does, so that readers name the length) or for nothing;
//  - HDF5: the superblock is cut short, of an unknown version, or ends the file past
//    its last byte (a truncated copy).
// nullopt when the file looks like what it was detected as (or like nothing known).
std::optional<FormatDamage> format_damage(FileFormat detected, std::span<const uint8_t> head, uint64_t size);

}  // namespace tk::io
