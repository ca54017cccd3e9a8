// Format-independent access to files of named tensors: a TensorReader lists tensors and
// reads them (zero-copy where possible, sequentially on pipes); a TensorWriter takes
// the list first, then the data. safetensors, HDF5, GGUF, .npy, .npz, PyTorch checkpoints
// (read only) and sharded indexes implement these; tools see only this interface.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/tensor.h"
#include "tk/io/stream.h"

namespace tk::io {

// File-level metadata: string keys to string values (safetensors `__metadata__`, HDF5
// root attributes). Ordered so that output is deterministic.
using Metadata = std::map<std::string, std::string>;

// What is known about a tensor before its data is read.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t nbytes = 0;  // dtype_storage_bytes(dtype, numel(shape))
};

// An object of a file that is not a tensor and was left out, and why ("string data").
struct SkippedObject {
  std::string name;    // its path in the file, as a tensor would be named
  std::string reason;  // a phrase for a message
  std::string option = {};  // the case a caller's option decides, as tk::Error::option()
};

enum class FileFormat { kUnknown, kSafetensors, kHdf5, kNpy, kShardIndex, kTkz, kNpz, kTorch, kCheckpoint, kGguf };

const char* format_name(FileFormat format);  // "safetensors", "hdf5", "npy", "npz", "pytorch", "checkpoint", ...
// Parse a --format value ("safetensors", "st", "hdf5", "h5", "npy", "npz", "gguf"); kUnknown if none.
FileFormat format_parse(std::string_view text);
// Format implied by an output path's extension; kUnknown for none or one unknown.
FileFormat format_from_extension(const std::string& path);
// Detect the format from the first bytes of the stream (peeked, not consumed).
FileFormat detect_format(InputStream& in);
// Whether `head` begins with zstd's frame magic (skippable frames excluded): what
// tcompress writes for a file that holds no tensors.
bool is_zstd_frame(std::span<const uint8_t> head);

class TensorReader {
 public:
  virtual ~TensorReader() = default;

  virtual FileFormat format() const = 0;
  // Tensors in storage order.
  const std::vector<TensorInfo>& tensors() const { return infos_; }
  const Metadata& metadata() const { return metadata_; }
  // The objects left out because they cannot be tensors (HDF5: strings, compounds, soft
  // links, ...), in file order. The library does not tell the user; the caller does.
  const std::vector<SkippedObject>& skipped() const { return skipped_; }
  // Index of the tensor named `name`, if any.
  std::optional<size_t> find(std::string_view name) const;

  // True when read() accepts indices in any order; false for pipes, where indices must
  // increase (tensors skipped over are discarded).
  virtual bool random_access() const = 0;
  // Read tensor `index`. Zero-copy (a read-only view of a mapping) where the format and
  // source allow; otherwise a new owned tensor. Throws kInvalidInput for corrupt data,
  // kUsage when a sequential reader is asked to go back.
  virtual Tensor read(size_t index) = 0;

  // A hint that the caller is done with tensor `index` for now: a mapped reader drops
  // the tensor's pages from the process (they stay in the page cache, and a later read
  // maps them again), so that a pass over a large file keeps its resident memory near
  // one tensor. Tensors already returned stay valid. The default does nothing.
  virtual void release(size_t index) { (void)index; }

  using PieceSink = std::function<void(std::span<const uint8_t>)>;
  // Deliver the bytes of tensor `index` to `sink` in consecutive pieces of `piece_bytes`
  // (the last one may be shorter), under the same ordering rules as read(). Sequential
  // readers stream from the source through one piece-sized buffer and never hold the
  // tensor whole; the default reads the tensor (zero-copy where possible) and slices it.
  virtual void read_pieces(size_t index, size_t piece_bytes, const PieceSink& sink);

  // Rows [lo, hi) of mode `mode` of tensor `index` (a slab: the tensor's shape with that
  // mode's extent hi - lo), for a process that holds only its part of a tensor. The
  // default reads through read(): a slab that is one run of bytes (mode 0) is a view of
  // it, zero-copy from a mapping; otherwise the runs are copied out and the tensor
  // release()d. From a mapping only the pages of the slab's runs are read. HDF5 reads a
  // hyperslab. kUsage for a dtype narrower than a byte, or a pipe.
  virtual Tensor read_slab(size_t index, size_t mode, int64_t lo, int64_t hi);

 protected:
  std::vector<TensorInfo> infos_;
  Metadata metadata_;
  std::vector<SkippedObject> skipped_;
};

class TensorWriter {
 public:
  virtual ~TensorWriter() = default;

  // Declare every tensor and the file metadata, before any data. Returns the order in
  // which the writer stores the tensors (indices into `infos`): feeding write() in that
  // order keeps memory bounded by one tensor. Throws kUsage for names or dtypes the
  // format cannot hold (duplicates, several tensors in .npy).
  virtual std::vector<size_t> begin(const std::vector<TensorInfo>& infos, const Metadata& metadata) = 0;
  // Write tensor `index` of the declared list; its dtype and shape must match. Tensors
  // may come in any order; ones that arrive early are held until their turn.
  virtual void write(size_t index, const Tensor& tensor) = 0;
  // Start writing tensor `index` piece by piece instead of through write(). Returns false
  // when the writer cannot take it that way now (it is not next in storage order, or the
  // format needs tensors whole); the caller then uses write(). After true, write_piece()
  // must receive exactly the tensor's declared bytes in order, then end_pieces().
  virtual bool begin_pieces(size_t index) { return false; }
  virtual void write_piece(std::span<const uint8_t> bytes);
  virtual void end_pieces();
  // Complete the file and commit the output (rename into place). Throws when a declared
  // tensor was never written. Destroying a writer without finish() leaves no output.
  virtual void finish() = 0;
};

// Tensor `index` of `writer` fed in order, piece by piece: passed on as pieces when the
// writer takes them (begin_pieces), gathered and written whole otherwise. For a caller
// whose bytes arrive in pieces (a decoder), so that memory is a piece wherever the
// format allows.
class TensorPieces {
 public:
  TensorPieces(TensorWriter& writer, size_t index, const TensorInfo& info);
  void write(std::span<const uint8_t> bytes);
  // After the tensor's last byte.
  void finish();

 private:
  TensorWriter& writer_;
  size_t index_;
  bool by_pieces_;
  Tensor whole_;  // when the writer takes the tensor whole
  uint64_t filled_ = 0;
};

struct ReadOptions {
  bool allow_mmap = true;  // map regular files instead of reading them
};

struct WriteOptions {
  FileFormat format = FileFormat::kUnknown;  // kUnknown: from the extension, else safetensors
  bool durable = false;                      // fsync before the rename
  int hdf5_zstd_level = 0;                   // > 0: chunked HDF5 datasets with filter 32015
  uint64_t hdf5_chunk_bytes = 1 << 20;       // target chunk size for compressed datasets
};

// Open the tensor file at `path`, of any supported format, detected by content. A
// directory or *.index.json opens a sharded model as one file. Throws kIo for missing
// files, kInvalidInput for unrecognised or malformed content.
std::unique_ptr<TensorReader> open_reader(const std::string& path, const ReadOptions& options = {});
// The same for a stream already opened (and perhaps peeked at, not read from): standard
// input sniffed by a caller for another format, say (a shard index only when opened by
// path).
std::unique_ptr<TensorReader> open_reader(std::unique_ptr<InputStream> in, const ReadOptions& options = {});

// Create a writer for the file at `path` in options.format, or the format implied by
// the extension, or safetensors.
std::unique_ptr<TensorWriter> open_writer(const std::string& path, const WriteOptions& options = {});
// The same onto a stream already opened (standard output, say): options.format, or
// safetensors. options.durable is the stream's own (OutputOptions), not applied here.
std::unique_ptr<TensorWriter> open_writer(std::unique_ptr<OutputStream> out, const WriteOptions& options = {});

}  // namespace tk::io
