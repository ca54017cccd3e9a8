// GGUF (llama.cpp's model format): a reader that lists every tensor and decodes the
// ggml types tensorkit knows, keeping the file's typed key-value pairs, and a streaming
// writer of plain tensors and of ggml blocks given as stored bytes.
//
// Layout (little-endian): "GGUF", u32 version (2 or 3), u64 tensor count, u64 pair
// count, the pairs, the tensor records (name, u32 n_dims, u64 dims innermost first,
// u32 ggml type, u64 offset), zero padding to the alignment (`general.alignment`, a u32
// power of two, default 32), then the data section; every offset is relative to it and
// aligned. Validation rejects (kInvalidInput) version 1, big-endian files, unknown types,
// duplicate keys and names, keys and names that are not UTF-8 (as gguf-py does), nested
// arrays, more than 4 dimensions, innermost dimensions that are not whole blocks,
// misaligned, overlapping or out-of-file tensors, and more than an alignment's worth of
// bytes after the last tensor. A tensor of no bytes holds no data: its offset need only
// be aligned (it may lie past the end of the file, as gguf-py reads it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tk/io/gguf_types.h"
#include "tk/io/tensor_file.h"

namespace tk::io {

// Bounds on what a header may claim before its bytes are read: a pipe that claims a
// gigabyte string costs only the bytes it sends, and never more than this in all.
inline constexpr uint64_t kGgufMaxHeader = uint64_t{1} << 30;
inline constexpr uint32_t kGgufDefaultAlignment = 32;
// The largest alignment the writer pads to. A file may claim any power of two (2^31 is
// read, as gguf-py reads it), but its padding is bounded by its own bytes: every tensor
// that holds data lies inside the file, and only empty ones may start past its end. A
// larger alignment is not carried into an output, which would otherwise pad a 128-byte
// file to gigabytes.
inline constexpr uint32_t kGgufMaxAlignment = uint32_t{1} << 20;
// ggml's GGML_MAX_NAME: llama.cpp refuses longer tensor names, so the writer does too.
inline constexpr size_t kGgufMaxName = 63;

enum class GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// One key-value pair as the file stores it: the value's type and its encoded bytes (for
// an array: element type, u64 count, then the elements), so that a file's pairs are
// written again unchanged.
struct GgufKv {
  std::string key;
  GgufValueType type = GgufValueType::kString;
  std::vector<uint8_t> value;
};

GgufKv gguf_kv_string(std::string key, std::string_view value);
GgufKv gguf_kv_u32(std::string key, uint32_t value);
// The value of a string pair, or of an unsigned integer pair; nullopt for other types.
std::optional<std::string> gguf_kv_string_value(const GgufKv& kv);
std::optional<uint64_t> gguf_kv_uint_value(const GgufKv& kv);
// The value as one line of text: scalars as numbers, strings as they are, arrays as
// their first `max_items` elements and their length ("[3 x string: a, b, c]").
std::string gguf_value_text(const GgufKv& kv, size_t max_items = 8);
const char* gguf_value_type_name(GgufValueType type);

// A tensor as the file stores it.
struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::kF32;
  Shape shape;          // tensorkit's order: outermost first (the file's dims reversed)
  uint64_t offset = 0;  // in the data section
  uint64_t nbytes = 0;  // stored bytes
};

// The tensors() of a GgufReader are in storage order. A plain type is read as its dtype
// (zero-copy from a mapped file); a block type is read decoded to F32, which is what its
// TensorInfo says (nbytes: the decoded size). metadata() holds each pair as text.
class GgufReader : public TensorReader {
 public:
  FileFormat format() const override { return FileFormat::kGguf; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::vector<GgufKv>& kvs() const { return kvs_; }
  const GgufTensor& entry(size_t index) const { return entries_.at(index); }
  // The stored bytes of tensor `index` as they are (ggml blocks for block types), under
  // read()'s ordering rules.
  virtual Buffer read_stored(size_t index) = 0;

 protected:
  uint32_t version_ = 3;
  uint32_t alignment_ = kGgufDefaultAlignment;
  std::vector<GgufKv> kvs_;
  std::vector<GgufTensor> entries_;
};

// Open a GGUF file from `in` (positioned at its start): mapped for regular files when
// options.allow_mmap, read sequentially otherwise. Throws kInvalidInput for a malformed
// header (located at the file, the pair or the tensor).
std::unique_ptr<GgufReader> gguf_open(std::unique_ptr<InputStream> in, const ReadOptions& options);

// A tensor to write: its name, shape (outermost first) and stored type.
struct GgufTensorDecl {
  std::string name;
  Shape shape;
  GgmlType type = GgmlType::kF32;
};

// Writes GGUF version 3. begin() (the TensorWriter interface) takes plain tensors and
// writes the metadata as gguf_output_kvs (gguf_transfer.h) makes it: the typed pairs a
// GGUF input left under "gguf" (gguf_kv_json.h), the rest as string pairs but
// `general.*` (their types are fixed by GGUF: a string there makes llama.cpp refuse the
// file); the float tensors
// llama.cpp reads only as F32 (gguf_rules.h) are declared F32 and widened by write().
// begin_gguf() declares typed pairs and tensors of any type; the header is written at
// once, so the output streams. Tensors are stored in declaration order, each aligned.
// `general.file_type` is written as gguf_file_type of the declarations: a given value
// is replaced unless it still holds (gguf_file_type_holds), and a model (one with
// `general.architecture`) gets one.
class GgufWriter : public TensorWriter {
 public:
  // Throws kUsage for names longer than kGgufMaxName, duplicate names or keys, shapes
  // of more than 4 dimensions or whose innermost dimension is not whole blocks.
  virtual void begin_gguf(const std::vector<GgufTensorDecl>& tensors, const std::vector<GgufKv>& kvs) = 0;
  // Write tensor `index` from its stored bytes (exactly ggml_storage_bytes of its type).
  virtual void write_stored(size_t index, std::span<const uint8_t> bytes) = 0;
};

std::unique_ptr<GgufWriter> gguf_writer(std::unique_ptr<OutputStream> out);

// The encoded header (through the padding before the data section) of a file holding
// `tensors` stored one after another in this order, each aligned: for the writer and
// for tests that build files by hand. Also returns each tensor's offset. Throws
// kInvalidInput for a general.alignment that is not a u32 power of two, kUsage for one
// above kGgufMaxAlignment.
std::vector<uint8_t> gguf_make_header(const std::vector<GgufTensorDecl>& tensors, const std::vector<GgufKv>& kvs,
                                      std::vector<uint64_t>* offsets = nullptr);

}  // namespace tk::io
