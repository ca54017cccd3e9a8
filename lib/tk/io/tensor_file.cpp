#include "tk/io/tensor_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>

#include "tk/core/error.h"
#include "tk/io/gguf.h"
#include "tk/io/hdf5.h"
#include "tk/io/npy.h"
#include "tk/io/npz.h"
#include "tk/io/safetensors.h"
#include "tk/io/safetensors_internal.h"
#include "tk/io/sharded.h"
#include "tk/io/temp_file.h"
#include "tk/io/torch.h"
#include "tk/io/zip.h"

namespace tk::io {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The file name without directories and without its last extension: "a/b/w.npy" -> "w".
std::string path_stem(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  return base;
}

// A zip archive: a torch.save checkpoint when it holds NAME/data.pkl, else an .npz.
std::unique_ptr<TensorReader> archive_open(std::unique_ptr<InputStream> in, const ReadOptions& options,
                                           const std::string& stem) {
  TempFile spool;  // a pipe's copy; its mapping outlives the file
  auto archive = std::make_shared<const ZipArchive>(whole_input(*in, options.allow_mmap, spool), in->name());
  if (torch_is_archive(*archive)) return torch_open(std::move(archive), in->name(), stem);
  return npz_open(std::move(archive), in->name());
}

// Whether the zip archive starting `in` begins with a torch.save pickle, NAME/data.pkl.
bool zip_first_entry_is_pickle(InputStream& in) {
  constexpr size_t kLocalBytes = 30;
  auto head = in.peek(kLocalBytes);
  if (head.size() < kLocalBytes || std::memcmp(head.data(), kZipLocalMagic, 4) != 0) return false;
  const size_t name_bytes = head[26] | static_cast<size_t>(head[27]) << 8;
  auto local = in.peek(kLocalBytes + name_bytes);
  if (local.size() < kLocalBytes + name_bytes) return false;
  const std::string_view name(reinterpret_cast<const char*>(local.data()) + kLocalBytes, name_bytes);
  const size_t slash = name.find('/');
  return slash != std::string_view::npos && name.substr(slash + 1) == "data.pkl";
}

}  // namespace

const char* format_name(FileFormat format) {
  switch (format) {
    case FileFormat::kSafetensors: return "safetensors";
    case FileFormat::kHdf5: return "hdf5";
    case FileFormat::kNpy: return "npy";
    case FileFormat::kShardIndex: return "sharded";
    case FileFormat::kTkz: return "tkz";
    case FileFormat::kNpz: return "npz";
    case FileFormat::kTorch: return "pytorch";
    case FileFormat::kCheckpoint: return "checkpoint";
    case FileFormat::kGguf: return "gguf";
    case FileFormat::kUnknown: break;
  }
  return "unknown";
}

FileFormat format_parse(std::string_view text) {
  std::string t = lower(text);
  if (t == "safetensors" || t == "st") return FileFormat::kSafetensors;
  if (t == "hdf5" || t == "h5") return FileFormat::kHdf5;
  if (t == "npy") return FileFormat::kNpy;
  if (t == "npz") return FileFormat::kNpz;
  if (t == "tkz") return FileFormat::kTkz;
  if (t == "gguf") return FileFormat::kGguf;
  return FileFormat::kUnknown;
}

FileFormat format_from_extension(const std::string& path) {
  std::string p = lower(path);
  if (ends_with(p, ".safetensors") || ends_with(p, ".st")) return FileFormat::kSafetensors;
  if (ends_with(p, ".h5") || ends_with(p, ".hdf5") || ends_with(p, ".he5") || ends_with(p, ".hdf"))
    return FileFormat::kHdf5;
  if (ends_with(p, ".npy")) return FileFormat::kNpy;
  if (ends_with(p, ".npz")) return FileFormat::kNpz;
  if (ends_with(p, ".pt") || ends_with(p, ".pth")) return FileFormat::kTorch;
  if (ends_with(p, ".tkz")) return FileFormat::kTkz;
  if (ends_with(p, ".gguf")) return FileFormat::kGguf;
  if (ends_with(p, ".index.json")) return FileFormat::kShardIndex;
  return FileFormat::kUnknown;
}

bool is_zstd_frame(std::span<const uint8_t> head) {
  static constexpr uint8_t kMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  return head.size() >= 4 && std::memcmp(head.data(), kMagic, 4) == 0;
}

FileFormat detect_format(InputStream& in) {
  auto head = in.peek(64);
  static const uint8_t kHdf5Magic[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (head.size() >= 8 && std::memcmp(head.data(), kHdf5Magic, 8) == 0) return FileFormat::kHdf5;
  if (head.size() >= 6 && std::memcmp(head.data(), "\x93NUMPY", 6) == 0) return FileFormat::kNpy;
  if (head.size() >= 4 && std::memcmp(head.data(), "TKZ", 3) == 0 && head[3] < 16) return FileFormat::kTkz;
  if (head.size() >= 4 && std::memcmp(head.data(), "GGUF", 4) == 0) return FileFormat::kGguf;
  // A zip archive: .npz or torch.save, told apart by their entries (archive_open); here
  // by the first, since torch.save writes NAME/data.pkl first.
  if (head.size() >= 4 && (std::memcmp(head.data(), kZipLocalMagic, 4) == 0 ||
                           std::memcmp(head.data(), kZipEmptyMagic, 4) == 0))
    return zip_first_entry_is_pickle(in) ? FileFormat::kTorch : FileFormat::kNpz;
  // safetensors: u64 little-endian header length, then JSON starting with '{'.
  const std::optional<detail::SafetensorsPrefix> prefix = detail::safetensors_prefix(head);
  const bool json_after_prefix = prefix && prefix->json_follows;
  if (json_after_prefix && prefix->header_bytes >= 2 && prefix->header_bytes <= kSafetensorsMaxHeader)
    return FileFormat::kSafetensors;
  // A JSON object at the start with a "weight_map": a shard index. Other JSON (a model's
  // config.json) is no tensor format.
  size_t i = 0;
  while (i < head.size() && is_space(head[i])) ++i;
  if (i < head.size() && head[i] == '{') {
    constexpr size_t kIndexKeyWithin = size_t{1} << 20;  // the key comes after "metadata" at most
    const std::span<const uint8_t> text = in.peek(kIndexKeyWithin);
    constexpr std::string_view kKey = "\"weight_map\"";
    const std::string_view view(reinterpret_cast<const char*>(text.data()), text.size());
    return view.find(kKey) != std::string_view::npos ? FileFormat::kShardIndex : FileFormat::kUnknown;
  }
  // A length prefix out of bounds before the JSON is still safetensors, so that its
  // reader names the problem ("header length ... exceeds the limit").
  if (json_after_prefix) return FileFormat::kSafetensors;
  // A pickle (the PROTO opcode), as the legacy torch.save wrote: last, since a
  // safetensors length prefix can begin with the same two bytes.
  if (head.size() >= 3 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5) return FileFormat::kTorch;
  return FileFormat::kUnknown;
}

std::optional<size_t> TensorReader::find(std::string_view name) const {
  for (size_t i = 0; i < infos_.size(); ++i)
    if (infos_[i].name == name) return i;
  return std::nullopt;
}

void TensorReader::read_pieces(size_t index, size_t piece_bytes, const PieceSink& sink) {
  if (piece_bytes == 0) throw internal_error("read_pieces with a piece size of 0");
  Tensor tensor = read(index);
  const uint8_t* p = tensor.data();
  for (uint64_t left = tensor.nbytes(); left > 0;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, piece_bytes));
    sink({p, n});
    p += n;
    left -= n;
  }
}

namespace {

// The element runs of a slab: `outer` runs of `run` elements, `stride` elements apart,
// the first at element `first`.
struct SlabRuns {
  int64_t outer = 1, run = 0, stride = 0, first = 0;
};

SlabRuns slab_runs(const Shape& shape, size_t mode, int64_t lo, int64_t hi) {
  SlabRuns r;
  int64_t inner = 1;
  for (size_t k = 0; k < mode; ++k) r.outer *= shape[k];
  for (size_t k = mode + 1; k < shape.size(); ++k) inner *= shape[k];
  r.run = (hi - lo) * inner;
  r.stride = shape[mode] * inner;
  r.first = lo * inner;
  return r;
}

}  // namespace

Tensor TensorReader::read_slab(size_t index, size_t mode, int64_t lo, int64_t hi) {
  const TensorInfo& info = infos_.at(index);
  if (mode >= info.shape.size() || lo < 0 || hi < lo || hi > info.shape[mode])
    throw internal_error("read_slab: rows outside the tensor", info.name);
  if (dtype_bits(info.dtype) % 8 != 0)
    throw usage_error(std::string("a ") + dtype_name(info.dtype) + " tensor cannot be read in slabs", info.name);
  if (!random_access()) throw usage_error("a tensor read in slabs needs a file, not a pipe", info.name);
  const size_t width = static_cast<size_t>(dtype_bits(info.dtype) / 8);
  Shape shape = info.shape;
  shape[mode] = hi - lo;
  const SlabRuns r = slab_runs(info.shape, mode, lo, hi);
  Buffer out;
  {
    const Tensor whole = read(index);
    // One run (the first mode, or every mode before it of extent 1): a view, no copy.
    if (r.outer == 1)
      return Tensor(info.dtype, shape,
                    whole.buffer().slice(static_cast<size_t>(r.first) * width, static_cast<size_t>(r.run) * width));
    out = Buffer::allocate(static_cast<size_t>(r.outer * r.run) * width);
    for (int64_t o = 0; o < r.outer; ++o)
      std::memcpy(out.mutable_data() + static_cast<size_t>(o * r.run) * width,
                  whole.data() + static_cast<size_t>(o * r.stride + r.first) * width, static_cast<size_t>(r.run) * width);
  }
  release(index);
  return Tensor(info.dtype, shape, std::move(out));
}

void TensorWriter::write_piece(std::span<const uint8_t>) {
  throw internal_error("write_piece() without a successful begin_pieces()");
}

void TensorWriter::end_pieces() { throw internal_error("end_pieces() without a successful begin_pieces()"); }

TensorPieces::TensorPieces(TensorWriter& writer, size_t index, const TensorInfo& info)
    : writer_(writer), index_(index), by_pieces_(writer.begin_pieces(index)) {
  if (!by_pieces_) whole_ = Tensor::empty(info.dtype, info.shape);
}

void TensorPieces::write(std::span<const uint8_t> bytes) {
  if (by_pieces_) return writer_.write_piece(bytes);
  if (bytes.size() > whole_.nbytes() - filled_) throw internal_error("more bytes than the tensor holds");
  if (!bytes.empty()) std::memcpy(whole_.mutable_data() + filled_, bytes.data(), bytes.size());
  filled_ += bytes.size();
}

void TensorPieces::finish() {
  if (by_pieces_) return writer_.end_pieces();
  if (filled_ != whole_.nbytes()) throw internal_error("fewer bytes than the tensor holds");
  writer_.write(index_, whole_);
}

std::unique_ptr<TensorReader> open_reader(const std::string& path, const ReadOptions& options) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::string found = sharded_find_in_directory(path);
    return open_reader(found, options);
  }
  return open_reader(InputStream::open(path), options);
}

std::unique_ptr<TensorReader> open_reader(std::unique_ptr<InputStream> in, const ReadOptions& options) {
  const std::string path = in->path();
  std::string name = in->name();
  // Standard input has no file name to call its one tensor by.
  const std::string stem = in->is_standard_input() ? std::string("tensor") : path_stem(path);
  try {
    FileFormat format = detect_format(*in);
    // A file named as an index whose JSON lacks a weight_map: the index reader names that.
    if (format == FileFormat::kUnknown && ends_with(path, ".index.json")) format = FileFormat::kShardIndex;
    switch (format) {
      case FileFormat::kSafetensors: return safetensors_open(std::move(in), options);
      case FileFormat::kHdf5: return hdf5_open(std::move(in), options);
      case FileFormat::kGguf: return gguf_open(std::move(in), options);
      case FileFormat::kNpy:
        return npy_open(std::move(in), stem, options);
      case FileFormat::kShardIndex:
        // An index names files beside it: from a stream it could only resolve them
        // against the working directory.
        if (in->is_standard_input())
          throw invalid_input("a sharded index cannot be read from stdin (the input starts with '{')");
        // A memory stream has no directory at all (it would open the path "").
        if (path.empty()) throw invalid_input("a sharded index cannot be read from memory (the input starts with '{')");
        in.reset();
        return sharded_open(path, options);
      case FileFormat::kNpz: return archive_open(std::move(in), options, stem);
      case FileFormat::kTorch:
        if (auto h = in->peek(4); h.size() == 4 && std::memcmp(h.data(), kZipLocalMagic, 4) == 0)
          return archive_open(std::move(in), options, stem);
        throw invalid_input(torch_legacy_message());
      case FileFormat::kTkz:
        // The tools read a container's tensors from a path (codec/tkz_reader.h).
        throw invalid_input("a .tkz container is read as tensors only from a file path")
            .with_option("io.tkz_from_path");
      case FileFormat::kCheckpoint:  // a directory, never detected from bytes
      case FileFormat::kUnknown: break;
    }
  } catch (const Error& e) {
    if (e.where().rfind(name, 0) == 0) throw;  // already located
    throw e.with_context(name);
  }
  auto size = in->size();
  if (size && *size == 0) throw invalid_input("empty file, not a tensor file", name);
  if (is_zstd_frame(in->peek(4)))
    throw invalid_input("a zstd frame, not a tensor file", name).with_option("io.zstd_frame");
  throw invalid_input("unrecognised format (not safetensors, HDF5, GGUF, .npy, .npz or a PyTorch checkpoint)", name);
}

namespace {

using StreamOpener = std::function<std::unique_ptr<OutputStream>()>;

// The writer of `format` over the stream `open` makes (opened only for a format that
// can be written); the errors name `where`.
std::unique_ptr<TensorWriter> format_writer(FileFormat format, const StreamOpener& open, const WriteOptions& options,
                                            const std::string& where) {
  switch (format) {
    case FileFormat::kSafetensors: return safetensors_writer(open());
    case FileFormat::kHdf5: return hdf5_writer(open(), options);
    case FileFormat::kNpy: return npy_writer(open());
    case FileFormat::kNpz: return npz_writer(open());
    case FileFormat::kGguf: return gguf_writer(open());
    case FileFormat::kTorch:
      throw usage_error("PyTorch checkpoints are read, not written; write .safetensors (torch loads it with "
                        "safetensors.torch.load_file)",
                        where);
    case FileFormat::kShardIndex:
      throw usage_error("a sharded model is written by its .safetensors name", where)
          .with_option("io.shard_index_output");
    case FileFormat::kTkz:
      throw usage_error("tensor files cannot be written as .tkz", where).with_option("io.tkz_output");
    case FileFormat::kCheckpoint:
      throw usage_error("checkpoint steps are not written as tensor files", where).with_option("io.checkpoint_output");
    case FileFormat::kUnknown: break;
  }
  throw usage_error("unknown output format", where);
}

}  // namespace

std::unique_ptr<TensorWriter> open_writer(const std::string& path, const WriteOptions& options) {
  FileFormat format = options.format;
  if (format == FileFormat::kUnknown) format = format_from_extension(path);
  if (format == FileFormat::kUnknown) format = FileFormat::kSafetensors;
  return format_writer(format, [&] { return OutputStream::open(path, {options.durable}); }, options, path);
}

std::unique_ptr<TensorWriter> open_writer(std::unique_ptr<OutputStream> out, const WriteOptions& options) {
  const FileFormat format = options.format == FileFormat::kUnknown ? FileFormat::kSafetensors : options.format;
  const std::string where = out->name();
  return format_writer(format, [&] { return std::move(out); }, options, where);
}

}  // namespace tk::io
