// HDF5 reader: every dataset of a supported type is a tensor named by its path without
// the leading '/'; root-group attributes (strings, numeric scalars as text) are the
// file metadata; attributes of datasets are not exposed (tk_dtype / tk_shape, which
// describe our narrow float types, are consumed here). Datasets and links that cannot
// be a tensor are listed with the reason in skipped(), and their names, comma-separated,
// under the metadata key "hdf5.skipped".
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <set>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "tk/io/dir_fd.h"
#include "tk/io/hdf5.h"
#include "tk/io/hdf5_types.h"
#include "tk/io/temp_file.h"

namespace tk::io {

namespace {

using hdf5::Hid;

// Sizes claimed by a (possibly corrupt) header must be justified by the file before we
// allocate: contiguous data must lie inside the file; anything else (chunked, possibly
// compressed, or not yet allocated and read as fill values) may claim kSizeSlack bytes
// plus kMaxExpansion times the file size (zstd's largest possible ratio).
constexpr uint64_t kSizeSlack = uint64_t(64) << 20;
constexpr uint64_t kMaxExpansion = 32768;
constexpr int kMaxTkShapeRank = 32;
// Groups nested deeper than this are refused: real files have a handful of levels, and
// the bound keeps paths and the walk small whatever a file claims.
constexpr int kMaxGroupDepth = 64;

// An unsigned little-endian field of n bytes (at most 8) of the file's structures.
uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

struct DatasetEntry {
  std::string path;             // absolute HDF5 path of the dataset
  bool raw_bool = false;        // read with the file's own (1-byte enum) type
  H5Z_filter_t missing_filter = -1;  // a filter of its pipeline this process lacks
};

// A pipe copied into a temporary file, so that HDF5 reads it like any file: one copy of
// the data, in the page cache, instead of a memory image that HDF5 would copy again.
// Returns its size; false when no temporary file can be created (the caller falls back
// to memory).
bool spool_input(TempFile& spool, InputStream& in, uint64_t* bytes) {
  if (!spool.create("tk-hdf5")) return false;
  *bytes = copy_to_temp(in, spool);
  return true;
}

class Hdf5Reader final : public TensorReader {
 public:
  Hdf5Reader(std::unique_ptr<InputStream> in, const ReadOptions& options);
  FileFormat format() const override { return FileFormat::kHdf5; }
  bool random_access() const override { return true; }
  Tensor read(size_t index) override;
  Tensor read_slab(size_t index, size_t mode, int64_t lo, int64_t hi) override;

 private:
  std::string where(const std::string& tensor) const { return name_ + ": tensor '" + tensor + "'"; }
  // Open the dataset of `entry` for reading (kUnavailable when its filter is missing).
  Hid open_dataset(const DatasetEntry& entry, const std::string& loc);
  void open_file(std::unique_ptr<InputStream> in);
  void walk_group(hid_t group, haddr_t header, const std::string& prefix, int depth);
  void check_symbol_table(haddr_t header, const std::string& where);
  void list_contents();
  void probe_listing();
  void add_dataset(hid_t group, const std::string& link, const std::string& name);
  void skip(const std::string& name, std::string reason);
  void check_size(hid_t dset, hid_t dcpl, uint64_t file_bytes, const std::string& name);
  void read_root_attributes();
  void add_attribute(hid_t root, const char* attr_name);
  std::optional<std::string> read_string_attribute(hid_t attr, const std::string& where);
  void check_heap_reference(hid_t attr, const std::string& where);
  bool read_raw(uint64_t offset, void* out, size_t n);

  std::string name_;
  uint64_t file_size_ = 0;
  Buffer image_;  // the file image of a memory stream
  TempFile spool_;  // the copy of a pipe; outlives file_
  Fd raw_;          // the file itself, for the checks HDF5 does not make (read_raw)
  Hid file_;
  size_t sizeof_addr_ = 8, sizeof_size_ = 8;  // the file's address and length widths
  uint64_t base_ = 0;                         // where its addresses start (the user block)
  std::vector<DatasetEntry> entries_;
  std::map<haddr_t, std::string> groups_seen_;  // address -> the path it was listed under
};

Hdf5Reader::Hdf5Reader(std::unique_ptr<InputStream> in, const ReadOptions&) {
  hdf5::init();
  name_ = in->name();
  open_file(std::move(in));
  probe_listing();
  list_contents();
  if (!skipped_.empty()) {
    std::string list;
    for (const auto& s : skipped_) list += (list.empty() ? "" : ",") + s.name;
    metadata_["hdf5.skipped"] = list;
  }
}

// Every tensor, skipped object and root attribute of the file.
void Hdf5Reader::list_contents() {
  Hid root(hdf5::check(H5Gopen2(file_.get(), "/", H5P_DEFAULT), ErrorKind::kInvalidInput,
                       "cannot open the root group", name_));
  H5O_info_t info;
  hdf5::check_status(H5Oget_info2(root.get(), &info, H5O_INFO_BASIC), ErrorKind::kInvalidInput,
                     "cannot read the root group", name_);
  groups_seen_.emplace(info.addr, "/");
  walk_group(root.get(), info.addr, "", 0);
  read_root_attributes();
}

// libhdf5 1.10 trusts more of a file's metadata than it checks: fuzzing found it faulting
// on corrupt heaps, names and datatype messages inside H5Literate, H5Dopen2 and H5Aread.
// The checks below (check_symbol_table, check_heap_reference) refuse the cases found so
// far; as a net for the rest, the listing first runs in a forked child, and a child killed
// by a fault makes the file "corrupt HDF5 metadata" (exit 3) before this process lets
// HDF5 read it. A child that ends in any other way (listed, refused the file, or exited by
// a sanitizer's report, which it prints) is followed by the listing here, which then does
// the same. One fork per file; where fork fails, the listing runs unprobed. Reading the
// data (H5Dread) is not probed: the fuzz targets read every tensor and found no fault there.
void Hdf5Reader::probe_listing() {
  const pid_t pid = ::fork();
  if (pid < 0) return;
  if (pid == 0) {
    // The default action of the fatal signals (the tools' cleanup handlers and a
    // fuzzer's or sanitizer's crash report belong to the parent), and _exit: no exit
    // handlers, no flush of the parent's stdio buffers.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &dfl, nullptr);
    try {
      list_contents();
    } catch (...) {
    }
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (sig != 0 && sig != SIGKILL && sig != SIGINT && sig != SIGTERM && sig != SIGHUP)
    throw invalid_input("corrupt HDF5 metadata: libhdf5 faulted listing it (signal " +
                            std::to_string(sig) + ", in a probe process)",
                        name_);
}

void Hdf5Reader::open_file(std::unique_ptr<InputStream> in) {
  Hid fapl(hdf5::check(H5Pcreate(H5P_FILE_ACCESS), ErrorKind::kInternal, "cannot create a property list", name_));
  // Lock when the file system can, but do not fail where it cannot (e.g. some NFS).
  H5Pset_file_locking(fapl.get(), true, true);
  if (in->is_regular_file()) {
    file_size_ = in->size().value_or(0);
    std::string path = in->path();
    in.reset();
    raw_ = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    file_ = Hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()));
  } else if (!in->is_memory() && spool_input(spool_, *in, &file_size_)) {
    // A pipe: copied once into a temporary file, then opened as a file.
    in.reset();
    if (file_size_ == 0) throw invalid_input("empty file, not HDF5", name_);
    raw_ = Fd(::dup(spool_.fd()));
    file_ = Hid(H5Fopen(spool_.path().c_str(), H5F_ACC_RDONLY, fapl.get()));
    spool_.remove_name();
  } else {
    // A memory stream: handed to HDF5 as a file image (which HDF5 copies; the
    // high-level H5LTopen_file_image avoids the copy but leaks on every open in 1.10).
    image_ = in->read_all();
    in.reset();
    file_size_ = image_.size();
    if (image_.empty()) throw invalid_input("empty file, not HDF5", name_);
    hdf5::check_status(H5Pset_fapl_core(fapl.get(), 1 << 20, false), ErrorKind::kInternal,
                       "cannot select the in-memory driver", name_);
    hdf5::check_status(H5Pset_file_image(fapl.get(), const_cast<uint8_t*>(image_.data()), image_.size()),
                       ErrorKind::kUnavailable, "cannot copy the HDF5 image", name_);
    // Each image needs a name of its own: HDF5 refuses to open one name twice.
    static std::atomic<uint64_t> counter{0};
    std::string label = "tk-image-" + std::to_string(counter++);
    file_ = Hid(H5Fopen(label.c_str(), H5F_ACC_RDONLY, fapl.get()));
  }
  if (!file_.valid()) throw hdf5::error(ErrorKind::kInvalidInput, "not a readable HDF5 file", name_);
  Hid fcpl(hdf5::check(H5Fget_create_plist(file_.get()), ErrorKind::kInvalidInput, "cannot read the superblock",
                       name_));
  hsize_t userblock = 0;
  if (H5Pget_sizes(fcpl.get(), &sizeof_addr_, &sizeof_size_) < 0 || H5Pget_userblock(fcpl.get(), &userblock) < 0)
    throw hdf5::error(ErrorKind::kInvalidInput, "cannot read the superblock", name_);
  // The checks of the file's own structures (read_raw) read fields of these widths.
  if (sizeof_addr_ > 8 || sizeof_size_ > 8) throw invalid_input("HDF5 addresses wider than 8 bytes", name_);
  base_ = userblock;
}

// libhdf5 1.10 reads an old-style group's local heap in one piece of the size the heap's
// header claims, and its check of a read against the end of the file overflows on the
// undefined address (all ones): a group whose B-tree or heap is at that address, or whose
// heap claims such a size, makes H5Literate fault. So before a group is listed, the reader
// checks the B-tree address and the heap named by the symbol table message
// of its object header (version 1, the layout of old-style groups, following continuation
// chunks). Headers of version 2 hold new-style groups (links, no local heap) and are left
// to HDF5.
void Hdf5Reader::check_symbol_table(haddr_t header, const std::string& where) {
  const size_t o = sizeof_addr_, l = sizeof_size_;
  // The local heap at `addr`: "HEAP", version 0, 3 reserved bytes, the data segment's
  // size, the free list's offset, the data segment's address.
  const auto check_heap = [&](uint64_t addr) {
    uint8_t heap[40];
    if (addr > file_size_ || !read_raw(base_ + addr, heap, 8 + 2 * l + o) || std::memcmp(heap, "HEAP", 4) != 0)
      throw invalid_input("corrupt HDF5 group: no name heap where it points", where);
    const uint64_t data_size = load_le(heap + 8, l), data_addr = load_le(heap + 8 + 2 * l, o);
    if (data_size > file_size_ || data_addr > file_size_ || base_ + data_addr > file_size_ - data_size)
      throw invalid_input("corrupt HDF5 group: its name heap claims " + std::to_string(data_size) +
                              " bytes past the end of the file",
                          where);
  };
  uint8_t prefix[16];
  if (header == HADDR_UNDEF || !read_raw(base_ + header, prefix, sizeof prefix) || prefix[0] != 1) return;
  // Chunks of messages: the first right after the 16-byte prefix, then continuations.
  std::vector<std::pair<uint64_t, uint64_t>> chunks{{header + 16, load_le(prefix + 8, 4)}};
  constexpr size_t kMaxChunks = 256;
  for (size_t c = 0; c < chunks.size() && c < kMaxChunks; ++c) {
    const auto [start, length] = chunks[c];
    for (uint64_t at = 0; at + 8 <= length;) {
      uint8_t head[8];
      if (!read_raw(base_ + start + at, head, sizeof head)) return;
      const uint64_t type = load_le(head, 2), bytes = load_le(head + 2, 2);
      uint8_t body[16] = {};
      const bool known = (type == 0x10 || type == 0x11) && bytes >= 2 * o;
      if (known && !read_raw(base_ + start + at + 8, body, 2 * o)) return;
      if (known && type == 0x10) {  // continuation: address, length
        chunks.emplace_back(load_le(body, o), load_le(body + o, l));
      } else if (known && type == 0x11) {  // symbol table: B-tree address, heap address
        if (load_le(body, o) >= file_size_)
          throw invalid_input("corrupt HDF5 group: its B-tree lies outside the file", where);
        check_heap(load_le(body + o, o));
        return;
      }
      at += 8 + bytes;
    }
  }
}

// The links of one group, in name order, as H5Literate reports them.
struct GroupLinks {
  std::vector<std::pair<std::string, H5L_type_t>> links;
  std::exception_ptr failure;
};

herr_t collect_link(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* out = static_cast<GroupLinks*>(data);
  try {
    out->links.emplace_back(name, info->type);
  } catch (...) {
    out->failure = std::current_exception();
    return -1;
  }
  return 0;
}

// The target path of the soft link `link` of `group`, or "" when it cannot be read.
std::string soft_link_target(hid_t group, const std::string& link) {
  H5L_info_t info;
  if (H5Lget_info(group, link.c_str(), &info, H5P_DEFAULT) < 0 || info.u.val_size == 0 ||
      info.u.val_size > (1 << 16)) {
    H5Eclear2(H5E_DEFAULT);
    return {};
  }
  std::string target(info.u.val_size, '\0');
  if (H5Lget_val(group, link.c_str(), target.data(), target.size(), H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return {};
  }
  target.resize(std::strlen(target.c_str()));
  return target;
}

void Hdf5Reader::skip(const std::string& name, std::string reason) {
  skipped_.push_back({name, std::move(reason)});
}

// List the links of `group` (whose path is `prefix`, "" for the root) and descend into
// its subgroups, each opened relative to its parent: the walk costs one step per link,
// however deep the groups nest. A group reached again through another hard link (a
// cycle, or a shared subtree) is listed once; a dataset reached through several hard
// links is a tensor under each name, so no name is lost.
void Hdf5Reader::walk_group(hid_t group, haddr_t header, const std::string& prefix, int depth) {
  check_symbol_table(header, prefix.empty() ? name_ : name_ + ": group '" + prefix + "'");
  GroupLinks found;
  herr_t rc = H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_link, &found);
  if (found.failure) std::rethrow_exception(found.failure);
  const std::string here = prefix.empty() ? name_ : name_ + ": group '" + prefix + "'";
  if (rc < 0) throw hdf5::error(ErrorKind::kInvalidInput, "corrupt HDF5 group structure", here);
  for (const auto& [link, type] : found.links) {
    const std::string path = prefix.empty() ? link : prefix + "/" + link;
    if (type == H5L_TYPE_SOFT) {
      std::string target = soft_link_target(group, link);
      skip(path, target.empty() ? "soft link, not followed" : "soft link to '" + target + "', not followed");
      continue;
    }
    if (type == H5L_TYPE_EXTERNAL) {
      skip(path, "external link to another file, not followed");
      continue;
    }
    if (type != H5L_TYPE_HARD) {
      skip(path, "user-defined link, not followed");
      continue;
    }
    H5O_info_t info;
    if (H5Oget_info_by_name2(group, link.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
      throw hdf5::error(ErrorKind::kInvalidInput, "cannot read an object", name_ + ": '" + path + "'");
    if (info.type == H5O_TYPE_DATASET) {
      add_dataset(group, link, path);
    } else if (info.type == H5O_TYPE_GROUP) {
      auto [seen, fresh] = groups_seen_.emplace(info.addr, path);
      if (!fresh) {
        skip(path, "another name of group '" + seen->second + "', listed there");
        continue;
      }
      if (depth + 1 > kMaxGroupDepth)
        throw invalid_input("groups nested deeper than " + std::to_string(kMaxGroupDepth) + " levels",
                            name_ + ": group '" + path + "'");
      Hid child(hdf5::check(H5Gopen2(group, link.c_str(), H5P_DEFAULT), ErrorKind::kInvalidInput,
                            "cannot open group", name_ + ": group '" + path + "'"));
      walk_group(child.get(), info.addr, path, depth + 1);
    }
    // Named datatypes (our committed bfloat16 among them) are not data.
  }
}

// libhdf5 1.10 follows the global-heap reference of a variable-length string without
// checking it: the object's index is checked only by an assertion, so a corrupt index
// reads past the collection's table and faults, and an object longer than the string's
// stored length overflows the buffer HDF5 allocated for it. The API gives no access to
// the reference, except through a conversion: a soft conversion from variable-length
// strings to an opaque type of the same size, registered here, leaves the stored bytes
// (length, collection address, object index) as they are. The reader checks them against
// the collection in the file before it lets HDF5 read the string.
constexpr const char* kRawReferenceTag = "tensorkit: stored variable-length reference";

herr_t keep_stored_reference(hid_t src, hid_t dst, H5T_cdata_t* cdata, size_t, size_t, size_t, void*, void*, hid_t) {
  if (cdata->command != H5T_CONV_INIT) return 0;  // converting: the bytes stay as they are
  if (H5Tget_class(src) != H5T_STRING || H5Tis_variable_str(src) <= 0 || H5Tget_class(dst) != H5T_OPAQUE) return -1;
  char* tag = H5Tget_tag(dst);
  const bool ours = tag != nullptr && std::strcmp(tag, kRawReferenceTag) == 0;
  if (tag) H5free_memory(tag);
  if (!ours || H5Tget_size(src) != H5Tget_size(dst)) return -1;
  cdata->need_bkg = H5T_BKG_NO;
  return 0;
}

void register_stored_reference_conversion() {
  static std::once_flag once;
  std::call_once(once, [] {
    Hid src(H5Tcopy(H5T_C_S1));
    H5Tset_size(src.get(), H5T_VARIABLE);
    Hid dst(H5Tcreate(H5T_OPAQUE, 16));
    H5Tset_tag(dst.get(), kRawReferenceTag);
    H5Tregister(H5T_PERS_SOFT, "tk_stored_reference", src.get(), dst.get(), keep_stored_reference);
    H5Eclear2(H5E_DEFAULT);
  });
}

// `n` bytes of the file at `offset`; false past its end or when it cannot be read.
bool Hdf5Reader::read_raw(uint64_t offset, void* out, size_t n) {
  if (offset > file_size_ || n > file_size_ - offset) return false;
  if (!image_.empty()) {
    std::memcpy(out, image_.data() + offset, n);
    return true;
  }
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(raw_.fd(), p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
  return true;
}

// Throws invalid input unless the variable-length string `attr` (one element) is empty or
// names an object of a well-formed global heap collection whose size is the string's.
void Hdf5Reader::check_heap_reference(hid_t attr, const std::string& where) {
  register_stored_reference_conversion();
  const size_t ref_size = 4 + sizeof_addr_ + 4;
  Hid raw(hdf5::check(H5Tcreate(H5T_OPAQUE, ref_size), ErrorKind::kInternal, "cannot create a datatype", where));
  H5Tset_tag(raw.get(), kRawReferenceTag);
  uint8_t ref[20] = {};
  hdf5::check_status(H5Aread(attr, raw.get(), ref), ErrorKind::kInvalidInput, "cannot read an attribute", where);
  const uint64_t length = load_le(ref, 4), address = load_le(ref + 4, sizeof_addr_);
  const uint64_t index = load_le(ref + 4 + sizeof_addr_, 4);
  if (address == 0 || (sizeof_addr_ < 8 && address == (uint64_t(1) << (8 * sizeof_addr_)) - 1)) return;  // null
  const auto corrupt = [&](const std::string& what) {
    return invalid_input("corrupt variable-length string: " + what, where);
  };
  // The collection: "GCOL", version 1, 3 reserved bytes, its size; then objects of an index
  // (2 bytes), a reference count (2), 4 reserved bytes and a size, each object's data
  // padded to 8 bytes; index 0 is the free space that ends the list.
  const uint64_t start = base_ + address;
  uint8_t head[16] = {};
  const size_t head_size = 8 + sizeof_size_;
  if (address > file_size_ || !read_raw(start, head, head_size)) throw corrupt("heap collection outside the file");
  if (std::memcmp(head, "GCOL", 4) != 0 || head[4] != 1) throw corrupt("no heap collection where it points");
  const uint64_t size = load_le(head + 8, sizeof_size_);
  if (size < head_size || size > file_size_ - start) throw corrupt("heap collection larger than the file");
  const size_t object_head = 8 + sizeof_size_;
  bool found = false;
  for (uint64_t at = head_size; at + object_head <= size;) {
    uint8_t obj[16] = {};
    if (!read_raw(start + at, obj, object_head)) throw corrupt("heap collection outside the file");
    const uint64_t obj_index = load_le(obj, 2), obj_size = load_le(obj + 8, sizeof_size_);
    if (obj_index == 0) break;  // free space
    const uint64_t padded = (obj_size + 7) & ~uint64_t(7);
    if (obj_size > size || padded > size - at - object_head) throw corrupt("heap object past its collection");
    if (obj_index == index) {
      if (found) throw corrupt("heap object index used twice");
      if (obj_size != length) throw corrupt("heap object of another size than its string");
      found = true;
    }
    at += object_head + padded;
  }
  if (!found) throw corrupt("no heap object " + std::to_string(index) + " in its collection");
}

// Read a string attribute (fixed or variable length, scalar or one element) of `obj`.
std::optional<std::string> Hdf5Reader::read_string_attribute(hid_t attr, const std::string& where) {
  Hid type(H5Aget_type(attr));
  Hid space(H5Aget_space(attr));
  if (!type.valid() || !space.valid() || H5Tget_class(type.get()) != H5T_STRING) return std::nullopt;
  if (H5Sget_simple_extent_npoints(space.get()) != 1) return std::nullopt;
  if (H5Tis_variable_str(type.get()) > 0) {
    check_heap_reference(attr, where);
    Hid mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    char* value = nullptr;
    hdf5::check_status(H5Aread(attr, mem.get(), &value), ErrorKind::kInvalidInput, "cannot read an attribute",
                       where);
    std::string text = value ? value : "";
    if (value) H5free_memory(value);
    return text;
  }
  size_t size = H5Tget_size(type.get());
  if (size == 0 || size > file_size_) throw invalid_input("string attribute larger than the file", where);
  std::vector<char> buf(size + 1, '\0');
  hdf5::check_status(H5Aread(attr, type.get(), buf.data()), ErrorKind::kInvalidInput,
                     "cannot read an attribute", where);
  std::string text(buf.data());  // up to the first NUL (null-terminated or null-padded)
  if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD)
    while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

void Hdf5Reader::add_dataset(hid_t group, const std::string& link, const std::string& name) {
  const std::string loc = where(name);
  Hid dset(hdf5::check(H5Dopen2(group, link.c_str(), H5P_DEFAULT), ErrorKind::kInvalidInput,
                       "cannot open dataset", loc));
  Hid type(hdf5::check(H5Dget_type(dset.get()), ErrorKind::kInvalidInput, "cannot read the datatype", loc));
  Hid space(hdf5::check(H5Dget_space(dset.get()), ErrorKind::kInvalidInput, "cannot read the dataspace", loc));
  Hid dcpl(hdf5::check(H5Dget_create_plist(dset.get()), ErrorKind::kInvalidInput, "cannot read the layout", loc));

  std::optional<DType> dtype = hdf5::classify_type(type.get());
  H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  H5D_layout_t layout = H5Pget_layout(dcpl.get());
  // Unrepresentable types, datasets without data, virtual datasets and data in external
  // files (which would let a file make us read arbitrary paths) are skipped.
  std::string skip_reason;
  if (!dtype) skip_reason = hdf5::describe_unsupported_type(type.get());
  else if (space_class != H5S_SCALAR && space_class != H5S_SIMPLE) skip_reason = "dataset without data (empty dataspace)";
  else if (layout == H5D_VIRTUAL) skip_reason = "virtual dataset, not read";
  else if (H5Pget_external_count(dcpl.get()) != 0) skip_reason = "data in external files, not read";
  if (!skip_reason.empty()) {
    H5Eclear2(H5E_DEFAULT);
    skip(name, std::move(skip_reason));
    return;
  }
  Shape shape;
  uint64_t elements = 1;
  if (space_class == H5S_SIMPLE) {
    int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > H5S_MAX_RANK) throw hdf5::error(ErrorKind::kInvalidInput, "bad dataspace rank", loc);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
      throw hdf5::error(ErrorKind::kInvalidInput, "cannot read the dimensions", loc);
    for (hsize_t d : dims) {
      if (d > static_cast<hsize_t>(INT64_MAX)) throw invalid_input("dimension too large", loc);
      shape.push_back(static_cast<int64_t>(d));
    }
    elements = shape_numel(shape);
  }
  uint64_t element_bytes = H5Tget_size(type.get());
  if (element_bytes == 0 || elements > UINT64_MAX / element_bytes) throw invalid_input("dataset size overflows", loc);
  uint64_t file_bytes = elements * element_bytes;
  check_size(dset.get(), dcpl.get(), file_bytes, loc);

  DatasetEntry entry{"/" + name, *dtype == DType::kBool, -1};
  int nfilters = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0, cd[8];
    size_t ncd = 8;
    H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &ncd, cd, 0, nullptr, nullptr);
    if (id < 0) throw hdf5::error(ErrorKind::kInvalidInput, "cannot read the filter pipeline", loc);
    if (H5Zfilter_avail(id) <= 0) entry.missing_filter = id;
  }
  H5Eclear2(H5E_DEFAULT);

  DType tensor_dtype = *dtype;
  if (H5Aexists(dset.get(), "tk_dtype") > 0) {
    // One of our narrow float types, stored as uint8 bytes.
    Hid attr(hdf5::check(H5Aopen(dset.get(), "tk_dtype", H5P_DEFAULT), ErrorKind::kInvalidInput,
                         "cannot open attribute tk_dtype", loc));
    auto text = read_string_attribute(attr.get(), loc);
    if (!text) throw invalid_input("attribute tk_dtype is not a string", loc);
    auto narrow = dtype_from_safetensors_name(*text);
    if (!narrow || !hdf5::is_narrow_float(*narrow))
      throw invalid_input("attribute tk_dtype names no 8-bit-or-narrower float type: '" + *text + "'", loc);
    if (*dtype != DType::kU8) throw invalid_input("a dataset with tk_dtype must hold uint8", loc);
    tensor_dtype = *narrow;
    if (dtype_bits(*narrow) < 8) {
      // Packed: a 1-D byte array and the logical shape in tk_shape.
      if (shape.size() != 1) throw invalid_input("a packed dataset must be one-dimensional", loc);
      if (H5Aexists(dset.get(), "tk_shape") <= 0) throw invalid_input("packed dataset without tk_shape", loc);
      Hid sattr(hdf5::check(H5Aopen(dset.get(), "tk_shape", H5P_DEFAULT), ErrorKind::kInvalidInput,
                            "cannot open attribute tk_shape", loc));
      Hid stype(H5Aget_type(sattr.get()));
      Hid sspace(H5Aget_space(sattr.get()));
      hssize_t n = sspace.valid() ? H5Sget_simple_extent_npoints(sspace.get()) : -1;
      if (!stype.valid() || H5Tget_class(stype.get()) != H5T_INTEGER || n < 1 || n > kMaxTkShapeRank)
        throw invalid_input("attribute tk_shape must be 1 to 32 integers", loc);
      Shape logical(static_cast<size_t>(n));
      hdf5::check_status(H5Aread(sattr.get(), H5T_NATIVE_INT64, logical.data()), ErrorKind::kInvalidInput,
                         "cannot read attribute tk_shape", loc);
      if (dtype_storage_bytes(*narrow, shape_numel(logical)) != static_cast<uint64_t>(shape[0]))
        throw invalid_input("tk_shape does not match the number of packed bytes", loc);
      shape = std::move(logical);
    }
  }
  TensorInfo info;
  info.name = name;
  info.dtype = tensor_dtype;
  info.nbytes = dtype_storage_bytes(tensor_dtype, shape_numel(shape));
  info.shape = std::move(shape);
  infos_.push_back(std::move(info));
  entries_.push_back(std::move(entry));
}

void Hdf5Reader::check_size(hid_t dset, hid_t dcpl, uint64_t file_bytes, const std::string& loc) {
  if (H5Pget_layout(dcpl) == H5D_CONTIGUOUS) {
    haddr_t offset = H5Dget_offset(dset);
    H5Eclear2(H5E_DEFAULT);
    if (offset != HADDR_UNDEF) {
      if (offset > file_size_ || file_bytes > file_size_ - offset)
        throw invalid_input("dataset data extends past the end of the file", loc);
      return;
    }
  }
  if (file_bytes <= kSizeSlack) return;
  uint64_t limit = file_size_ > (UINT64_MAX - kSizeSlack) / kMaxExpansion ? UINT64_MAX
                                                                           : kSizeSlack + file_size_ * kMaxExpansion;
  if (file_bytes > limit)
    throw invalid_input("dataset claims " + std::to_string(file_bytes) + " bytes, more than a file of " +
                            std::to_string(file_size_) + " bytes can hold",
                        loc);
}

void Hdf5Reader::read_root_attributes() {
  Hid root(hdf5::check(H5Gopen2(file_.get(), "/", H5P_DEFAULT), ErrorKind::kInvalidInput,
                       "cannot open the root group", name_));
  H5O_info_t info;
  hdf5::check_status(H5Oget_info2(root.get(), &info, H5O_INFO_NUM_ATTRS), ErrorKind::kInvalidInput,
                     "cannot read the root group", name_);
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    Hid attr(H5Aopen_by_idx(root.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT));
    if (!attr.valid()) throw hdf5::error(ErrorKind::kInvalidInput, "cannot open a root attribute", name_);
    ssize_t len = H5Aget_name(attr.get(), 0, nullptr);
    if (len < 0) throw hdf5::error(ErrorKind::kInvalidInput, "cannot read an attribute name", name_);
    std::string key(static_cast<size_t>(len) + 1, '\0');
    H5Aget_name(attr.get(), key.size(), key.data());
    key.resize(static_cast<size_t>(len));
    add_attribute(attr.get(), key.c_str());
  }
}

// Store one root attribute as metadata: strings as they are, numeric scalars as text;
// anything else (arrays, compounds, references) is left out.
void Hdf5Reader::add_attribute(hid_t attr, const char* key) {
  const std::string loc = name_ + ": attribute '" + key + "'";
  if (auto text = read_string_attribute(attr, loc)) {
    metadata_[key] = *text;
    return;
  }
  Hid type(H5Aget_type(attr));
  Hid space(H5Aget_space(attr));
  if (!type.valid() || !space.valid() || H5Sget_simple_extent_npoints(space.get()) != 1) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  H5T_class_t cls = H5Tget_class(type.get());
  char text[64];
  if (cls == H5T_INTEGER && H5Tget_sign(type.get()) == H5T_SGN_NONE) {
    uint64_t v = 0;
    hdf5::check_status(H5Aread(attr, H5T_NATIVE_UINT64, &v), ErrorKind::kInvalidInput, "cannot read", loc);
    std::snprintf(text, sizeof text, "%" PRIu64, v);
  } else if (cls == H5T_INTEGER) {
    int64_t v = 0;
    hdf5::check_status(H5Aread(attr, H5T_NATIVE_INT64, &v), ErrorKind::kInvalidInput, "cannot read", loc);
    std::snprintf(text, sizeof text, "%" PRId64, v);
  } else if (cls == H5T_FLOAT) {
    double v = 0;
    hdf5::check_status(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), ErrorKind::kInvalidInput, "cannot read", loc);
    std::snprintf(text, sizeof text, "%.17g", v);
  } else {
    return;
  }
  metadata_[key] = text;
}

Hid Hdf5Reader::open_dataset(const DatasetEntry& entry, const std::string& loc) {
  hdf5::init();
  if (entry.missing_filter >= 0)
    throw unavailable("HDF5 filter " + std::to_string(entry.missing_filter) + " is not available", loc);
  return Hid(hdf5::check(H5Dopen2(file_.get(), entry.path.c_str(), H5P_DEFAULT), ErrorKind::kInvalidInput,
                         "cannot open dataset", loc));
}

Tensor Hdf5Reader::read(size_t index) {
  if (index >= infos_.size()) throw internal_error("tensor index out of range", name_);
  const TensorInfo& info = infos_[index];
  const DatasetEntry& entry = entries_[index];
  const std::string loc = where(info.name);
  Hid dset = open_dataset(entry, loc);
  Hid mem = entry.raw_bool ? Hid(H5Dget_type(dset.get())) : hdf5::make_type(info.dtype);
  if (info.nbytes == 0) return Tensor(info.dtype, info.shape, Buffer());
  Buffer data = Buffer::allocate(info.nbytes);
  if (H5Dread(dset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.mutable_data()) < 0)
    throw hdf5::error(ErrorKind::kInvalidInput, "cannot read dataset", loc);
  return Tensor(info.dtype, info.shape, std::move(data));
}

// A hyperslab: HDF5 reads the selected rows only (whole chunks, for a chunked dataset).
Tensor Hdf5Reader::read_slab(size_t index, size_t mode, int64_t lo, int64_t hi) {
  if (index >= infos_.size()) throw internal_error("tensor index out of range", name_);
  const TensorInfo& info = infos_[index];
  const DatasetEntry& entry = entries_[index];
  if (entry.raw_bool || info.shape.empty()) return TensorReader::read_slab(index, mode, lo, hi);
  if (mode >= info.shape.size() || lo < 0 || hi < lo || hi > info.shape[mode])
    throw internal_error("read_slab: rows outside the tensor", info.name);
  const std::string loc = where(info.name);
  Hid dset = open_dataset(entry, loc);
  Hid mem_type = hdf5::make_type(info.dtype);
  Shape shape = info.shape;
  shape[mode] = hi - lo;
  const uint64_t count = shape_numel(shape);
  Buffer data = Buffer::allocate(dtype_storage_bytes(info.dtype, count));
  if (count == 0) return Tensor(info.dtype, shape, std::move(data));
  std::vector<hsize_t> start(info.shape.size(), 0), extent(shape.begin(), shape.end());
  start[mode] = static_cast<hsize_t>(lo);
  Hid file_space(hdf5::check(H5Dget_space(dset.get()), ErrorKind::kInvalidInput, "cannot read the dataspace", loc));
  hdf5::check_status(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, extent.data(), nullptr),
                     ErrorKind::kInvalidInput, "cannot select rows", loc);
  Hid mem_space(hdf5::check(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr),
                            ErrorKind::kInternal, "cannot make a dataspace", loc));
  if (H5Dread(dset.get(), mem_type.get(), mem_space.get(), file_space.get(), H5P_DEFAULT, data.mutable_data()) < 0)
    throw hdf5::error(ErrorKind::kInvalidInput, "cannot read dataset", loc);
  return Tensor(info.dtype, shape, std::move(data));
}

}  // namespace

std::unique_ptr<TensorReader> hdf5_open(std::unique_ptr<InputStream> in, const ReadOptions& options) {
  return std::make_unique<Hdf5Reader>(std::move(in), options);
}

}  // namespace tk::io
