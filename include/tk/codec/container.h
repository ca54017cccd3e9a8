// The .tkz container (docs/TKZ.md): a file compressed tensor by tensor so that it comes
// back byte for byte. It holds the original file's header verbatim, then one record per
// tensor (and records of opaque bytes for whatever is not a tensor), written in one
// streaming pass so that the output can be a pipe, then an index of the records and a
// fixed-size footer for random access when the container is a seekable file.
//
// Safetensors inputs are coded per tensor (lossless byte-grouped frames, BitX deltas
// against a base, or lossy frames). A file that holds no tensors (JSON, HDF5, .npy, ...),
// and a small file whose container would not be smaller, is written in the compact form
// instead: one bare zstd frame, the bytes `zstd` makes at the same level. The readers
// accept both forms.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tk/codec/bitx.h"
#include "tk/codec/file_digest.h"
#include "tk/codec/lossless.h"
#include "tk/codec/sha256.h"
#include "tk/core/tensor.h"
#include "tk/io/stream.h"
#include "tk/io/tensor_file.h"

namespace tk::codec {

// How a record's payload is coded.
enum class TkzCodec : uint8_t {
  kLossless = 1,    // byte-grouped lossless frame (lossless.h)
  kZstd = 2,        // lossless frame of dtype U8, i.e. plain zstd per chunk: opaque bytes, and
                    // tensors whose raw bytes code smaller than their byte planes
  kBitxRef = 3,     // identical to the base tensor: no payload
  kBitxDelta = 4,   // lossless frame of the XOR with the base tensor (bitx.h)
  kLossy = 5,       // lossy frame (lossy.h); restores an approximation
  kRaw = 6,         // the bytes as they are, where no coding makes them smaller
  kZstdWhole = 7,   // one zstd frame of a whole tensor of at most kTkzZstdWholeMax bytes
};
// The largest tensor a kZstdWhole record holds: it decodes in one piece.
inline constexpr uint64_t kTkzZstdWholeMax = uint64_t{16} << 20;
const char* tkz_codec_name(TkzCodec codec);

// Choose a lossy frame for a tensor, or nullopt to code it losslessly. Called for each
// tensor of a safetensors input with the tensor's bytes (not called when a BitX base
// matches the tensor).
using TkzLossyHook = std::function<std::optional<std::vector<uint8_t>>(const io::TensorInfo&, const Tensor&)>;

struct TkzCompressOptions {
  LosslessOptions lossless;        // level, chunk size, threads of every frame
  const BitxBase* base = nullptr;  // BitX: code tensors as deltas against this model
  TkzLossyHook lossy;              // lossy mode when set
  uint64_t opaque_record_bytes = 16 << 20;  // bytes per record of opaque data
  // The footer's digest of the original file. SHA-256 (a version-1 container, which
  // every release reads) costs a serial pass at about 1.7 GB/s; XXH3-128 does not.
  DigestKind digest = DigestKind::kXxh3_128;
  // Refuse (kInvalidInput) an input that looks like a damaged tensor file
  // (io/format_damage.h) instead of keeping it as opaque bytes.
  bool refuse_damaged = false;
  // Allow the compact form (one zstd frame of the whole file): for a file of at most
  // kTkzCompareMax bytes where the frame is smaller than the container, and for a larger
  // file that is not safetensors. Not with a base, a lossy hook or SHA-256, which only
  // the container records. Off: always a container (opaque records for non-tensor
  // files), as before the compact form existed.
  bool zstd_frame = true;
  std::function<void(uint64_t bytes_done, std::optional<uint64_t> bytes_total)> progress;
};
// Files up to this size are coded both ways, and the smaller kept. Above it a
// container's fixed bytes are a small part of it (and a second pass would cost more
// than they do): safetensors files are containers, others one frame.
inline constexpr uint64_t kTkzCompareMax = uint64_t{1} << 20;

// One record as listed in the index.
struct TkzEntry {
  std::string name;          // tensor name; empty for opaque bytes
  bool is_tensor = false;
  TkzCodec codec = TkzCodec::kLossless;
  DType dtype = DType::kU8;  // tensors: from the original header
  Shape shape;
  uint64_t offset = 0;       // of the record in the container
  uint64_t bytes = 0;        // decoded bytes
  uint64_t stored = 0;       // payload bytes
};

struct TkzCompressResult {
  io::FileFormat source = io::FileFormat::kUnknown;  // kSafetensors, or the format kept opaque
  bool zstd_frame = false;   // written in the compact form (then no entries)
  uint64_t bytes_in = 0;     // original file
  uint64_t bytes_out = 0;    // container
  FileDigest digest;         // of the original file
  std::vector<TkzEntry> entries;
  // Kept as opaque bytes although it looks like a damaged tensor file: why, as
  // "looks like hdf5, but its superblock says ..."; empty otherwise.
  std::string damage;
};

// Compress the file read from `in` into `out` (not committed: the caller commits).
// Throws kInvalidInput for a malformed safetensors input, kIo for read/write failures.
TkzCompressResult tkz_compress(io::InputStream& in, io::OutputStream& out, const TkzCompressOptions& options);

struct TkzDecodeOptions {
  const BitxBase* base = nullptr;  // required for containers made with a base
  int threads = 0;
};

struct TkzDecompressResult {
  uint64_t bytes_in = 0, bytes_out = 0;
  bool exact = true;         // false when lossy records were decoded (no digest check)
  bool zstd_frame = false;   // the compact form, checked by the frame's own checksum
  FileDigest digest;         // of the restored file, of the kind the container records
};

// Restore the original file from the container read from `in` into `out` (not
// committed). Checks every record's checksum, the base (SHA-256 of the file, hash of each
// base tensor used) and, unless lossy records were present, the digest of the whole
// restored file that the footer records. Throws kInvalidInput on any malformed or corrupt container, naming
// the tensor whose record is bad; kUsage-free: a missing or different base is
// kInvalidInput too.
TkzDecompressResult tkz_decompress(io::InputStream& in, io::OutputStream& out, const TkzDecodeOptions& options);

// Decode the tensor `name` alone. On a regular file, the footer's index locates the
// record; on a pipe the records are scanned and the others skipped undecoded. Throws
// kUsage when the container has no such tensor (or holds no tensors), kInvalidInput on
// corruption. The tensor is allocated once its size is checked against the record and
// the frame; tkz_extract_stream does not hold it whole.
Tensor tkz_extract(io::InputStream& in, std::string_view name, const TkzDecodeOptions& options,
                   io::TensorInfo* info = nullptr);

// What tkz_extract_stream hands over: first the tensor's name, dtype and shape (once
// the record is found and its claims checked), then its bytes in consecutive pieces.
struct TkzTensorSink {
  std::function<void(const io::TensorInfo&)> begin;
  std::function<void(std::span<const uint8_t>)> piece;
};

// Decode the tensor `name` as tkz_extract does, with memory bounded by a chunk batch
// (lossless.h), not by the tensor (lossy records excepted: their frames decode whole).
// Before it returns it also checks the rest of the container: the index and footer
// against the records (on a pipe by scanning to the end), so a caller that commits its
// output only after the return never commits the tensor of a corrupt container. Returns
// the tensor's info.
io::TensorInfo tkz_extract_stream(io::InputStream& in, std::string_view name, const TkzDecodeOptions& options,
                                  const TkzTensorSink& sink);

struct TkzListing {
  io::FileFormat source = io::FileFormat::kUnknown;
  bool zstd_frame = false;   // the compact form: no entries, decoded through to count and check it
  bool has_base = false;
  Sha256Digest base_sha256{};
  FileDigest digest;         // of the original file
  uint64_t original_bytes = 0;
  uint64_t container_bytes = 0;
  io::Metadata metadata;     // of the original safetensors header
  std::vector<TkzEntry> entries;
};

// Read the container's header, index and footer (scanning the records on a pipe), and
// check them against each other and the record headers: every tensor once with its
// size, records end to end, the footer's original size the sum of the records'. A file
// in the compact form is decoded without output, to check its frame and count its bytes.
// Throws kInvalidInput naming the tensor (or the container) at fault.
TkzListing tkz_list(io::InputStream& in);

}  // namespace tk::codec
