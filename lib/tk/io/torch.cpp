#include "tk/io/torch.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "tk/core/error.h"
#include "tk/io/torch_pickle.h"
#include "tk/io/zip.h"

namespace tk::io {

namespace {

// The pickle of a torch.save archive: NAME/data.pkl, one level down.
bool is_pickle_entry(const std::string& name) {
  const size_t slash = name.find('/');
  return slash != std::string::npos && name.compare(slash + 1, std::string::npos, "data.pkl") == 0;
}

// The source offsets (in elements) of a strided view's elements in row-major order, a
// run at a time: the innermost dimension is one run of `shape.back()` elements
// `stride.back()` apart. For copying a view out in pieces without holding it whole.
class StridedCursor {
 public:
  StridedCursor(const Shape& shape, const std::vector<int64_t>& stride)
      : shape_(shape), stride_(stride), index_(shape.size(), 0) {}
  uint64_t run_length() const { return shape_.empty() ? 1 : static_cast<uint64_t>(shape_.back()); }
  uint64_t run_stride() const { return shape_.empty() ? 0 : static_cast<uint64_t>(stride_.back()); }
  uint64_t at() const { return at_; }
  // Move to run `run` (counted from the first, in row-major order).
  void seek(uint64_t run) {
    at_ = 0;
    for (size_t k = shape_.size() - (shape_.empty() ? 0 : 1); k-- > 0;) {
      index_[k] = static_cast<int64_t>(run % static_cast<uint64_t>(shape_[k]));
      run /= static_cast<uint64_t>(shape_[k]);
      at_ += static_cast<uint64_t>(index_[k]) * static_cast<uint64_t>(stride_[k]);
    }
  }
  // Move to the next run.
  void next() {
    for (size_t k = shape_.size() - (shape_.empty() ? 0 : 1); k-- > 0;) {
      at_ += static_cast<uint64_t>(stride_[k]);
      if (++index_[k] < shape_[k]) return;
      at_ -= static_cast<uint64_t>(stride_[k]) * static_cast<uint64_t>(shape_[k]);
      index_[k] = 0;
    }
  }

 private:
  const Shape& shape_;
  const std::vector<int64_t>& stride_;
  std::vector<int64_t> index_;
  uint64_t at_ = 0;  // source offset of the current run's first element
};

template <typename T> void copy_strided(const uint8_t* src, uint64_t stride, uint64_t count, uint8_t* dst) {
  T v;
  if (stride == 0) {  // one element repeated: a broadcast view
    std::memcpy(&v, src, sizeof v);
    for (uint64_t k = 0; k < count; ++k) std::memcpy(dst + k * sizeof v, &v, sizeof v);
    return;
  }
  for (uint64_t k = 0; k < count; ++k) {
    std::memcpy(&v, src + k * stride * sizeof v, sizeof v);
    std::memcpy(dst + k * sizeof v, &v, sizeof v);
  }
}

// Copy the elements [first, first + count) of the run at source element `at` (elements
// `stride` apart) to `dst`.
void copy_run(const uint8_t* src, uint64_t at, uint64_t stride, uint64_t first, uint64_t count, size_t elem,
              uint8_t* dst) {
  src += (at + first * stride) * elem;
  if (stride == 1) return static_cast<void>(std::memcpy(dst, src, count * elem));
  switch (elem) {
    case 1: return copy_strided<uint8_t>(src, stride, count, dst);
    case 2: return copy_strided<uint16_t>(src, stride, count, dst);
    case 4: return copy_strided<uint32_t>(src, stride, count, dst);
    case 8: return copy_strided<uint64_t>(src, stride, count, dst);
    default:
      for (uint64_t k = 0; k < count; ++k) std::memcpy(dst + k * elem, src + k * stride * elem, elem);
  }
}

class TorchReader final : public TensorReader {
 public:
  TorchReader(std::shared_ptr<const ZipArchive> archive, std::string name, const std::string& stem)
      : archive_(std::move(archive)), name_(std::move(name)) {
    const std::string pkl = find_pickle();
    prefix_ = pkl.substr(0, pkl.size() - std::strlen("data.pkl"));
    if (auto order = archive_->find(prefix_ + "byteorder")) {
      Buffer b = archive_->read(*order);
      if (std::string_view(reinterpret_cast<const char*>(b.data()), b.size()) != "little")
        throw invalid_input("unsupported PyTorch checkpoint: big-endian storages", name_);
    }
    Buffer pickle = archive_->read(*archive_->find(pkl));
    PickleContents contents = torch_read_pickle({pickle.data(), pickle.size()}, name_ + ": " + pkl, stem);
    skipped_ = std::move(contents.skipped);
    infos_.reserve(contents.tensors.size());
    views_.reserve(contents.tensors.size());
    for (PickledTensor& t : contents.tensors) add(std::move(t));
  }

  FileFormat format() const override { return FileFormat::kTorch; }
  bool random_access() const override { return true; }

  Tensor read(size_t index) override {
    const View& v = views_.at(index);
    const TensorInfo& info = infos_[index];
    return located(index, [&] {
      Buffer storage = archive_->read(v.entry);  // its size was checked when listed
      const size_t elem = static_cast<size_t>(dtype_bits(info.dtype) / 8);
      const uint64_t start = v.offset * elem;
      const bool aligned = reinterpret_cast<uintptr_t>(storage.data() + start) % dtype_traits(info.dtype).alignment == 0;
      if (v.contiguous && aligned) return Tensor(info.dtype, info.shape, storage.slice(start, info.nbytes));
      Tensor out = Tensor::empty(info.dtype, info.shape);
      if (info.nbytes) gather(storage, info.shape, v, elem, 0, info.nbytes, out.mutable_data());
      return out;
    });
  }

  // A view is copied out a piece at a time: a small storage viewed with stride 0 as
  // gigabytes never becomes a buffer of gigabytes.
  void read_pieces(size_t index, size_t piece_bytes, const PieceSink& sink) override {
    const View& v = views_.at(index);
    if (v.contiguous) return TensorReader::read_pieces(index, piece_bytes, sink);
    if (piece_bytes == 0) throw internal_error("read_pieces with a piece size of 0");
    const TensorInfo& info = infos_[index];
    located(index, [&] {
      Buffer storage = archive_->read(v.entry);
      const size_t elem = static_cast<size_t>(dtype_bits(info.dtype) / 8);
      std::vector<uint8_t> piece(static_cast<size_t>(std::min<uint64_t>(piece_bytes, info.nbytes)));
      for (uint64_t at = 0; at < info.nbytes; at += piece.size()) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(piece.size(), info.nbytes - at));
        gather(storage, info.shape, v, elem, at, n, piece.data());
        sink({piece.data(), n});
      }
      return 0;
    });
  }

 private:
  // Where a listed tensor's elements lie: its storage's entry, and the view into it.
  struct View {
    size_t entry;
    uint64_t offset;
    std::vector<int64_t> stride;
    bool contiguous;
  };

  template <typename Fn> auto located(size_t index, Fn&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const Error& e) {
      if (!e.where().empty()) throw;
      throw e.with_context(name_ + ": tensor '" + infos_[index].name + "'");
    }
  }

  // Bytes [from, from + n) (not empty) of the row-major copy of view `v` of `storage` into `dst`.
  static void gather(const Buffer& storage, const Shape& shape, const View& v, size_t elem, uint64_t from, size_t n,
                     uint8_t* dst) {
    const uint8_t* src = storage.data() + v.offset * elem;
    StridedCursor cursor(shape, v.stride);
    const uint64_t run_bytes = cursor.run_length() * elem;
    uint64_t run = from / run_bytes;
    cursor.seek(run);
    uint64_t in_run = from - run * run_bytes;
    std::vector<uint8_t> one(elem);
    while (n > 0) {
      const uint64_t first = in_run / elem, skip = in_run % elem;
      if (skip != 0 || n < elem) {  // a piece boundary splits this element
        copy_run(src, cursor.at(), cursor.run_stride(), first, 1, elem, one.data());
        const size_t take = static_cast<size_t>(std::min<uint64_t>(elem - skip, n));
        std::memcpy(dst, one.data() + skip, take);
        dst += take, n -= take, in_run += take;
      } else {
        const uint64_t count = std::min<uint64_t>(cursor.run_length() - first, n / elem);
        copy_run(src, cursor.at(), cursor.run_stride(), first, count, elem, dst);
        dst += count * elem, n -= static_cast<size_t>(count * elem), in_run += count * elem;
      }
      if (in_run == run_bytes) {
        cursor.next();
        in_run = 0;
      }
    }
  }

  std::string find_pickle() const {
    std::string pkl;
    for (const ZipEntry& e : archive_->entries()) {
      if (!is_pickle_entry(e.name)) continue;
      if (!pkl.empty()) throw invalid_input("a PyTorch archive with two data.pkl records", name_);
      pkl = e.name;
    }
    if (pkl.empty()) throw invalid_input("a zip archive without data.pkl is not a PyTorch checkpoint", name_);
    return pkl;
  }

  void add(PickledTensor t) {
    const std::string where = name_ + ": tensor '" + t.name + "'";
    TensorInfo info;
    info.name = std::move(t.name);
    info.dtype = t.dtype;
    info.shape = t.shape;
    const uint64_t numel = shape_numel(info.shape);
    info.nbytes = dtype_storage_bytes(info.dtype, numel);
    const uint64_t elem = static_cast<uint64_t>(dtype_bits(info.dtype) / 8);
    const std::string& key = t.storage_key;
    const uint64_t storage_bytes = t.storage_bytes;
    View v;
    v.offset = t.offset;
    v.stride = std::move(t.stride);
    auto entry = archive_->find(prefix_ + "data/" + key);
    if (!entry) throw invalid_input("storage '" + key + "' is not in the archive", where);
    v.entry = *entry;
    // The last element the view reaches, which must lie inside the storage.
    uint64_t last = v.offset;
    v.contiguous = true;
    uint64_t expect = 1;
    for (size_t k = info.shape.size(); k-- > 0;) {
      const uint64_t n = static_cast<uint64_t>(info.shape[k]), s = static_cast<uint64_t>(v.stride[k]);
      if (n > 1 && s != expect) v.contiguous = false;
      expect *= n;
      if (n > 0 && s > 0 && (n - 1) > (std::numeric_limits<uint64_t>::max() / 4 - last) / s)
        throw invalid_input("a tensor view that overflows", where);
      if (n > 0) last += (n - 1) * s;
    }
    if (numel > 0 && (last >= std::numeric_limits<uint64_t>::max() / elem || (last + 1) * elem > storage_bytes))
      throw invalid_input("tensor view reaches past its storage '" + key + "' (" + std::to_string(storage_bytes) +
                              " bytes)",
                          where);
    if (archive_->entries()[v.entry].bytes != storage_bytes)
      throw invalid_input("storage '" + key + "' holds " + std::to_string(archive_->entries()[v.entry].bytes) +
                              " bytes, not the " + std::to_string(storage_bytes) + " its id declares",
                          where);
    infos_.push_back(std::move(info));
    views_.push_back(std::move(v));
  }

  std::shared_ptr<const ZipArchive> archive_;
  std::string name_, prefix_;
  std::vector<View> views_;
};

}  // namespace

bool torch_is_archive(const ZipArchive& archive) {
  const ZipEntry* pickle = nullptr;
  const ZipEntry* array = nullptr;  // the first .npy entry
  size_t files = 0;
  for (const ZipEntry& e : archive.entries()) {
    if (e.name.ends_with("/")) continue;  // a directory
    ++files;
    if (is_pickle_entry(e.name) && !pickle) pickle = &e;
    if (e.name.ends_with(".npy") && !array) array = &e;
  }
  if (pickle) {
    // .npy entries beside the checkpoint's own entries (all under its prefix) would be
    // arrays of an .npz, and which of the two was meant cannot be told.
    const std::string prefix = pickle->name.substr(0, pickle->name.size() - std::strlen("data.pkl"));
    for (const ZipEntry& e : archive.entries())
      if (e.name.ends_with(".npy") && !e.name.starts_with(prefix))
        throw invalid_input("a zip archive holding both .npy arrays ('" + e.name + "') and a PyTorch pickle ('" +
                            pickle->name + "'): neither an .npz nor a torch.save checkpoint");
    return true;
  }
  if (files > 0 && !array)
    throw invalid_input("a zip archive without .npy arrays or a PyTorch data.pkl: neither an .npz nor a torch.save "
                        "checkpoint");
  return false;
}

std::unique_ptr<TensorReader> torch_open(std::shared_ptr<const ZipArchive> archive, const std::string& name,
                                         const std::string& stem) {
  return std::make_unique<TorchReader>(std::move(archive), name, stem);
}

std::string torch_legacy_message() {
  return "a pickle, not a PyTorch zip checkpoint: only the zip format of torch.save (PyTorch 1.6 and later) is "
         "read; load it with torch and save it again, or as safetensors";
}

}  // namespace tk::io
