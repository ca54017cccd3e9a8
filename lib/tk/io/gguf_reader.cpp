// GGUF reader: a memory map with zero-copy views of plain tensors for regular files, a
// sequential reader (tensors in offset order) for pipes; block types decoded to F32.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/io/gguf_internal.h"
#include "tk/io/mapped_pages.h"
#include "tk/io/safetensors_internal.h"

namespace tk::io {

namespace {

using detail::GgufHeader;
using detail::tensor_where;

class GgufReaderBase : public GgufReader {
 public:
  GgufReaderBase(std::string name, const GgufHeader& header) : name_(std::move(name)) {
    version_ = header.version;
    alignment_ = header.alignment;
    kvs_ = header.kvs;
    entries_ = header.tensors;
    for (const auto& kv : kvs_) metadata_[kv.key] = gguf_value_text(kv);
    for (const auto& e : entries_) {
      const GgmlTypeTraits& t = ggml_traits(e.type);
      TensorInfo info{e.name, t.plain.value_or(DType::kF32), e.shape, 0};
      info.nbytes = dtype_storage_bytes(info.dtype, shape_numel(e.shape));
      infos_.push_back(std::move(info));
    }
  }

  Tensor read(size_t index) override {
    return located(name_, [&] {
      check_index(index);
      const GgufTensor& e = entries_[index];
      const GgmlTypeTraits& t = ggml_traits(e.type);
      if (!t.dequantizes)
        throw unavailable(fmt::format("ggml type {} is listed but not decoded by tensorkit", t.name),
                          tensor_where(e.name));
      Buffer stored = stored_bytes(index);
      if (t.plain) return Tensor(*t.plain, e.shape, aligned(std::move(stored), *t.plain));
      Tensor out = Tensor::empty(DType::kF32, e.shape);
      gguf_dequantize(e.type, {stored.data(), stored.size()},
                      {reinterpret_cast<float*>(out.mutable_data()), static_cast<size_t>(shape_numel(e.shape))});
      return out;
    });
  }

  Buffer read_stored(size_t index) override {
    return located(name_, [&] {
      check_index(index);
      return stored_bytes(index);
    });
  }

 protected:
  virtual Buffer stored_bytes(size_t index) = 0;

  void check_index(size_t index) const {
    if (index >= entries_.size())
      throw usage_error(fmt::format("tensor index {} out of range ({} tensors)", index, entries_.size()));
  }

  // Typed access needs natural alignment; a file with a small general.alignment may not
  // give it, and the rare such tensor is copied.
  static Buffer aligned(Buffer bytes, DType dtype) {
    if (reinterpret_cast<uintptr_t>(bytes.data()) % static_cast<uintptr_t>(dtype_traits(dtype).alignment) == 0)
      return bytes;
    Buffer copy = Buffer::allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(copy.mutable_data(), bytes.data(), bytes.size());
    return copy;
  }

  std::string name_;
};

class MappedGguf final : public GgufReaderBase {
 public:
  MappedGguf(std::string name, Buffer file, GgufHeader header)
      : GgufReaderBase(std::move(name), header), file_(std::move(file)), data_start_(header.data_start) {}

  bool random_access() const override { return true; }

  void release(size_t index) override {
    if (index >= entries_.size()) return;
    release_mapped_bytes(file_, data_start_ + entries_[index].offset, entries_[index].nbytes);
  }

 private:
  Buffer stored_bytes(size_t index) override {
    const GgufTensor& e = entries_[index];
    if (e.nbytes == 0) return Buffer();  // its offset may lie past the end of the file
    return file_.slice(static_cast<size_t>(data_start_ + e.offset), static_cast<size_t>(e.nbytes));
  }

  Buffer file_;
  uint64_t data_start_;
};

class StreamGguf final : public GgufReaderBase {
 public:
  // `size_checked`: the stream's length is known and holds every tensor.
  StreamGguf(std::unique_ptr<InputStream> in, GgufHeader header, bool size_checked)
      : GgufReaderBase(in->name(), header), in_(std::move(in)), position_(in_->position()),
        data_start_(header.data_start), data_end_(data_start_ + header.data_end), size_checked_(size_checked) {
    if (entries_.empty()) check_end();
  }

  bool random_access() const override { return false; }

 private:
  Buffer stored_bytes(size_t index) override {
    if (index < next_)
      throw usage_error("this stream is read sequentially and has already passed this tensor",
                        tensor_where(entries_[index].name));
    const GgufTensor& e = entries_[index];
    Buffer b;
    if (e.nbytes > 0) {  // an empty tensor holds no data, and its offset may lie past the end
      skip_to(data_start_ + e.offset, e.name);
      if (size_checked_) {
        b = Buffer::allocate(static_cast<size_t>(e.nbytes));
        if (in_->read(b.mutable_data(), b.size()) != b.size()) throw invalid_input("truncated data", tensor_where(e.name));
      } else {
        // A header that lies about sizes costs only the bytes that arrive, not its claim.
        b = detail::read_claimed_bytes(*in_, e.nbytes, e.name);
      }
      position_ += e.nbytes;
    }
    next_ = index + 1;
    if (next_ == entries_.size()) check_end();
    return b;
  }

  // As for a mapped file: at most the alignment's padding after the last tensor.
  void check_end() {
    const uint64_t padded = (data_end_ + alignment_ - 1) / alignment_ * alignment_;
    uint64_t allowed = padded > position_ ? padded - position_ : 0;
    uint8_t scratch[4096];
    while (allowed > 0) {
      size_t got = in_->read(scratch, static_cast<size_t>(std::min<uint64_t>(allowed, sizeof scratch)));
      if (got == 0) return;
      allowed -= got;
      position_ += got;
    }
    if (!in_->peek(1).empty()) throw invalid_input("trailing bytes after the last tensor");
  }

  void skip_to(uint64_t at, const std::string& name) {
    if (at < position_) throw internal_error("stream position past a tensor's start", tensor_where(name));
    try {
      in_->skip(at - position_, "data");
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      throw invalid_input("truncated data", tensor_where(name));
    }
    position_ = at;
  }

  std::unique_ptr<InputStream> in_;
  uint64_t position_;
  uint64_t data_start_;
  uint64_t data_end_;  // file offset of the end of the last tensor
  bool size_checked_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<GgufReader> gguf_open(std::unique_ptr<InputStream> in, const ReadOptions& options) {
  std::string name = in->name();
  return located(name, [&]() -> std::unique_ptr<GgufReader> {
    if (options.allow_mmap && in->is_regular_file() && in->position() == 0) {
      Buffer file = Buffer::map_file(in->path());
      auto view = InputStream::from_buffer(file, name);
      GgufHeader header = detail::gguf_parse_header(*view, file.size());
      // A file with no tensors may end right after its records, before the padding.
      const uint64_t data_bytes = file.size() > header.data_start ? file.size() - header.data_start : 0;
      detail::gguf_check_extent(header, data_bytes);
      return std::make_unique<MappedGguf>(name, std::move(file), std::move(header));
    }
    std::optional<uint64_t> size = in->size();
    GgufHeader header = detail::gguf_parse_header(*in, size);
    if (size) detail::gguf_check_extent(header, *size > header.data_start ? *size - header.data_start : 0);
    return std::make_unique<StreamGguf>(std::move(in), std::move(header), size.has_value());
  });
}

}  // namespace tk::io
