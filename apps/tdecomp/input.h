// What tdecomp reads: the selected tensors of a dense tensor file, converted once to the
// compute precision (zero-copy when the file already holds it, aligned), a sparse .tns
// file, and --mask tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/selection.h"
#include "tk/core/tensor.h"
#include "tk/io/tensor_file.h"
#include "tk/io/tns.h"

namespace tk::tdecomp {

// True when `path` names a .tns file: by extension (.tns, .tns.gz), else by content.
// Standard input is never taken for .tns (it is peeked by the dense reader instead).
bool is_tns_input(const std::string& path);

// The name given to the one tensor of a .tns file: the file's stem ("x" for x.tns.gz).
std::string tns_tensor_name(const std::string& path);

// One tensor to decompose, as read.
struct Source {
  std::string name;
  std::string where;  // "FILE: tensor 'NAME'" for messages
  Tensor tensor;
};

// Indices of the tensors `selection` picks, in storage order; every -t must match.
std::vector<size_t> selected_tensors(const io::TensorReader& reader, cli::TensorSelection selection);

// Read tensor `index`; kInvalidInput when its dtype is not numeric (BOOL, C64).
Source read_source(io::TensorReader& reader, size_t index, const std::string& file);

// kInvalidInput "tensor of order N; ... need order >= 2" for shapes of order < 2.
void check_order(const Shape& shape, const std::string& where);

// The dense form of a small sparse tensor (for methods other than CP), as F64. kUsage
// when it would exceed kMaxDensifyElements.
inline constexpr uint64_t kMaxDensifyElements = uint64_t{1} << 26;
Source densify(const io::SparseTensor& sparse, const std::string& name, const std::string& file);

// The values of `source` in the compute precision T. Zero-copy when the stored dtype is
// T and the data is aligned; otherwise converted once. Throws kInvalidInput naming the
// first NaN/Inf, except where `mask` (one byte per element, may be null) is 0: those
// entries are set to 0 (copying the data if needed).
template <typename T> class ComputeData {
 public:
  ComputeData(const Source& source, const uint8_t* mask);
  const T* data() const { return data_; }

 private:
  std::vector<T> owned_;
  const T* data_ = nullptr;
};

// The 0/1 mask for `source` from FILE: its tensor of the same name, or its only tensor.
// kInvalidInput when the shape differs; any nonzero value counts as observed.
std::vector<uint8_t> read_mask(const std::string& path, const Source& source);

}  // namespace tk::tdecomp
