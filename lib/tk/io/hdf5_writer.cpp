// HDF5 writer: one dataset per tensor, written as it arrives; '/' in names creates
// groups; metadata as variable-length UTF-8 string attributes of the root group.
// Types are those h5py writes (see hdf5_types.h), with BF16 committed as the named type
// /bfloat16 and the narrow floats as uint8 plus a `tk_dtype` attribute (sub-byte types
// as a 1-D array of their packed bytes plus an int64 `tk_shape` attribute).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "tk/io/hdf5.h"
#include "tk/io/hdf5_types.h"
#include "tk/io/temp_file.h"

namespace tk::io {

namespace {

using hdf5::Hid;

constexpr H5Z_filter_t kZstdFilterId = 32015;
constexpr uint64_t kMaxChunkBytes = uint64_t(1) << 30;  // HDF5 allows < 4 GiB per chunk

// HDF5 names are C strings: a name holding a NUL would be stored cut at it, as another
// name, perhaps one that another tensor has. Such a name is refused (it comes from the
// input, so kInvalidInput), naming the tensor it would collide with when there is one.
void check_no_nul(const std::vector<TensorInfo>& infos) {
  std::map<std::string, const std::string*> stored;  // the name HDF5 would store -> one tensor
  for (const auto& info : infos)
    if (info.name.find('\0') == std::string::npos) stored.emplace(info.name, &info.name);
  for (const auto& info : infos) {
    size_t nul = info.name.find('\0');
    if (nul == std::string::npos) continue;
    auto [other, fresh] = stored.emplace(info.name.substr(0, nul), &info.name);
    if (!fresh)
      throw invalid_input("tensor names '" + *other->second + "' and '" + info.name +
                              "' are the same name in HDF5, which ends a name at its first NUL",
                          "tensor '" + info.name + "'");
    throw invalid_input("HDF5 cannot store a tensor name that holds a NUL", "tensor '" + info.name + "'");
  }
}

// Check that `names` can all be dataset paths of one file: no NUL, non-empty components,
// no "." or "..", no duplicates, and no dataset that is also a group of another.
void check_names(const std::vector<TensorInfo>& infos) {
  check_no_nul(infos);
  std::set<std::string> names;
  for (const auto& info : infos) {
    const std::string& n = info.name;
    if (n.empty()) throw usage_error("HDF5 cannot store a tensor with an empty name");
    size_t start = 0;
    while (true) {
      size_t slash = n.find('/', start);
      std::string part = n.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      if (part.empty() || part == "." || part == "..")
        throw usage_error("tensor name is not a valid HDF5 path", "tensor '" + n + "'");
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    if (!names.insert(n).second) throw usage_error("duplicate tensor name", "tensor '" + n + "'");
  }
  // In sorted order a group "a" is followed by its members "a/...", possibly after
  // names such as "a-b" that sort between; compare with every later name sharing the prefix.
  for (auto it = names.begin(); it != names.end(); ++it) {
    std::string group = *it + "/";
    auto next = names.lower_bound(group);
    if (next != names.end() && next->compare(0, group.size(), group) == 0)
      throw usage_error("tensor name is also a group of tensor '" + *next + "'", "tensor '" + *it + "'");
  }
}

// Chunk dimensions of about `target` bytes: keep trailing dimensions whole and split the
// leading ones.
std::vector<hsize_t> chunk_dims(const std::vector<hsize_t>& dims, uint64_t element_bytes, uint64_t target) {
  target = std::clamp<uint64_t>(target, element_bytes, kMaxChunkBytes);
  std::vector<hsize_t> chunk(dims.size(), 1);
  uint64_t inner = element_bytes;  // bytes of one step along dimension i
  size_t i = dims.size();
  while (i > 0 && dims[i - 1] <= target / inner) {
    chunk[i - 1] = dims[i - 1];
    inner *= dims[i - 1];
    --i;
  }
  if (i > 0) chunk[i - 1] = std::max<hsize_t>(1, std::min<hsize_t>(dims[i - 1], target / inner));
  return chunk;
}

class Hdf5Writer final : public TensorWriter {
 public:
  Hdf5Writer(std::unique_ptr<OutputStream> out, const WriteOptions& options)
      : out_(std::move(out)), options_(options) {
    hdf5::init();
  }
  ~Hdf5Writer() override {
    pieces_.reset();
    bf16_type_.reset();
    file_.reset();  // the OutputStream then removes its temporary file
  }

  std::vector<size_t> begin(const std::vector<TensorInfo>& infos, const Metadata& metadata) override;
  void write(size_t index, const Tensor& tensor) override;
  bool begin_pieces(size_t index) override;
  void write_piece(std::span<const uint8_t> bytes) override;
  void end_pieces() override;
  void finish() override;

 private:
  // A dataset being written: its file dataspace, dimensions and memory type.
  struct Dataset {
    std::string loc;
    std::vector<hsize_t> dims;
    uint64_t elements = 1;  // the product of dims
    Hid space, mem_type, dset;
  };
  Dataset create_dataset(size_t index);
  void close_dataset(size_t index, Dataset& d);
  void create_file();
  void write_metadata(const Metadata& metadata);
  void commit_bf16_type();
  Hid dataset_properties(const std::vector<hsize_t>& dims, uint64_t element_bytes);
  void write_narrow_attributes(hid_t dset, const TensorInfo& info, const std::string& loc);

  std::unique_ptr<OutputStream> out_;
  WriteOptions options_;
  TempFile spool_;  // stdout or memory: the file HDF5 writes; outlives file_
  Hid file_;
  Hid bf16_type_;  // committed named datatype, when a tensor is BF16
  std::string bf16_type_name_ = "bfloat16";
  std::vector<TensorInfo> infos_;
  std::vector<bool> written_;
  bool began_ = false;
  // The tensor written in pieces, if any.
  std::optional<Dataset> pieces_;
  size_t piece_index_ = 0;
  size_t piece_element_ = 1;     // bytes of one element
  uint64_t piece_written_ = 0;   // elements written
  std::vector<uint8_t> carry_;   // bytes of an element split between pieces
};

void Hdf5Writer::create_file() {
  const std::string& where = out_->name();
  auto path = out_->temp_path();
  if (path) {
    file_ = Hid(H5Fcreate(path->c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  } else if (spool_.create("tk-hdf5")) {
    // stdout or memory: HDF5 writes by seeking, so it writes a temporary file, copied
    // out at the end; its name is gone once HDF5 has it open.
    file_ = Hid(H5Fcreate(spool_.path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    spool_.remove_name();
  } else {
    // stdout or memory: build the file in memory and copy its image out at the end.
    Hid fapl(hdf5::check(H5Pcreate(H5P_FILE_ACCESS), ErrorKind::kInternal, "cannot create a property list", where));
    hdf5::check_status(H5Pset_fapl_core(fapl.get(), 1 << 20, false), ErrorKind::kInternal,
                       "cannot select the in-memory driver", where);
    static std::atomic<uint64_t> counter{0};
    std::string label = "tk-output-" + std::to_string(counter++);
    file_ = Hid(H5Fcreate(label.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  }
  if (!file_.valid()) throw hdf5::error(ErrorKind::kIo, "cannot create HDF5 file", where);
}

std::vector<size_t> Hdf5Writer::begin(const std::vector<TensorInfo>& infos, const Metadata& metadata) {
  if (began_) throw internal_error("begin() called twice", out_->name());
  check_names(infos);
  for (const auto& info : infos) {
    shape_numel(info.shape);
    if (info.nbytes != dtype_storage_bytes(info.dtype, shape_numel(info.shape)))
      throw internal_error("declared byte size does not match dtype and shape", "tensor '" + info.name + "'");
    // Keep the named bf16 type clear of tensor and group names.
    std::string top = info.name.substr(0, info.name.find('/'));
    while (top == bf16_type_name_) bf16_type_name_ += "_t";
  }
  infos_ = infos;
  written_.assign(infos.size(), false);
  began_ = true;
  create_file();
  write_metadata(metadata);
  for (const auto& info : infos_)
    if (info.dtype == DType::kBF16) {
      commit_bf16_type();
      break;
    }
  std::vector<size_t> order(infos.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

// A scalar variable-length UTF-8 string attribute, which h5py reads as str.
void write_string_attribute(hid_t obj, const std::string& key, const std::string& value, const std::string& where) {
  Hid type(hdf5::check(H5Tcopy(H5T_C_S1), ErrorKind::kInternal, "cannot create a string type", where));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Hid space(hdf5::check(H5Screate(H5S_SCALAR), ErrorKind::kInternal, "cannot create a dataspace", where));
  Hid attr(H5Acreate2(obj, key.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid()) throw hdf5::error(ErrorKind::kUsage, "cannot create attribute '" + key + "'", where);
  const char* text = value.c_str();
  hdf5::check_status(H5Awrite(attr.get(), type.get(), &text), ErrorKind::kIo, "cannot write an attribute", where);
}

void Hdf5Writer::write_metadata(const Metadata& metadata) {
  for (const auto& [key, value] : metadata) {
    if (key.empty()) throw usage_error("HDF5 cannot store a metadata entry with an empty key", out_->name());
    // Attribute names and string values are C strings in HDF5 (see check_no_nul).
    if (key.find('\0') != std::string::npos || value.find('\0') != std::string::npos)
      throw invalid_input("HDF5 cannot store a metadata key or value that holds a NUL",
                          out_->name() + ": metadata '" + key + "'");
    write_string_attribute(file_.get(), key, value, out_->name() + ": metadata '" + key + "'");
  }
}

void Hdf5Writer::commit_bf16_type() {
  bf16_type_ = hdf5::make_type(DType::kBF16);
  hdf5::check_status(H5Tcommit2(file_.get(), bf16_type_name_.c_str(), bf16_type_.get(), H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT),
                     ErrorKind::kIo, "cannot store the bfloat16 type", out_->name());
}

Hid Hdf5Writer::dataset_properties(const std::vector<hsize_t>& dims, uint64_t element_bytes) {
  const std::string& where = out_->name();
  Hid dcpl(hdf5::check(H5Pcreate(H5P_DATASET_CREATE), ErrorKind::kInternal, "cannot create a property list", where));
  H5Pset_obj_track_times(dcpl.get(), false);  // identical inputs give identical files
  bool empty = std::find(dims.begin(), dims.end(), hsize_t(0)) != dims.end();
  if (options_.hdf5_zstd_level > 0 && !dims.empty() && !empty) {
    auto chunk = chunk_dims(dims, element_bytes, options_.hdf5_chunk_bytes);
    hdf5::check_status(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
                       ErrorKind::kInternal, "cannot set the chunk shape", where);
    unsigned level = static_cast<unsigned>(options_.hdf5_zstd_level);
    // Optional: a chunk that does not shrink is stored as it is.
    hdf5::check_status(H5Pset_filter(dcpl.get(), kZstdFilterId, H5Z_FLAG_OPTIONAL, 1, &level),
                       ErrorKind::kInternal, "cannot add the zstd filter", where);
  }
  return dcpl;
}

void Hdf5Writer::write_narrow_attributes(hid_t dset, const TensorInfo& info, const std::string& loc) {
  write_string_attribute(dset, "tk_dtype", dtype_name(info.dtype), loc);
  if (dtype_bits(info.dtype) >= 8) return;
  hsize_t rank = info.shape.size();
  Hid space(hdf5::check(H5Screate_simple(1, &rank, nullptr), ErrorKind::kInternal, "cannot create a dataspace", loc));
  Hid attr(hdf5::check(H5Acreate2(dset, "tk_shape", H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                       ErrorKind::kIo, "cannot create attribute tk_shape", loc));
  hdf5::check_status(H5Awrite(attr.get(), H5T_NATIVE_INT64, info.shape.data()), ErrorKind::kIo,
                     "cannot write attribute tk_shape", loc);
}

Hdf5Writer::Dataset Hdf5Writer::create_dataset(size_t index) {
  if (!began_) throw internal_error("write() before begin()", out_->name());
  if (index >= infos_.size()) throw internal_error("tensor index out of range", out_->name());
  const TensorInfo& info = infos_[index];
  Dataset d;
  d.loc = out_->name() + ": tensor '" + info.name + "'";
  if (written_[index]) throw internal_error("tensor written twice", d.loc);
  hdf5::init();

  if (dtype_bits(info.dtype) < 8) d.dims.push_back(info.nbytes);
  else for (int64_t dim : info.shape) d.dims.push_back(static_cast<hsize_t>(dim));
  for (hsize_t dim : d.dims) d.elements *= dim;
  d.space = Hid(d.dims.empty() ? H5Screate(H5S_SCALAR)
                               : H5Screate_simple(static_cast<int>(d.dims.size()), d.dims.data(), nullptr));
  if (!d.space.valid()) throw hdf5::error(ErrorKind::kInternal, "cannot create a dataspace", d.loc);

  d.mem_type = hdf5::make_type(info.dtype);
  hid_t file_type = info.dtype == DType::kBF16 ? bf16_type_.get() : d.mem_type.get();
  Hid dcpl = dataset_properties(d.dims, H5Tget_size(d.mem_type.get()));
  Hid lcpl(hdf5::check(H5Pcreate(H5P_LINK_CREATE), ErrorKind::kInternal, "cannot create a property list", d.loc));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  H5Pset_char_encoding(lcpl.get(), H5T_CSET_UTF8);
  d.dset = Hid(H5Dcreate2(file_.get(), info.name.c_str(), file_type, d.space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT));
  if (!d.dset.valid()) throw hdf5::error(ErrorKind::kIo, "cannot create dataset", d.loc);
  return d;
}

void Hdf5Writer::close_dataset(size_t index, Dataset& d) {
  const TensorInfo& info = infos_[index];
  if (hdf5::is_narrow_float(info.dtype)) write_narrow_attributes(d.dset.get(), info, d.loc);
  if (!d.dset.close()) throw hdf5::error(ErrorKind::kIo, "cannot close dataset", d.loc);
  written_[index] = true;
}

void Hdf5Writer::write(size_t index, const Tensor& tensor) {
  Dataset d = create_dataset(index);
  const TensorInfo& info = infos_[index];
  if (tensor.dtype() != info.dtype || tensor.shape() != info.shape)
    throw internal_error("tensor does not match its declaration", d.loc);
  if (info.nbytes > 0 &&
      H5Dwrite(d.dset.get(), d.mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, tensor.data()) < 0)
    throw hdf5::error(ErrorKind::kIo, "cannot write dataset", d.loc);
  close_dataset(index, d);
}

// Select elements [first, first + count) of a row-major dataspace of `dims`, as a union
// of at most 2 x rank hyperslabs: at each step the largest block that starts where the
// range is and fits in what is left.
void select_flat_range(hid_t space, const std::vector<hsize_t>& dims, uint64_t first, uint64_t count,
                       const std::string& loc) {
  const size_t rank = dims.size();
  std::vector<uint64_t> step(rank, 1);  // elements per step along each dimension
  for (size_t i = rank - 1; i-- > 0;) step[i] = step[i + 1] * dims[i + 1];
  hdf5::check_status(H5Sselect_none(space), ErrorKind::kInternal, "cannot select in a dataspace", loc);
  std::vector<hsize_t> start(rank), block(rank);
  for (uint64_t at = first, end = first + count; at < end;) {
    size_t j = 0;
    while (j + 1 < rank && (at % step[j] != 0 || step[j] > end - at)) ++j;
    for (size_t i = 0; i < rank; ++i) {
      start[i] = at / step[i] % dims[i];
      block[i] = i < j ? 1 : dims[i];  // dimensions after j start at 0: `at` is on a step of j
    }
    block[j] = std::min<uint64_t>((end - at) / step[j], dims[j] - start[j]);
    hdf5::check_status(H5Sselect_hyperslab(space, H5S_SELECT_OR, start.data(), nullptr, block.data(), nullptr),
                       ErrorKind::kInternal, "cannot select in a dataspace", loc);
    at += block[j] * step[j];
  }
}

// Pieces are written as hyperslabs of whole elements; the bytes of an element split
// between two pieces wait in `carry_`.
bool Hdf5Writer::begin_pieces(size_t index) {
  if (index >= infos_.size() || infos_[index].shape.empty() || pieces_) return false;
  pieces_.emplace(create_dataset(index));
  piece_index_ = index;
  piece_element_ = H5Tget_size(pieces_->mem_type.get());
  piece_written_ = 0;
  carry_.clear();
  return true;
}

void Hdf5Writer::write_piece(std::span<const uint8_t> bytes) {
  if (!pieces_) throw internal_error("write_piece() without a successful begin_pieces()", out_->name());
  Dataset& d = *pieces_;
  if (carry_.size() + bytes.size() > (d.elements - piece_written_) * piece_element_)
    throw usage_error("more bytes written than declared", d.loc);
  const auto write_elements = [&](const uint8_t* data, uint64_t elements) {
    if (elements == 0) return;
    select_flat_range(d.space.get(), d.dims, piece_written_, elements, d.loc);
    const hsize_t n = elements;
    Hid mem_space(hdf5::check(H5Screate_simple(1, &n, nullptr), ErrorKind::kInternal, "cannot create a dataspace", d.loc));
    if (H5Dwrite(d.dset.get(), d.mem_type.get(), mem_space.get(), d.space.get(), H5P_DEFAULT, data) < 0)
      throw hdf5::error(ErrorKind::kIo, "cannot write dataset", d.loc);
    piece_written_ += elements;
  };
  if (!carry_.empty()) {
    const size_t take = std::min(bytes.size(), piece_element_ - carry_.size());
    carry_.insert(carry_.end(), bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(take));
    bytes = bytes.subspan(take);
    if (carry_.size() < piece_element_) return;
    write_elements(carry_.data(), 1);
    carry_.clear();
  }
  const uint64_t whole = bytes.size() / piece_element_;
  write_elements(bytes.data(), whole);
  carry_.assign(bytes.begin() + static_cast<ptrdiff_t>(whole * piece_element_), bytes.end());
}

void Hdf5Writer::end_pieces() {
  if (!pieces_) throw internal_error("end_pieces() without a successful begin_pieces()", out_->name());
  const uint64_t total = pieces_->elements;
  if (piece_written_ != total || !carry_.empty())
    throw usage_error(std::to_string((total - piece_written_) * piece_element_ - carry_.size()) +
                          " bytes fewer written than declared",
                      pieces_->loc);
  close_dataset(piece_index_, *pieces_);
  pieces_.reset();
}

void Hdf5Writer::finish() {
  const std::string& where = out_->name();
  hdf5::init();
  if (!began_) begin({}, {});
  for (size_t i = 0; i < infos_.size(); ++i)
    if (!written_[i]) throw internal_error("tensor declared but never written", where + ": tensor '" + infos_[i].name + "'");
  bf16_type_.reset();
  if (out_->temp_path()) {
    if (!file_.close()) throw hdf5::error(ErrorKind::kIo, "cannot complete HDF5 file", where);
  } else if (spool_.fd() >= 0) {
    if (!file_.close()) throw hdf5::error(ErrorKind::kIo, "cannot complete HDF5 file", where);
    std::vector<uint8_t> piece(1 << 20);
    for (off_t at = 0;;) {
      const ssize_t got = ::pread(spool_.fd(), piece.data(), piece.size(), at);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw errno_error("cannot read back the HDF5 file", where, errno);
      if (got == 0) break;
      out_->write(piece.data(), static_cast<size_t>(got));
      at += got;
    }
  } else {
    hdf5::check_status(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), ErrorKind::kIo, "cannot complete HDF5 file", where);
    ssize_t size = H5Fget_file_image(file_.get(), nullptr, 0);
    if (size < 0) throw hdf5::error(ErrorKind::kInternal, "cannot get the HDF5 file image", where);
    std::vector<uint8_t> image(static_cast<size_t>(size));
    if (H5Fget_file_image(file_.get(), image.data(), image.size()) != size)
      throw hdf5::error(ErrorKind::kInternal, "cannot get the HDF5 file image", where);
    file_.reset();
    out_->write(image.data(), image.size());
  }
  out_->commit();
}

}  // namespace

std::unique_ptr<TensorWriter> hdf5_writer(std::unique_ptr<OutputStream> out, const WriteOptions& options) {
  if (options.hdf5_zstd_level < 0 || options.hdf5_zstd_level > 22)
    throw usage_error("zstd level must be 1 to 22 (0: no compression)");
  return std::make_unique<Hdf5Writer>(std::move(out), options);
}

}  // namespace tk::io
