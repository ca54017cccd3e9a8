// ZIP archives as NumPy's .npz and torch.save write them: a whole archive in memory (a
// mapping of the file) read through its central directory, and an archive written as a
// stream of stored entries. Reading is strict and bounded: every offset and length is
// checked against the file, entries are checked against their CRC-32, and only the
// stored and deflate methods of unencrypted single-disk archives (zip64 included) are
// accepted.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tk/core/buffer.h"

namespace tk::io {

class InputStream;
class OutputStream;
class TempFile;

inline constexpr uint8_t kZipLocalMagic[4] = {'P', 'K', 3, 4};
inline constexpr uint8_t kZipEmptyMagic[4] = {'P', 'K', 5, 6};  // an archive with no entries

struct ZipEntry {
  std::string name;
  bool deflated = false;     // method 8; otherwise stored (method 0)
  uint32_t crc32 = 0;
  uint64_t stored_bytes = 0;  // in the archive
  uint64_t bytes = 0;         // once inflated
  uint64_t header_offset = 0;  // of its local header, from the archive's start
  uint64_t data_offset = 0;   // of the stored bytes, from the archive's start
};

class ZipArchive {
 public:
  // Parse the central directory of the archive `file`; `name` names it in errors.
  // Throws kInvalidInput "malformed zip archive: ..." or "unsupported zip archive: ...",
  // also for entries whose local headers and data overlap each other or the central
  // directory (as CPython's zipfile refuses them): each byte of the file belongs to one
  // entry at most, so the entries cannot claim more data than the file holds.
  ZipArchive(Buffer file, std::string name);
  ZipArchive(ZipArchive&&) = delete;  // the name index points into entries_

  const std::vector<ZipEntry>& entries() const { return entries_; }
  // The entry named `name`, in constant time (a checkpoint looks up one per tensor).
  std::optional<size_t> find(std::string_view name) const;
  // The entry's bytes, checked against its CRC-32: a view of the archive for a stored
  // entry (checked on its first read only), inflated into a new buffer otherwise.
  Buffer read(size_t index) const;
  // At most the first `n` bytes of the entry, not checked against the CRC (for headers).
  Buffer read_prefix(size_t index, size_t n) const;
  // Deliver bytes [skip, skip + n) of the entry to `sink` in pieces of `piece_bytes` (the
  // last one may be shorter), inflated a piece at a time: memory is a piece, whatever
  // the entry's size. The whole entry is checked against its size and CRC-32, the CRC
  // after the last piece (a caller must not commit what it received before the return).
  void read_pieces(size_t index, uint64_t skip, uint64_t n, size_t piece_bytes,
                   const std::function<void(std::span<const uint8_t>)>& sink) const;

 private:
  void parse();
  void check_overlaps(uint64_t cd_offset) const;
  Buffer file_;
  std::string name_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string_view, size_t> by_name_;
  std::unique_ptr<std::atomic<bool>[]> checked_;  // a stored entry's CRC already matched
};

// The whole of `in` as one buffer an archive can be read from: a mapping of a regular
// file (a read when `allow_mmap` is false), the memory of a memory stream, or a pipe
// copied into `spool` and mapped.
Buffer whole_input(InputStream& in, bool allow_mmap, TempFile& spool);

// Writes an archive of stored entries to a stream, as Python's zipfile does with
// ZIP_STORED (zip64 records where sizes, offsets or the entry count need them). Each
// entry's data starts at a multiple of 64 bytes of the archive, so that a reader can
// map it in place.
class ZipWriter {
 public:
  explicit ZipWriter(OutputStream& out) : out_(out) {}
  // Add an entry holding `head` followed by `body`.
  void add(std::string_view name, std::span<const uint8_t> head, std::span<const uint8_t> body);
  // Write the central directory. The stream is committed by its owner.
  void finish();

 private:
  struct Written {
    std::string name;
    uint32_t crc32;
    uint64_t bytes, offset;
  };
  OutputStream& out_;
  std::vector<Written> written_;
};

}  // namespace tk::io
