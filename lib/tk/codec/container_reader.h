// The parts of reading a .tkz container that restoring, extracting and listing share:
// the container's header and what it implies, the checks of record headers and of the
// index and footer against the records, and the bounded decode of one record. Internal
// to lib/tk/codec (container_read.cpp uses it).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tk/codec/container.h"
#include "tk/codec/container_format.h"
#include "tk/io/safetensors.h"

namespace tk::codec::tkz {

// The container's header and what it implies: the original safetensors header parsed
// (tensors in data order, which is their record id), and the base checked.
struct Container {
  FileHeader header;
  io::SafetensorsHeader st;
  uint64_t data_begin = 0;    // offset of the first data byte in the original file
  uint64_t header_bytes = 0;  // of the container's file header: where record 0 starts

  // Read the file header from `in`; when `need_base`, check that `base` is the one the
  // container was made against.
  void open(io::InputStream& in, const BitxBase* base, bool need_base);
  bool has_base() const { return (header.flags & kFlagBase) != 0; }
  // Where errors in a record are reported: the tensor it holds (or, when its header is
  // unreadable, the tensor expected there).
  std::string where(const io::InputStream& in, std::optional<size_t> tensor) const;
  // Check a record header against the original header; returns the tensor info for
  // tensor records, nullptr for opaque ones.
  const io::TensorInfo* check_record(const RecordHeader& r) const;
  // Name of the tensor an index entry holds; empty for opaque records.
  std::string entry_name(const IndexEntry& e) const;
};

RecordHeader read_record_header(io::InputStream& in);

// Check what the payload of `r` (the record header just read from `in`) claims, before
// anything is allocated for it: its length against the record's size and the input
// left, and for frames the decoded size the frame's header claims (peeked, not read)
// against the record's and against what the frame's length can hold.
void check_payload_claims(io::InputStream& in, const RecordHeader& r);
// The frame part of that check, on the payload's first bytes `head`.
void check_frame_claim(std::span<const uint8_t> head, const RecordHeader& r);

// Decode the payload of `r` (the record header just read from `in`, checked by
// check_record; `info` its tensor or nullptr), reading it from `in`, and hand the
// decoded bytes to `sink` in order, in pieces of at most a chunk batch (lossless.h) for
// every codec but lossy, whose frames decode whole tensors. Checks the payload's claims
// (check_payload_claims) and the base first, and the record's XXH3 after the last piece.
// Lossless pieces come from `pool` when one is given (lossless_decompress_stream).
void decode_record(io::InputStream& in, const RecordHeader& r, const io::TensorInfo* info,
                   const TkzDecodeOptions& options, const LosslessSink& sink, BufferPool* pool = nullptr);

// Decode the tensor record `r` (its header just read from `in` and checked by
// c.check_record, `info` its tensor) as a tensor extraction does: check that a BitX
// record's base is given and is the container's, then decode_record. `begin` is called
// once the claims are checked, before the first piece.
void decode_tensor_record(io::InputStream& in, const Container& c, const RecordHeader& r, const io::TensorInfo& info,
                          const TkzDecodeOptions& options, const std::function<void()>& begin,
                          const LosslessSink& sink);

// The index and footer that follow the end record on a sequential read: `count` index
// entries, then the footer, then the end of the stream.
std::vector<IndexEntry> read_index_sequential(io::InputStream& in, uint64_t count, Footer* footer_out);
bool same_entry(const IndexEntry& a, const IndexEntry& b);

// The index and footer of a seekable container, read from the end of its mapping.
struct RandomAccess {
  Buffer file;
  Footer footer;
  std::vector<IndexEntry> index;
};
RandomAccess open_random_access(io::InputStream& in);

// Check an index against the container's header and its footer: records laid end to
// end from `c.header_bytes` (then the end record, then the index), every tensor of the
// original header once with its size, and the footer's original size equal to the
// original header plus every record's bytes. Throws kInvalidInput naming the tensor at
// fault, or the container.
void check_index(const Container& c, const std::vector<IndexEntry>& index, const Footer& footer,
                 const std::string& where);
// Check the end record against the index (record count) and footer (original size).
void check_end_record(const RecordHeader& end, const std::vector<IndexEntry>& index, const Footer& footer,
                      const std::string& where);

}  // namespace tk::codec::tkz
