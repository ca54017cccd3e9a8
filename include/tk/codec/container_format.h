// The byte layout of .tkz (docs/TKZ.md), shared by the container's writer and reader.
// All integers little-endian.
//
// File header (56 bytes, then the original header, then its checksum):
//   0   3  magic "TKZ"
//   3   1  version: 1 when the footer records SHA-256, 2 when XXH3-128
//   4   1  source: 0 opaque bytes, 1 safetensors, 2 HDF5 (opaque), 3 .npy (opaque)
//   5   1  flags: bit 0 = made against a BitX base
//   6   2  reserved (0)
//   8   8  H: length of the original header (safetensors: 8 + JSON length; else 0)
//   16  32 SHA-256 of the base file (zero without a base)
//   48  8  reserved (0)
//   56  H  the original file's first H bytes, verbatim
//   56+H 8 XXH3-64 of bytes [0, 56 + H)
// Records (48-byte header + payload), in file order, then an end record:
//   0   1  kind: 1 tensor, 2 opaque bytes, 0 end of records
//   1   1  codec (TkzCodec)
//   2   2  reserved (0)
//   4   4  tensor id (position in the original header's data-offset order), or the
//          opaque record's sequence number; end record: number of records
//   8   8  decoded bytes (end record: bytes of the original file)
//   16  8  payload bytes (end record: 0)
//   24  8  XXH3-64 of the decoded bytes (lossy: of the payload)
//   32  8  XXH3-64 of the base tensor (BitX reference and delta; else 0)
//   40  8  XXH3-64 of bytes [0, 40)
// Index: per record u32 name length, name, u8 kind, u8 codec, u32 id, u64 record
//   offset, u64 decoded bytes, u64 payload bytes.
// Footer (80 bytes, the last of the file):
//   0   8  index offset      8  8  index bytes      16  8  index entries
//   24  8  original file bytes                      32  32 digest of the original file:
//          SHA-256 (version 1), or XXH3-128 canonical then 16 zero bytes (version 2)
//   64  8  XXH3-64 of the index followed by footer bytes [0, 64)
//   72  8  magic "TKZINDEX"
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tk/codec/container.h"
#include "tk/codec/file_digest.h"
#include "tk/core/endian.h"

namespace tk::codec::tkz {

// The version says which digest the footer records; both are read.
inline constexpr uint8_t kVersionSha256 = 1;
inline constexpr uint8_t kVersionXxh3 = 2;
inline constexpr size_t kFileHeaderBytes = 56;
inline constexpr size_t kRecordHeaderBytes = 48;
inline constexpr size_t kFooterBytes = 80;
inline constexpr char kFooterMagic[8] = {'T', 'K', 'Z', 'I', 'N', 'D', 'E', 'X'};
inline constexpr uint8_t kFlagBase = 1;

enum class Source : uint8_t { kOpaque = 0, kSafetensors = 1, kHdf5 = 2, kNpy = 3 };
enum class Kind : uint8_t { kEnd = 0, kTensor = 1, kOpaque = 2 };

Source source_of(io::FileFormat format);
io::FileFormat format_of(Source source);

uint64_t hash(std::span<const uint8_t> bytes);

// Whether a record's payload is a lossless frame, which checks each chunk's decoded bytes
// against its own XXH3: then the record's XXH3 of the decoded bytes says nothing more
// (version 2 leaves it 0; a reader checks it for the other codecs only).
inline bool frame_checked(TkzCodec codec) {
  return codec == TkzCodec::kLossless || codec == TkzCodec::kZstd || codec == TkzCodec::kBitxDelta;
}

struct FileHeader {
  Source source = Source::kOpaque;
  uint8_t flags = 0;
  DigestKind digest = DigestKind::kXxh3_128;  // of the original file, in the footer
  Sha256Digest base_sha256{};
  std::vector<uint8_t> original_header;  // verbatim
};

// Serialise (with its checksum).
std::vector<uint8_t> encode_file_header(const FileHeader& header);
// Read and check a file header from `in`. Throws kInvalidInput: not a container,
// unsupported version, truncated, checksum mismatch.
FileHeader read_file_header(io::InputStream& in);

struct RecordHeader {
  Kind kind = Kind::kEnd;
  TkzCodec codec = TkzCodec::kLossless;
  uint32_t id = 0;
  uint64_t decoded = 0;
  uint64_t stored = 0;
  uint64_t hash = 0;
  uint64_t base_hash = 0;
};

void encode_record_header(const RecordHeader& record, uint8_t out[kRecordHeaderBytes]);
// Parse and check 48 bytes; throws kInvalidInput on a checksum mismatch or a kind or
// codec this version does not know.
RecordHeader parse_record_header(const uint8_t in[kRecordHeaderBytes]);

struct IndexEntry {
  std::string name;
  Kind kind = Kind::kTensor;
  TkzCodec codec = TkzCodec::kLossless;
  uint32_t id = 0;
  uint64_t offset = 0, decoded = 0, stored = 0;
};

struct Footer {
  uint64_t index_offset = 0, index_bytes = 0, index_entries = 0, original_bytes = 0;
  std::array<uint8_t, 32> digest{};  // its kind is the file header's
};

// The index followed by the footer.
std::vector<uint8_t> encode_index_and_footer(const std::vector<IndexEntry>& index, const Footer& footer);
// Parse a footer (without checking the index checksum, which needs the index).
Footer parse_footer(std::span<const uint8_t> bytes);
// Parse `index` and check it and the footer against the footer's checksum.
std::vector<IndexEntry> parse_index(std::span<const uint8_t> index, std::span<const uint8_t> footer_bytes,
                                    const Footer& footer);

}  // namespace tk::codec::tkz
