// safetensors reader: a memory map with zero-copy tensor views for regular files, a
// sequential reader (tensors in data-offset order) for pipes and memory streams.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/io/mapped_pages.h"
#include "tk/io/safetensors.h"
#include "tk/io/safetensors_internal.h"

namespace tk::io {

namespace {

using detail::kDirectAllocLimit;
using detail::tensor_where;

// Growth step when reading from a stream of unknown size: memory follows the bytes that
// actually arrive, never a length the header merely claims.
constexpr size_t kReadStep = size_t{1} << 20;

void check_header_length(uint64_t n, std::optional<uint64_t> available) {
  if (n > kSafetensorsMaxHeader)
    throw invalid_input("header length " + std::to_string(n) + " exceeds the limit of " +
                        std::to_string(kSafetensorsMaxHeader) + " bytes");
  if (available && n > *available)
    throw invalid_input("header length " + std::to_string(n) + " extends past the end of the file (" +
                        std::to_string(*available) + " bytes follow the length)");
}

// Compare the data the header describes with the `available` bytes after the header.
void check_data_extent(const SafetensorsHeader& h, uint64_t available) {
  if (h.data_size < available)
    throw invalid_input(std::to_string(available - h.data_size) + " trailing bytes after the data (header describes " +
                        std::to_string(h.data_size) + " bytes of data)");
  for (size_t i = 0; i < h.tensors.size(); ++i)
    if (h.offsets[i] + h.tensors[i].nbytes > available)
      throw invalid_input("truncated data (" + std::to_string(available) + " of " + std::to_string(h.data_size) +
                              " bytes present)",
                          tensor_where(h.tensors[i].name));
}

class MappedReader final : public TensorReader {
 public:
  MappedReader(std::string name, Buffer file, SafetensorsHeader header, uint64_t data_start)
      : name_(std::move(name)), file_(std::move(file)), offsets_(std::move(header.offsets)), data_start_(data_start) {
    infos_ = std::move(header.tensors);
    metadata_ = std::move(header.metadata);
  }

  FileFormat format() const override { return FileFormat::kSafetensors; }
  bool random_access() const override { return true; }

  Tensor read(size_t index) override {
    return located(name_, [&] {
      if (index >= infos_.size())
        throw usage_error("tensor index " + std::to_string(index) + " out of range (" +
                          std::to_string(infos_.size()) + " tensors)");
      const TensorInfo& info = infos_[index];
      uint64_t at = data_start_ + offsets_[index];
      Buffer bytes = file_.slice(at, info.nbytes);
      // Files from the reference writer are aligned; copy the rare misaligned tensor so
      // that typed access through data_as<T>() stays well-defined.
      if (at % static_cast<uint64_t>(dtype_traits(info.dtype).alignment) != 0) {
        Buffer copy = Buffer::allocate(info.nbytes);
        if (info.nbytes) std::memcpy(copy.mutable_data(), bytes.data(), info.nbytes);
        bytes = std::move(copy);
      }
      return Tensor(info.dtype, info.shape, std::move(bytes));
    });
  }

  // The mapping is private and read-only, so dropping its pages loses nothing: a later
  // access faults them in again from the file.
  void release(size_t index) override {
    if (index >= infos_.size()) return;
    release_mapped_bytes(file_, data_start_ + offsets_[index], infos_[index].nbytes);
  }

 private:
  std::string name_;
  Buffer file_;
  std::vector<uint64_t> offsets_;
  uint64_t data_start_;
};

class StreamReader final : public TensorReader {
 public:
  StreamReader(std::unique_ptr<InputStream> in, SafetensorsHeader header, bool size_checked)
      : in_(std::move(in)), offsets_(std::move(header.offsets)), data_size_(header.data_size), size_checked_(size_checked) {
    infos_ = std::move(header.tensors);
    metadata_ = std::move(header.metadata);
    if (data_size_ == 0) check_no_trailing_bytes();
  }

  FileFormat format() const override { return FileFormat::kSafetensors; }
  bool random_access() const override { return false; }

  Tensor read(size_t index) override {
    return located(in_->name(), [&] {
      seek_to(index);
      const TensorInfo& info = infos_[index];
      Buffer bytes = read_bytes(info.nbytes, info.name);
      finish_tensor(index);
      return Tensor(info.dtype, info.shape, std::move(bytes));
    });
  }

  void read_pieces(size_t index, size_t piece_bytes, const PieceSink& sink) override {
    located(in_->name(), [&] {
      if (piece_bytes == 0) throw internal_error("read_pieces with a piece size of 0");
      seek_to(index);
      const TensorInfo& info = infos_[index];
      piece_.resize(static_cast<size_t>(std::min<uint64_t>(info.nbytes, piece_bytes)));
      for (uint64_t done = 0; done < info.nbytes;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(info.nbytes - done, piece_bytes));
        size_t got = in_->read(piece_.data(), n);
        if (got != n)
          throw invalid_input("truncated data (" + std::to_string(done + got) + " of " + std::to_string(info.nbytes) +
                                  " bytes present)",
                              tensor_where(info.name));
        done += n;
        sink({piece_.data(), n});
      }
      finish_tensor(index);
    });
  }

 private:
  // Move to the start of tensor `index`, discarding the tensors before it.
  void seek_to(size_t index) {
    if (index >= infos_.size())
      throw usage_error("tensor index " + std::to_string(index) + " out of range (" + std::to_string(infos_.size()) +
                        " tensors)");
    if (index < next_)
      throw usage_error("this stream is read sequentially and has already passed this tensor",
                        tensor_where(infos_[index].name));
    for (; next_ < index; ++next_) skip_tensor(next_);
  }

  void finish_tensor(size_t index) {
    position_ = offsets_[index] + infos_[index].nbytes;
    next_ = index + 1;
    if (position_ == data_size_) check_no_trailing_bytes();
  }

  void skip_tensor(size_t i) {
    uint64_t end = offsets_[i] + infos_[i].nbytes;
    if (end <= position_) return;  // empty tensor
    try {
      in_->skip(end - position_, "data");
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      throw invalid_input("truncated data", tensor_where(infos_[i].name));
    }
    position_ = end;
  }

  // A buffer of `n` bytes to read into: the previous tensor's storage when the caller
  // has dropped every reference to it and it is large enough (a pipeline passes tensors
  // on one at a time, and fresh memory costs a page fault per page), else a new one.
  Buffer take_buffer(uint64_t n) {
    if (spare_.sole_owner() && spare_.size() >= n) return spare_.slice(0, static_cast<size_t>(n));
    spare_ = Buffer::allocate(static_cast<size_t>(n));
    return spare_.slice(0, static_cast<size_t>(n));
  }

  Buffer read_bytes(uint64_t n, const std::string& name) {
    if (size_checked_ || n <= kDirectAllocLimit) {
      Buffer b = take_buffer(n);
      uint64_t got = in_->read(b.mutable_data(), n);
      if (got != n) {
        if (size_checked_) throw invalid_input("truncated data", tensor_where(name));
        throw invalid_input("truncated data (" + std::to_string(got) + " of " + std::to_string(n) + " bytes present)",
                            tensor_where(name));
      }
      return b;
    }
    return detail::read_claimed_bytes(*in_, n, name);
  }

  void check_no_trailing_bytes() {
    if (!in_->peek(1).empty()) throw invalid_input("trailing bytes after the data");
  }

  std::unique_ptr<InputStream> in_;
  std::vector<uint64_t> offsets_;
  uint64_t data_size_;
  bool size_checked_;
  uint64_t position_ = 0;  // in the data buffer
  size_t next_ = 0;        // lowest index still readable
  Buffer spare_;           // storage of the last tensor read, reused once released
  std::vector<uint8_t> piece_;  // buffer of read_pieces
};

std::unique_ptr<TensorReader> open_mapped(const InputStream& in) {
  Buffer file = Buffer::map_file(in.path());
  uint64_t size = file.size();
  if (size < 8) throw invalid_input("file too short for a safetensors header (" + std::to_string(size) + " bytes)");
  uint64_t n = load_le<uint64_t>(file.data());
  check_header_length(n, size - 8);
  SafetensorsHeader header = safetensors_parse_header({file.data() + 8, static_cast<size_t>(n)});
  check_data_extent(header, size - 8 - n);
  return std::make_unique<MappedReader>(in.name(), std::move(file), std::move(header), 8 + n);
}

std::unique_ptr<TensorReader> open_stream(std::unique_ptr<InputStream> in) {
  std::optional<uint64_t> remaining;
  if (auto size = in->size()) remaining = *size >= in->position() ? *size - in->position() : 0;

  uint8_t prefix[8];
  size_t got = in->read(prefix, 8);
  if (got < 8) throw invalid_input("file too short for a safetensors header (" + std::to_string(got) + " bytes)");
  if (remaining) *remaining -= 8;
  uint64_t n = load_le<uint64_t>(prefix);
  check_header_length(n, remaining);

  // Grow with the bytes that arrive: a pipe claiming a 100 MB header costs no more
  // memory than it delivers.
  std::vector<uint8_t> text;
  while (text.size() < n) {
    size_t have = text.size();
    size_t want = static_cast<size_t>(std::min<uint64_t>(n - have, std::max(have, kReadStep)));
    text.resize(have + want);
    size_t r = in->read(text.data() + have, want);
    if (r < want)
      throw invalid_input("truncated header (" + std::to_string(have + r) + " of " + std::to_string(n) + " bytes)");
  }
  SafetensorsHeader header = safetensors_parse_header(text);
  if (remaining) check_data_extent(header, *remaining - n);
  return std::make_unique<StreamReader>(std::move(in), std::move(header), remaining.has_value());
}

}  // namespace

std::unique_ptr<TensorReader> safetensors_open(std::unique_ptr<InputStream> in, const ReadOptions& options) {
  std::string name = in->name();
  return located(name, [&]() -> std::unique_ptr<TensorReader> {
    if (options.allow_mmap && in->is_regular_file() && in->position() == 0) return open_mapped(*in);
    return open_stream(std::move(in));
  });
}

namespace detail {

Buffer read_claimed_bytes(InputStream& in, uint64_t n, const std::string& name) {
  auto truncated = [&](uint64_t have) {
    return invalid_input("truncated data (" + std::to_string(have) + " of " + std::to_string(n) + " bytes present)",
                         tensor_where(name));
  };
  if (n <= kDirectAllocLimit) {
    Buffer b = Buffer::allocate(static_cast<size_t>(n));
    const uint64_t got = n ? in.read(b.mutable_data(), static_cast<size_t>(n)) : 0;
    if (got != n) throw truncated(got);
    return b;
  }
  size_t cap = kReadStep;
  Buffer b = Buffer::allocate(cap);
  size_t have = 0;
  while (have < n) {
    if (have == cap) {
      size_t grown = static_cast<size_t>(std::min<uint64_t>(n, uint64_t{cap} * 2));
      Buffer bigger = Buffer::allocate(grown);
      std::memcpy(bigger.mutable_data(), b.data(), have);
      b = std::move(bigger);
      cap = grown;
    }
    size_t got = in.read(b.mutable_data() + have, cap - have);
    have += got;
    if (have < cap) throw truncated(have);
  }
  return b;
}

}  // namespace detail

}  // namespace tk::io
