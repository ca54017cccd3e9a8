// Internal to the HDF5 reader and writer (include only from lib/tk/io/hdf5*.cpp):
// ownership of HDF5 identifiers, conversion of HDF5 failures into tk::Error, and the
// one mapping between tensorkit dtypes and HDF5 datatypes.
//
// HDF5 is used as if it were not thread-safe: callers must not use it from several
// threads at once.
#pragma once

#include <hdf5.h>

#include <optional>
#include <string>

#include "tk/core/dtype.h"
#include "tk/core/error.h"

namespace tk::io::hdf5 {

// Owns one HDF5 identifier (file, group, dataset, dataspace, datatype, attribute or
// property list) and closes it with the matching H5*close. A negative id is "none".
class Hid {
 public:
  Hid() = default;
  explicit Hid(hid_t id) : id_(id) {}
  ~Hid() { reset(); }
  Hid(Hid&& other) noexcept : id_(other.id_) { other.id_ = H5I_INVALID_HID; }
  Hid& operator=(Hid&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.id_;
      other.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Close now; returns false when HDF5 reports a failure (e.g. H5Fclose failing to flush).
  bool close();
  void reset() { close(); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// Prepare HDF5 for use by this library, once per process: turn off its automatic error
// printing (the library never prints) and register the zstd filter.
void init();

// The innermost description on HDF5's error stack of this thread, as one line, or ""
// when the stack is empty; clears the stack.
std::string take_error();

// An Error of `kind`: "<what>: <innermost HDF5 description>" (or just `what` when HDF5
// recorded nothing), located at `where`.
Error error(ErrorKind kind, const std::string& what, const std::string& where);

// Return `id` when it is valid, else throw error(kind, what, where).
hid_t check(hid_t id, ErrorKind kind, const char* what, const std::string& where);
// Throw error(kind, what, where) when `status` is negative.
void check_status(herr_t status, ErrorKind kind, const char* what, const std::string& where);

// A new transient datatype holding `dtype` in little-endian storage, as h5py writes it:
// integers and IEEE floats as the standard types, F16 as a float of size 2 (fields 15,
// 10, 5, 0, 10; bias 15), BF16 as a float of size 2 (fields 15, 7, 8, 0, 7; bias 127),
// BOOL as the enum {FALSE = 0, TRUE = 1} over int8, C64 as the compound {r, i} of f32,
// and the narrow floats (F8_*, F4, F6_*) as uint8 (their dtype is kept in an attribute).
Hid make_type(DType dtype);

// The dtype whose values a dataset of file type `type` holds, or nullopt when tensorkit
// cannot represent it (strings, references, other compounds, non-standard floats, ...).
// Byte order is not part of the answer: big-endian data is converted on read.
std::optional<DType> classify_type(hid_t type);

// Why a dataset of file type `type`, for which classify_type found no dtype, is not a
// tensor: "string data", "complex128 data (no tensor dtype holds it)", ...
std::string describe_unsupported_type(hid_t type);

// True for the dtypes stored as uint8 with a `tk_dtype` attribute.
bool is_narrow_float(DType dtype);

}  // namespace tk::io::hdf5
