#include "tk/io/hdf5_types.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "tk/io/hdf5.h"

namespace tk::io::hdf5 {

bool Hid::close() {
  if (id_ < 0) return true;
  hid_t id = id_;
  id_ = H5I_INVALID_HID;
  herr_t rc = -1;
  switch (H5Iget_type(id)) {
    case H5I_FILE: rc = H5Fclose(id); break;
    case H5I_GROUP: rc = H5Gclose(id); break;
    case H5I_DATASET: rc = H5Dclose(id); break;
    case H5I_DATASPACE: rc = H5Sclose(id); break;
    case H5I_DATATYPE: rc = H5Tclose(id); break;
    case H5I_ATTR: rc = H5Aclose(id); break;
    case H5I_GENPROP_LST: rc = H5Pclose(id); break;
    default: rc = H5Idec_ref(id) < 0 ? -1 : 0; break;
  }
  return rc >= 0;
}

void init() {
  hdf5_register_zstd_filter();
  // Per thread when HDF5 is built thread-safe, so repeated on every entry.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

namespace {

struct Innermost {
  std::string any;      // the innermost description
  std::string outside;  // the innermost one outside the metadata cache, whose
                        // messages ("ring type mismatch") say nothing to a user
};

std::string describe(const H5E_error2_t* err) {
  if (err->desc && *err->desc) return err->desc;
  char buf[256];
  if (H5Eget_msg(err->min_num, nullptr, buf, sizeof buf) > 0) return buf;
  return {};
}

herr_t take_innermost(unsigned, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<Innermost*>(data);
  if (out->any.empty()) out->any = describe(err);
  if (out->outside.empty() && err->maj_num != H5E_CACHE) out->outside = describe(err);
  return 0;
}

}  // namespace

std::string take_error() {
  Innermost found;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &found);
  H5Eclear2(H5E_DEFAULT);
  std::string msg = found.outside.empty() ? found.any : found.outside;
  for (char& c : msg)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  while (!msg.empty() && msg.back() == ' ') msg.pop_back();
  return msg;
}

Error error(ErrorKind kind, const std::string& what, const std::string& where) {
  std::string detail = take_error();
  return Error(kind, detail.empty() ? what : what + ": " + detail, where);
}

hid_t check(hid_t id, ErrorKind kind, const char* what, const std::string& where) {
  if (id < 0) throw error(kind, what, where);
  return id;
}

void check_status(herr_t status, ErrorKind kind, const char* what, const std::string& where) {
  if (status < 0) throw error(kind, what, where);
}

namespace {

Hid copy_checked(hid_t base) {
  return Hid(check(H5Tcopy(base), ErrorKind::kInternal, "cannot copy an HDF5 datatype", {}));
}

// A little-endian float of `size` bytes with the given bit fields and exponent bias.
Hid make_float(size_t size, size_t epos, size_t esize, size_t msize, size_t ebias) {
  Hid t = copy_checked(H5T_IEEE_F32LE);
  const std::string where = "HDF5 float type";
  check_status(H5Tset_fields(t.get(), size * 8 - 1, epos, esize, 0, msize), ErrorKind::kInternal,
               "cannot set float fields", where);
  check_status(H5Tset_precision(t.get(), size * 8), ErrorKind::kInternal, "cannot set precision", where);
  check_status(H5Tset_size(t.get(), size), ErrorKind::kInternal, "cannot set size", where);
  check_status(H5Tset_ebias(t.get(), ebias), ErrorKind::kInternal, "cannot set exponent bias", where);
  return t;
}

}  // namespace

bool is_narrow_float(DType dtype) {
  switch (dtype) {
    case DType::kF8E4M3: case DType::kF8E5M2: case DType::kF8E8M0:
    case DType::kF8E4M3FNUZ: case DType::kF8E5M2FNUZ:
    case DType::kF4: case DType::kF6E2M3: case DType::kF6E3M2:
      return true;
    default:
      return false;
  }
}

Hid make_type(DType dtype) {
  switch (dtype) {
    case DType::kBool: {
      Hid t(check(H5Tenum_create(H5T_STD_I8LE), ErrorKind::kInternal, "cannot create an enum type", {}));
      int8_t v = 0;
      H5Tenum_insert(t.get(), "FALSE", &v);
      v = 1;
      check_status(H5Tenum_insert(t.get(), "TRUE", &v), ErrorKind::kInternal, "cannot build the bool type", {});
      return t;
    }
    case DType::kU8: return copy_checked(H5T_STD_U8LE);
    case DType::kI8: return copy_checked(H5T_STD_I8LE);
    case DType::kU16: return copy_checked(H5T_STD_U16LE);
    case DType::kI16: return copy_checked(H5T_STD_I16LE);
    case DType::kU32: return copy_checked(H5T_STD_U32LE);
    case DType::kI32: return copy_checked(H5T_STD_I32LE);
    case DType::kU64: return copy_checked(H5T_STD_U64LE);
    case DType::kI64: return copy_checked(H5T_STD_I64LE);
    case DType::kF16: return make_float(2, 10, 5, 10, 15);
    case DType::kBF16: return make_float(2, 7, 8, 7, 127);
    case DType::kF32: return copy_checked(H5T_IEEE_F32LE);
    case DType::kF64: return copy_checked(H5T_IEEE_F64LE);
    case DType::kC64: {
      Hid t(check(H5Tcreate(H5T_COMPOUND, 8), ErrorKind::kInternal, "cannot create a compound type", {}));
      check_status(H5Tinsert(t.get(), "r", 0, H5T_IEEE_F32LE), ErrorKind::kInternal, "cannot build complex", {});
      check_status(H5Tinsert(t.get(), "i", 4, H5T_IEEE_F32LE), ErrorKind::kInternal, "cannot build complex", {});
      return t;
    }
    default:
      if (is_narrow_float(dtype)) return copy_checked(H5T_STD_U8LE);
      break;
  }
  throw internal_error("no HDF5 type for this dtype", dtype_name(dtype));
}

namespace {

bool standard_layout(hid_t type, size_t size) {
  H5T_order_t order = H5Tget_order(type);
  return H5Tget_size(type) == size && H5Tget_precision(type) == size * 8 && H5Tget_offset(type) == 0 &&
         (order == H5T_ORDER_LE || order == H5T_ORDER_BE);
}

std::optional<DType> classify_integer(hid_t type) {
  size_t size = H5Tget_size(type);
  if (!standard_layout(type, size)) return std::nullopt;
  bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
  switch (size) {
    case 1: return is_signed ? DType::kI8 : DType::kU8;
    case 2: return is_signed ? DType::kI16 : DType::kU16;
    case 4: return is_signed ? DType::kI32 : DType::kU32;
    case 8: return is_signed ? DType::kI64 : DType::kU64;
    default: return std::nullopt;
  }
}

std::optional<DType> classify_float(hid_t type) {
  size_t size = H5Tget_size(type);
  if (!standard_layout(type, size) || H5Tget_norm(type) != H5T_NORM_IMPLIED) return std::nullopt;
  size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
  if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return std::nullopt;
  size_t ebias = H5Tget_ebias(type);
  if (spos != size * 8 - 1 || mpos != 0) return std::nullopt;
  auto is = [&](size_t e_pos, size_t e_size, size_t m_size, size_t bias) {
    return epos == e_pos && esize == e_size && msize == m_size && ebias == bias;
  };
  if (size == 2 && is(10, 5, 10, 15)) return DType::kF16;
  if (size == 2 && is(7, 8, 7, 127)) return DType::kBF16;
  if (size == 4 && is(23, 8, 23, 127)) return DType::kF32;
  if (size == 8 && is(52, 11, 52, 1023)) return DType::kF64;
  return std::nullopt;
}

// A member name of a compound or enum type (HDF5 allocates it).
std::string member_name(hid_t type, unsigned i) {
  char* raw = H5Tget_member_name(type, i);
  if (!raw) return {};
  std::string name(raw);
  H5free_memory(raw);
  return name;
}

// h5py's bool: an enum over a 1-byte integer with exactly FALSE = 0 and TRUE = 1.
bool is_h5py_bool(hid_t type) {
  Hid base(H5Tget_super(type));
  if (!base.valid() || H5Tget_class(base.get()) != H5T_INTEGER || H5Tget_size(base.get()) != 1) return false;
  if (H5Tget_nmembers(type) != 2) return false;
  for (unsigned i = 0; i < 2; ++i) {
    uint8_t value = 0xff;
    if (H5Tget_member_value(type, i, &value) < 0) return false;
    std::string name = member_name(type, i);
    if (!((name == "FALSE" && value == 0) || (name == "TRUE" && value == 1))) return false;
  }
  return true;
}

// h5py's complex numbers: a compound of two floats of `member`, "r" at 0 and "i" right
// after it (complex64: f32, size 8; complex128: f64, size 16).
bool is_h5py_complex(hid_t type, DType member_dtype) {
  size_t half = static_cast<size_t>(dtype_bits(member_dtype)) / 8;
  if (H5Tget_size(type) != 2 * half || H5Tget_nmembers(type) != 2) return false;
  const char* names[2] = {"r", "i"};
  for (unsigned i = 0; i < 2; ++i) {
    if (member_name(type, i) != names[i] || H5Tget_member_offset(type, i) != half * i) return false;
    Hid member(H5Tget_member_type(type, i));
    if (!member.valid() || H5Tget_class(member.get()) != H5T_FLOAT) return false;
    if (classify_float(member.get()) != member_dtype) return false;
  }
  return true;
}

}  // namespace

std::string describe_unsupported_type(hid_t type) {
  std::string what;
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: what = "integer data of a non-standard size or layout"; break;
    case H5T_FLOAT: what = "floating-point data of a non-standard format"; break;
    case H5T_STRING: what = "string data"; break;
    case H5T_COMPOUND:
      what = is_h5py_complex(type, DType::kF64) ? "complex128 data (no tensor dtype holds it)" : "compound (record) data";
      break;
    case H5T_ENUM: what = "enum data other than h5py's bool"; break;
    case H5T_REFERENCE: what = "object or region references"; break;
    case H5T_OPAQUE: what = "opaque data"; break;
    case H5T_BITFIELD: what = "bitfield data"; break;
    case H5T_VLEN: what = "variable-length sequences"; break;
    case H5T_ARRAY: what = "array-typed elements"; break;
    case H5T_TIME: what = "time data"; break;
    default: what = "data of an unknown type class"; break;
  }
  H5Eclear2(H5E_DEFAULT);
  return what;
}

std::optional<DType> classify_type(hid_t type) {
  std::optional<DType> result;
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: result = classify_integer(type); break;
    case H5T_FLOAT: result = classify_float(type); break;
    case H5T_ENUM:
      if (is_h5py_bool(type)) result = DType::kBool;
      break;
    case H5T_COMPOUND:
      if (is_h5py_complex(type, DType::kF32)) result = DType::kC64;
      break;
    default: break;
  }
  H5Eclear2(H5E_DEFAULT);  // probing may leave entries behind
  return result;
}

}  // namespace tk::io::hdf5
