#include "tk/io/format_damage.h"

#include <fmt/format.h>

#include "tk/core/endian.h"
#include "tk/io/safetensors.h"
#include "tk/io/safetensors_internal.h"

namespace tk::io {

namespace {

// An HDF5 offset of `width` bytes (2, 4 or 8) at `p`.
uint64_t load_offset(const uint8_t* p, size_t width) {
  return width == 2 ? load_le<uint16_t>(p) : width == 4 ? load_le<uint32_t>(p) : load_le<uint64_t>(p);
}

std::optional<FormatDamage> safetensors_damage(std::span<const uint8_t> head, uint64_t size) {
  const std::optional<detail::SafetensorsPrefix> prefix = detail::safetensors_prefix(head);
  if (!prefix || !prefix->json_follows) return std::nullopt;
  const uint64_t n = prefix->header_bytes;
  // Detection takes such a file for safetensors (so that its reader names the length)
  // or for nothing; either way only the length can be wrong. Say how, if it is.
  const char* why = n > size - 8 ? "beyond the end of the file" : n > kSafetensorsMaxHeader ? "beyond the 100 MB limit"
                    : n < 2                                                             ? "too short for a header"
                                                                                        : nullptr;
  if (why == nullptr) return std::nullopt;
  return FormatDamage{FileFormat::kSafetensors, fmt::format("its header length {} is {}", n, why)};
}

// The superblock (HDF5 file format specification, section II.A) holds the end-of-file
// address as its third address, after a fixed part of 24 bytes (version 0), 28
// (version 1) or 12 (versions 2 and 3). Addresses are relative to the base address,
// the first of them.
std::optional<FormatDamage> hdf5_damage(std::span<const uint8_t> head, uint64_t size) {
  auto damage = [](std::string why) { return FormatDamage{FileFormat::kHdf5, std::move(why)}; };
  if (head.size() < 12) return damage("its superblock is cut short");
  const int version = head[8];
  if (version > 3) return damage(fmt::format("its superblock version {} is unknown", version));
  const size_t offset_bytes = version <= 1 ? head[13] : head[9];
  if (offset_bytes != 2 && offset_bytes != 4 && offset_bytes != 8) return std::nullopt;  // 16: not checked
  const size_t fixed = version == 0 ? 24 : version == 1 ? 28 : 12;
  const size_t eof_at = fixed + 2 * offset_bytes;
  if (head.size() < eof_at + offset_bytes || size < eof_at + offset_bytes)
    return damage("its superblock is cut short");
  const uint64_t undefined = offset_bytes == 8 ? UINT64_MAX : (uint64_t{1} << (8 * offset_bytes)) - 1;
  const uint64_t base = load_offset(head.data() + fixed, offset_bytes);
  const uint64_t eof = load_offset(head.data() + eof_at, offset_bytes);
  if (eof == undefined || base == undefined) return std::nullopt;
  if (eof > size || base > size - eof)
    return damage(fmt::format("its superblock puts the end of the file at byte {} and it has {} (truncated?)",
                              base + eof, size));
  return std::nullopt;
}

}  // namespace

std::optional<FormatDamage> format_damage(FileFormat detected, std::span<const uint8_t> head, uint64_t size) {
  head = head.first(std::min(head.size(), kFormatDamageHead));
  if (detected == FileFormat::kHdf5) return hdf5_damage(head, size);
  if ((detected == FileFormat::kUnknown || detected == FileFormat::kSafetensors) && head.size() >= 9 && size >= 8)
    return safetensors_damage(head, size);
  return std::nullopt;
}

}  // namespace tk::io
