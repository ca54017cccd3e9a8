// Sparse tensors in coordinate form and the FROSTT .tns text format: one nonzero per
// line, `i_1 i_2 ... i_d value`, whitespace separated, '#' comments; indices 1-based
// (FROSTT) or 0-based (detected: any index 0 means 0-based); gzip-compressed files are
// read transparently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tk::io {

class InputStream;

struct SparseTensor {
  std::vector<int64_t> shape;     // one extent per mode
  std::vector<int64_t> indices;   // nnz x order, row-major, 0-based
  std::vector<double> values;     // nnz
  int order() const { return static_cast<int>(shape.size()); }
  int64_t nnz() const { return static_cast<int64_t>(values.size()); }
};

struct TnsReadOptions {
  // Declared shape; empty: inferred as the largest index + 1 per mode. An index beyond
  // a declared shape is kInvalidInput naming the line.
  std::vector<int64_t> shape;
};

// True when the bytes look like a .tns file (or gzip; the caller then tries to read).
bool looks_like_tns(const uint8_t* data, size_t size);

// True when the upcoming bytes of `in` (peeked, not consumed) hold gzip or .tns text and
// no dense tensor format's signature: what a pipe must be sniffed for, read only once.
bool stream_holds_tns(InputStream& in);

// Parse the .tns file at `path`. Errors: kIo for unreadable files, kInvalidInput for
// a line that does not parse (with its line number), a wrong number of fields, an index
// < 0 (0-based) or beyond the declared shape, a non-finite value.
SparseTensor read_tns(const std::string& path, const TnsReadOptions& options = {});
// The same from an open stream, from its current position to its end (bytes already
// peeked included): a regular file not yet read from is mapped, anything else (a pipe)
// read whole; gzip is inflated in memory.
SparseTensor read_tns(InputStream& in, const TnsReadOptions& options = {});

// One part of a .tns file read by one of `parts` readers (the ranks of an MPI job): the
// lines whose first byte lies in the part-th of `parts` equal byte ranges, so that every
// line is read by exactly one reader. A regular file is mapped and only its part's pages
// are read; a gzip file is inflated whole by every reader. The indices are kept as
// written: whether the file is 0- or 1-based, and the shape, are for all parts together
// to decide. Parse errors name the line in the whole file.
struct TnsPart {
  SparseTensor tensor;             // indices as written; shape empty
  int order = 0;                   // 0 when the part holds no entry
  std::vector<int64_t> max_index;  // per mode, as written (-1: none)
  bool saw_zero = false;           // an index 0 was seen (the file is 0-based)
};
TnsPart read_tns_part(const std::string& path, int part, int parts);

// Write the nonzeros as 1-based .tns text.
void write_tns(const std::string& path, const SparseTensor& tensor);

}  // namespace tk::io
