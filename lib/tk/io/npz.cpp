#include "tk/io/npz.h"

#include <set>

#include "tk/core/error.h"
#include "tk/io/npy.h"
#include "tk/io/npy_header.h"
#include "tk/io/zip.h"

namespace tk::io {

namespace {

constexpr std::string_view kNpySuffix = ".npy";

class NpzReader final : public TensorReader {
 public:
  NpzReader(std::shared_ptr<const ZipArchive> archive, std::string name)
      : archive_(std::move(archive)), name_(std::move(name)) {
    const auto& entries = archive_->entries();
    for (size_t i = 0; i < entries.size(); ++i) {
      const ZipEntry& e = entries[i];
      if (!e.name.ends_with(kNpySuffix) || e.name.size() == kNpySuffix.size()) {
        if (!e.name.ends_with("/")) skipped_.push_back({e.name, "not a .npy entry"});
        continue;
      }
      const std::string tensor = e.name.substr(0, e.name.size() - kNpySuffix.size());
      const std::string where = name_ + ": array '" + tensor + "'";
      try {
        // The fixed prefix says how long the header is; only that much is inflated.
        Buffer prefix = archive_->read_prefix(i, 12);
        if (prefix.size() < 8) throw invalid_input("truncated .npy header");
        const size_t prefix_bytes = npy_prefix_size({prefix.data(), 8});
        if (prefix.size() < prefix_bytes) throw invalid_input("truncated .npy header");
        const NpyPrefix p = npy_parse_prefix({prefix.data(), prefix_bytes});
        Buffer head = archive_->read_prefix(i, prefix_bytes + p.header_bytes);
        NpyLayout layout = npy_parse_layout({head.data(), head.size()});
        if (e.bytes - std::min(e.bytes, layout.data_offset) != layout.data_bytes)
          throw invalid_input("the entry holds " + std::to_string(e.bytes - std::min(e.bytes, layout.data_offset)) +
                              " bytes of data where its header declares " + std::to_string(layout.data_bytes));
        TensorInfo info;
        info.name = tensor;
        info.dtype = layout.header.dtype;
        info.shape = layout.header.shape;
        info.nbytes = layout.data_bytes;
        infos_.push_back(std::move(info));
        arrays_.push_back({i, std::move(layout)});
      } catch (const Error& err) {
        if (!err.where().empty()) throw;
        throw err.with_context(where);
      }
    }
  }

  FileFormat format() const override { return FileFormat::kNpz; }
  bool random_access() const override { return true; }

  // A deflated array in row-major order and little-endian is inflated a piece at a
  // time: its entry may hold a thousand times the file's bytes.
  void read_pieces(size_t index, size_t piece_bytes, const PieceSink& sink) override {
    const Array& a = arrays_.at(index);
    const NpyHeader& h = a.layout.header;
    const bool fortran = h.fortran_order && h.shape.size() > 1;
    if (!archive_->entries()[a.entry].deflated || fortran || h.big_endian)
      return TensorReader::read_pieces(index, piece_bytes, sink);
    try {
      archive_->read_pieces(a.entry, a.layout.data_offset, a.layout.data_bytes, piece_bytes, sink);
    } catch (const Error& e) {
      if (!e.where().empty()) throw;
      throw e.with_context(name_ + ": array '" + infos_[index].name + "'");
    }
  }

  Tensor read(size_t index) override {
    const Array& a = arrays_.at(index);
    try {
      Buffer entry = archive_->read(a.entry);
      const bool owned = archive_->entries()[a.entry].deflated;
      return npy_decode(a.layout.header, entry.slice(a.layout.data_offset, a.layout.data_bytes), owned);
    } catch (const Error& e) {
      if (!e.where().empty()) throw;
      throw e.with_context(name_ + ": array '" + infos_[index].name + "'");
    }
  }

 private:
  struct Array {
    size_t entry;
    NpyLayout layout;
  };
  std::shared_ptr<const ZipArchive> archive_;
  std::string name_;
  std::vector<Array> arrays_;
};

class NpzWriter final : public TensorWriter {
 public:
  explicit NpzWriter(std::unique_ptr<OutputStream> out) : out_(std::move(out)), zip_(*out_) {}

  std::vector<size_t> begin(const std::vector<TensorInfo>& infos, const Metadata&) override {
    if (begun_) throw internal_error("begin() called twice", out_->name());
    std::set<std::string_view> names;
    for (const TensorInfo& info : infos) {
      const std::string where = out_->name() + ": tensor '" + info.name + "'";
      if (!npy_descr(info.dtype))
        throw usage_error(std::string("dtype ") + dtype_name(info.dtype) +
                              " cannot be stored in .npz (NumPy has no such type)",
                          where)
            .with_option("io.npy_dtype");
      if (info.name.empty()) throw usage_error("an .npz array needs a name", where);
      if (!names.insert(info.name).second) throw usage_error("duplicate tensor name", where);
    }
    infos_ = infos;
    written_.assign(infos.size(), false);
    begun_ = true;
    std::vector<size_t> order(infos.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    return order;
  }

  void write(size_t index, const Tensor& tensor) override {
    if (!begun_ || index >= infos_.size()) throw internal_error("write() of an undeclared tensor", out_->name());
    const TensorInfo& info = infos_[index];
    const std::string where = out_->name() + ": tensor '" + info.name + "'";
    if (written_[index]) throw internal_error("tensor written twice", where);
    if (tensor.dtype() != info.dtype || tensor.shape() != info.shape)
      throw internal_error("tensor does not match its declaration", where);
    const std::vector<uint8_t> header = npy_make_header(info.dtype, info.shape);
    zip_.add(info.name + std::string(kNpySuffix), header, {tensor.data(), tensor.nbytes()});
    written_[index] = true;
  }

  void finish() override {
    if (!begun_) throw internal_error("finish() before begin()", out_->name());
    for (size_t i = 0; i < infos_.size(); ++i)
      if (!written_[i]) throw internal_error("tensor '" + infos_[i].name + "' was declared but never written", out_->name());
    zip_.finish();
    out_->commit();
  }

 private:
  std::unique_ptr<OutputStream> out_;
  ZipWriter zip_;
  std::vector<TensorInfo> infos_;
  std::vector<bool> written_;
  bool begun_ = false;
};

}  // namespace

std::unique_ptr<TensorReader> npz_open(std::shared_ptr<const ZipArchive> archive, const std::string& name) {
  return std::make_unique<NpzReader>(std::move(archive), name);
}

std::unique_ptr<TensorWriter> npz_writer(std::unique_ptr<OutputStream> out) {
  return std::make_unique<NpzWriter>(std::move(out));
}

}  // namespace tk::io
