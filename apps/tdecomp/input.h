// What tdecomp reads: the selected tensors of a dense tensor file, converted once to the
// compute precision (zero-copy when the file already holds it, aligned), a sparse .tns
// file, and --mask tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/selection.h"
#include "cli/tool.h"
#include "tk/core/tensor.h"
#include "tk/io/tensor_file.h"
#include "tk/io/tns.h"

namespace tk::tdecomp {

// The input file or pipe, opened once. A .tns file is known by its extension (.tns,
// .tns.gz) or, like standard input, by its first bytes (peeked, so that a pipe is read
// only once): gzip or text, not a dense format's signature.
class Input {
 public:
  explicit Input(const std::string& path);
  bool is_tns() const { return tns_; }
  // Parse the .tns input (once; regular files are mapped).
  io::SparseTensor read_tns(const io::TnsReadOptions& options = {});
  // The reader of a dense input (once).
  std::unique_ptr<io::TensorReader> open_reader();

 private:
  std::unique_ptr<io::InputStream> stream_;
  bool tns_ = false;
};

// The name given to the one tensor of a .tns file: the file's stem ("x" for x.tns.gz),
// "tensor" for standard input.
std::string tns_tensor_name(const std::string& path);

// One tensor to decompose, as read.
// Where a slab lies in its whole tensor: rows [lo, ...) of `mode` of `whole` (a rank's
// part under MPI), so that messages name elements of the whole tensor.
struct SlabPlace {
  size_t mode = 0;
  int64_t lo = 0;
  Shape whole;
};

struct Source {
  std::string name;
  std::string where;  // "FILE: tensor 'NAME'" for messages
  Tensor tensor;
  std::optional<SlabPlace> slab = std::nullopt;  // set when `tensor` is a slab of the named tensor
  // Drop the tensor's pages once converted to the compute dtype (TensorReader::release:
  // it stays readable); empty when there is nothing to drop.
  std::function<void()> release = {};
};


// The tensors `method` ("cp", "tucker", "tt", "rescal") decomposes, in storage order,
// decided from the headers. Without -t, tensors it cannot take (order below 2, not
// n x n x m for rescal, a dtype that is not a real number type; `reshape`, when not
// empty, is the shape every tensor is decomposed in) are skipped, named by one notice
// (a summary: not with -q). With -t every selected tensor is kept, to be refused when
// read. `explain`: one line per tensor of the file on stderr, "NAME: DECISION". kUsage
// when nothing is left; kInvalidInput for a file without tensors.
// `report` false (an MPI rank other than 0): the same choice, told nothing of.
std::vector<size_t> tensors_to_decompose(const cli::Tool& tool, const io::TensorReader& reader,
                                         const std::string& method, const Shape& reshape, bool explain,
                                         bool report = true);

// Read tensor `index`; kInvalidInput when its dtype is not numeric (BOOL, C64).
Source read_source(io::TensorReader& reader, size_t index, const std::string& file);
// The same without reading: the source's name and place, its tensor empty.
Source named_source(const io::TensorInfo& info, const std::string& file);

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
