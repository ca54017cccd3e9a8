#include "tk/io/npy.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "tk/core/error.h"
#include "tk/io/npy_header.h"

namespace tk::io {

static_assert(std::endian::native == std::endian::little, "tensorkit assumes a little-endian host");

namespace {

// Reverse the bytes of each `width`-byte word in place (width 2, 4 or 8).
void byte_swap(uint8_t* p, uint64_t bytes, int width) {
  for (uint64_t i = 0; i + width <= bytes; i += width) std::reverse(p + i, p + i + width);
}

// Copy a column-major array into row-major order. Writes are sequential; reads walk
// the first axis fastest in the source, which is the last axis of the output.
void fortran_to_c(const uint8_t* src, uint8_t* dst, const Shape& shape, size_t elem) {
  size_t rank = shape.size();
  std::vector<uint64_t> stride(rank);  // source stride of each axis, in elements
  uint64_t s = 1;
  for (size_t k = 0; k < rank; ++k) {
    stride[k] = s;
    s *= static_cast<uint64_t>(shape[k]);
  }
  std::vector<int64_t> index(rank, 0);
  const uint64_t inner = static_cast<uint64_t>(shape[rank - 1]);
  const uint64_t inner_stride = stride[rank - 1] * elem;
  uint64_t base = 0;  // source offset, in elements, of the current row
  while (true) {
    const uint8_t* p = src + base * elem;
    for (uint64_t j = 0; j < inner; ++j, p += inner_stride, dst += elem) std::memcpy(dst, p, elem);
    // Advance the odometer over the outer axes.
    size_t k = rank - 1;
    while (k-- > 0) {
      base += stride[k];
      if (++index[k] < shape[k]) break;
      base -= stride[k] * static_cast<uint64_t>(shape[k]);
      index[k] = 0;
    }
    if (k == static_cast<size_t>(-1)) return;
  }
}

// Read exactly `n` bytes from a stream of unknown length without trusting `n` for the
// allocation: the buffer grows as data actually arrives.
Buffer read_growing(InputStream& in, uint64_t n) {
  constexpr uint64_t kFirstChunk = uint64_t{64} << 20;
  uint64_t cap = std::min(n, kFirstChunk);
  Buffer buf = Buffer::allocate(cap);
  uint64_t have = 0;
  while (have < n) {
    if (have == cap) {
      cap = std::min(n, cap * 2);
      Buffer bigger = Buffer::allocate(cap);
      std::memcpy(bigger.mutable_data(), buf.data(), have);
      buf = std::move(bigger);
    }
    size_t got = in.read(buf.mutable_data() + have, cap - have);
    if (got == 0)
      throw invalid_input("truncated .npy data (expected " + std::to_string(n) + " bytes, found " +
                          std::to_string(have) + ")");
    have += got;
  }
  return buf;
}

}  // namespace

Tensor npy_decode(const NpyHeader& header, Buffer raw, bool writable) {
  const DType dtype = header.dtype;
  const uint64_t nbytes = dtype_storage_bytes(dtype, shape_numel(header.shape));
  size_t elem = static_cast<size_t>(dtype_bits(dtype) / 8);
  bool transpose = header.fortran_order && header.shape.size() > 1 && nbytes > 0;
  bool swap = header.big_endian;
  bool aligned = reinterpret_cast<uintptr_t>(raw.data()) % dtype_traits(dtype).alignment == 0;
  // C64 is two f32 words: each swaps on its own.
  int swap_width = dtype == DType::kC64 ? 4 : static_cast<int>(elem);
  if (!transpose && aligned && (!swap || writable)) {
    if (swap) byte_swap(raw.mutable_data(), nbytes, swap_width);
    return Tensor(dtype, header.shape, std::move(raw));
  }
  Buffer out = Buffer::allocate(nbytes);
  if (transpose) fortran_to_c(raw.data(), out.mutable_data(), header.shape, elem);
  else if (nbytes) std::memcpy(out.mutable_data(), raw.data(), nbytes);
  if (swap) byte_swap(out.mutable_data(), nbytes, swap_width);
  return Tensor(dtype, header.shape, std::move(out));
}

NpyLayout npy_parse_layout(std::span<const uint8_t> head) {
  if (head.size() < 8) throw invalid_input("truncated .npy header");
  const size_t prefix_bytes = npy_prefix_size(head.first(8));
  if (head.size() < prefix_bytes) throw invalid_input("truncated .npy header");
  const NpyPrefix p = npy_parse_prefix(head.first(prefix_bytes));
  if (head.size() - prefix_bytes < p.header_bytes) throw invalid_input("truncated .npy header");
  const std::string_view text(reinterpret_cast<const char*>(head.data()) + prefix_bytes, p.header_bytes);
  NpyLayout layout;
  layout.header = npy_parse_header(text, p.major == 3);
  layout.data_offset = prefix_bytes + p.header_bytes;
  layout.data_bytes = dtype_storage_bytes(layout.header.dtype, shape_numel(layout.header.shape));
  return layout;
}

namespace {

class NpyReader final : public TensorReader {
 public:
  NpyReader(std::unique_ptr<InputStream> in, const std::string& tensor_name, const ReadOptions& options)
      : name_(in->name()), path_(in->path()), regular_file_(in->is_regular_file()) {
    if (regular_file_ && options.allow_mmap) {
      mapping_ = Buffer::map_file(path_);
      mapped_ = true;
      in = InputStream::from_buffer(mapping_, name_);
    }
    memory_ = !regular_file_ && in->is_memory();
    parse_header(*in);
    TensorInfo info;
    info.name = tensor_name;
    info.dtype = header_.dtype;
    info.shape = header_.shape;
    info.nbytes = data_bytes_;
    infos_.push_back(std::move(info));
    if (in->size()) check_size(*in->size());
    if (!mapped_) in_ = std::move(in);
  }

  FileFormat format() const override { return FileFormat::kNpy; }
  bool random_access() const override { return mapped_ || regular_file_ || memory_; }

  Tensor read(size_t index) override {
    if (index != 0) throw internal_error("tensor index " + std::to_string(index) + " out of range", name_);
    try {
      Buffer raw = raw_data();  // sets owned_
      return npy_decode(header_, std::move(raw), owned_);
    } catch (const Error& e) {
      if (!e.where().empty()) throw;
      throw e.with_context(name_);
    }
  }

 private:
  void parse_header(InputStream& in) {
    uint8_t prefix[12];
    in.read_exact(prefix, 8, ".npy header");
    size_t prefix_bytes = npy_prefix_size({prefix, 8});
    in.read_exact(prefix + 8, prefix_bytes - 8, ".npy header");
    NpyPrefix p = npy_parse_prefix({prefix, prefix_bytes});
    // Never allocate for a header longer than the file.
    if (in.size() && p.header_bytes > *in.size() - in.position()) throw invalid_input("truncated .npy header");
    std::string text(p.header_bytes, '\0');
    in.read_exact(text.data(), text.size(), ".npy header");
    header_ = npy_parse_header(text, p.major == 3);
    data_offset_ = p.prefix_bytes + p.header_bytes;
    data_bytes_ = dtype_storage_bytes(header_.dtype, shape_numel(header_.shape));
  }

  void check_size(uint64_t file_size) const {
    uint64_t have = file_size - std::min(file_size, data_offset_);
    if (have < data_bytes_)
      throw invalid_input("truncated .npy data (expected " + std::to_string(data_bytes_) + " bytes, found " +
                          std::to_string(have) + ")");
    if (have > data_bytes_)
      throw invalid_input(std::to_string(have - data_bytes_) + " unexpected trailing bytes after the .npy data");
  }

  // The stored bytes of the array, as they are in the file.
  Buffer raw_data() {
    owned_ = false;
    if (mapped_) return mapping_.slice(data_offset_, data_bytes_);
    if (memory_) {
      if (!consumed_) cached_ = in_->read_all();  // a view of the caller's memory
      consumed_ = true;
      return cached_;
    }
    if (consumed_) {
      if (!regular_file_) throw usage_error("the tensor was already read from this stream", name_);
      in_ = InputStream::open(path_);
      in_->skip(data_offset_, ".npy header");
    }
    consumed_ = true;
    owned_ = true;
    if (regular_file_) {
      // The size was checked against the file, so the allocation is justified.
      Buffer buf = Buffer::allocate(data_bytes_);
      in_->read_exact(buf.mutable_data(), data_bytes_, ".npy data");
      return buf;
    }
    Buffer buf = read_growing(*in_, data_bytes_);
    if (!in_->peek(1).empty()) throw invalid_input("unexpected trailing bytes after the .npy data", name_);
    return buf;
  }

  std::string name_, path_;
  bool regular_file_ = false;
  bool mapped_ = false;
  bool memory_ = false;
  bool consumed_ = false;
  bool owned_ = false;
  Buffer mapping_, cached_;
  std::unique_ptr<InputStream> in_;
  NpyHeader header_;
  uint64_t data_offset_ = 0, data_bytes_ = 0;
};

class NpyWriter final : public TensorWriter {
 public:
  explicit NpyWriter(std::unique_ptr<OutputStream> out) : out_(std::move(out)) {}

  std::vector<size_t> begin(const std::vector<TensorInfo>& infos, const Metadata&) override {
    if (begun_) throw internal_error("begin() called twice", out_->name());
    if (infos.size() != 1)
      throw usage_error("a .npy file holds one tensor (got " + std::to_string(infos.size()) + ")", out_->name())
          .with_option("io.npy_one_tensor");
    info_ = infos[0];
    if (!npy_descr(info_.dtype))
      throw usage_error(std::string("dtype ") + dtype_name(info_.dtype) +
                            " cannot be stored in .npy (NumPy has no such type)",
                        out_->name() + ": tensor '" + info_.name + "'")
          .with_option("io.npy_dtype");
    begun_ = true;
    return {0};
  }

  void write(size_t index, const Tensor& tensor) override {
    std::string where = out_->name() + ": tensor '" + info_.name + "'";
    if (!begun_ || index != 0) throw internal_error("write() of an undeclared tensor", where);
    if (written_) throw internal_error("tensor written twice", where);
    if (tensor.dtype() != info_.dtype || tensor.shape() != info_.shape)
      throw internal_error(std::string("tensor is ") + dtype_name(tensor.dtype()) + " " +
                               shape_to_string(tensor.shape()) + " but was declared " + dtype_name(info_.dtype) +
                               " " + shape_to_string(info_.shape),
                           where);
    out_->write(npy_make_header(info_.dtype, info_.shape));
    out_->write(tensor.data(), tensor.nbytes());
    written_ = true;
  }

  // The header says only dtype and shape, so the data can follow in pieces.
  bool begin_pieces(size_t index) override {
    if (!begun_ || index != 0 || written_ || piece_left_) return false;
    out_->write(npy_make_header(info_.dtype, info_.shape));
    piece_left_ = dtype_storage_bytes(info_.dtype, shape_numel(info_.shape));
    in_pieces_ = true;
    return true;
  }

  void write_piece(std::span<const uint8_t> bytes) override {
    if (!in_pieces_) throw internal_error("write_piece() without a successful begin_pieces()", out_->name());
    if (bytes.size() > piece_left_) throw usage_error("more bytes written than declared", out_->name());
    out_->write(bytes);
    piece_left_ -= bytes.size();
  }

  void end_pieces() override {
    if (!in_pieces_) throw internal_error("end_pieces() without a successful begin_pieces()", out_->name());
    if (piece_left_ != 0)
      throw usage_error(std::to_string(piece_left_) + " bytes fewer written than declared", out_->name());
    in_pieces_ = false;
    written_ = true;
  }

  void finish() override {
    if (!begun_) throw internal_error("finish() before begin()", out_->name());
    if (!written_) throw internal_error("tensor '" + info_.name + "' was declared but never written", out_->name());
    out_->commit();
  }

 private:
  std::unique_ptr<OutputStream> out_;
  TensorInfo info_;
  bool begun_ = false, written_ = false, in_pieces_ = false;
  uint64_t piece_left_ = 0;
};

}  // namespace

std::unique_ptr<TensorReader> npy_open(std::unique_ptr<InputStream> in, const std::string& tensor_name,
                                       const ReadOptions& options) {
  std::string name = in->name();
  try {
    return std::make_unique<NpyReader>(std::move(in), tensor_name, options);
  } catch (const Error& e) {
    if (!e.where().empty()) throw;
    throw e.with_context(name);
  }
}

std::unique_ptr<TensorWriter> npy_writer(std::unique_ptr<OutputStream> out) {
  return std::make_unique<NpyWriter>(std::move(out));
}

}  // namespace tk::io
