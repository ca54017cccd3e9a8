// Quantized tensors in ordinary tensor files: each quantized tensor NAME is stored as
// plain tensors NAME.<part> (codes, scales, codebooks, ...) and described in the `tk`
// metadata value (a JSON object) under "quant":
//
//   {"quant": {"version": 1, "tensors": {"NAME": {"scheme": "int4", "dtype": "BF16",
//     "shape": [4096, 4096], "params": {"group_size": "64", ...},
//     "parts": ["codes", "scales"]}}}, "provenance": [...]}
//
// Also the reader of importance files (--importance): one f32-convertible vector per
// tensor, named like the tensor. docs/QUANT.md has the full description.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tk/core/error.h"
#include "tk/core/tensor.h"
#include "tk/quant/scheme.h"

namespace tk::quant {

inline constexpr int kLayoutVersion = 1;
// The metadata key that holds tensorkit's JSON (provenance and this layout).
inline constexpr const char* kTkMetadataKey = "tk";

// What the metadata says about one quantized tensor.
struct LayoutRecord {
  std::string scheme;
  DType dtype = DType::kF32;  // the original tensor's dtype (dequant restores it)
  Shape shape;
  std::map<std::string, std::string> params;
  std::vector<std::string> parts;  // suffixes; the stored tensors are NAME.<suffix>
};

// The stored name of a part: "NAME.<suffix>".
std::string layout_part_name(const std::string& tensor, const std::string& suffix);

// The record of a freshly quantized tensor whose original dtype was `dtype`.
LayoutRecord layout_record(const Quantized& q, DType dtype);

// The new `tk` metadata value: `previous` (may be absent or not JSON, then kept as in
// provenance_merge: under "previous") with "quant" set to these records. Compact JSON,
// keys sorted, so the bytes depend only on the records.
std::string layout_metadata_merge(const std::optional<std::string>& previous,
                                  const std::map<std::string, LayoutRecord>& records);

// The `tk` value without its "quant" object (what dequantized files carry on); a value
// that is not a JSON object is returned unchanged.
std::string layout_metadata_strip(const std::string& tk_value);

// The records of a `tk` metadata value. Throws kInvalidInput naming what is wrong when
// the value is not JSON, has no "quant" object, an unknown version, or a record with a
// missing or malformed field or an unknown dtype.
std::map<std::string, LayoutRecord> layout_metadata_parse(const std::string& tk_value);

// Rebuild the Quantized of `record` from its part tensors (found through `part_lookup`,
// which returns null when the file has no such tensor). Throws kInvalidInput naming the
// tensor when a part is missing; the scheme's dequantize() checks sizes and params.
// kInvalidInput "missing part 'SUFFIX'" located at the tensor.
Error layout_missing_part(const std::string& name, const std::string& suffix);
template <typename Lookup>
Quantized layout_collect(const std::string& name, const LayoutRecord& record, Lookup&& part_lookup) {
  Quantized q;
  q.scheme = record.scheme;
  q.shape = record.shape;
  q.params = record.params;
  for (const std::string& suffix : record.parts) {
    const Tensor* t = part_lookup(layout_part_name(name, suffix));
    if (!t) throw layout_missing_part(name, suffix);
    q.parts[suffix] = *t;
  }
  return q;
}
// Importance vectors by name: from llama.cpp's imatrix (GGUF or legacy .dat, see
// imatrix.h; each column clipped to kImatrixColumnCap times its vector's median), else
// every float tensor of a tensor file (safetensors, HDF5, ...), converted to f32 and
// taken as given. Throws like io::open_reader, and kInvalidInput for a malformed
// imatrix.
std::map<std::string, std::vector<float>> read_importance(const std::string& path);

// The importance vector of tensor `name` with `cols` columns: the entry named `name`,
// else null. Throws kInvalidInput when its length is not `cols`, or a value is negative
// or not finite.
const float* importance_for(const std::map<std::string, std::vector<float>>& importance,
                            const std::string& name, int64_t cols);

}  // namespace tk::quant
