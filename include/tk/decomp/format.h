// How a decomposition is stored: as ordinary named tensors (factors, cores, weights)
// plus a JSON description under the `tk` metadata key, so that any reader can load the
// parts and `tdecomp reconstruct` can rebuild the dense tensor from the file alone.
//
// Part names, for a source tensor NAME (docs/DECOMP.md):
//   CP      NAME.cp.lambda [R], NAME.cp.factor.N [I_N, R]
//   Tucker  NAME.tucker.core [r_1, ..., r_d], NAME.tucker.factor.N [I_N, r_N]
//   TT      NAME.tt.core.K [r_K, n_K, r_K+1]
//   RESCAL  NAME.rescal.A [n, R], NAME.rescal.R [R, R, m] (R[:, :, k] pairs with X[:, :, k])
// The `tk` metadata value is a JSON object; its "decomp" member maps each source name
// to {"method", "shape", "dtype", "ranks", "factor_dtype", "rel_error", "fit",
// "iterations", "seconds", "seed", ...} (TT adds "tt_shape": the tensorised shape;
// RESCAL "r_layout": "r,r,m", absent in files that stored R as [m, R, R]). Its
// "decomp_kept" member maps the name of each tensor stored unchanged, under its own
// name, to {"method"}: the method whose decomposition would not have been smaller.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tk/core/tensor.h"
#include "tk/decomp/decomp.h"
#include "tk/io/tensor_file.h"

namespace tk::decomp {

enum class Method { kCp, kTucker, kTt, kRescal };

const char* method_name(Method method);  // "cp", "tucker", "tt", "rescal"

// RESCAL's "r_layout" note: R stored as [R, R, m]; files written before the note stored
// it as [m, R, R] and are read as such.
inline constexpr const char* kRescalLayout = "r,r,m";
inline constexpr const char* kRescalLegacyLayout = "m,r,r";

// One stored array of a decomposition, in f64 until it is written.
struct Part {
  std::string suffix;  // after "NAME.": "cp.factor.0", "tucker.core", ...
  Shape shape;
  std::vector<double> values;
};

// A decomposition of one source tensor with what the report and metadata need.
struct Decomposition {
  std::string name;             // the source tensor's name
  Method method = Method::kCp;
  Shape shape;                  // the source tensor's shape
  DType dtype = DType::kF32;    // the source tensor's dtype
  Shape tt_shape;               // TT: the shape that was decomposed (== shape unless --shape)
  std::vector<int64_t> ranks;   // CP/RESCAL: [R]; Tucker: [r_1..r_d]; TT: [1, r_1, .., 1]
  std::vector<Part> parts;
  DType factor_dtype = DType::kF32;  // dtype the parts are stored in
  double rel_error = 0;         // ||X - X^|| / ||X|| (observed entries for masked CP)
  int iterations = 0;
  double seconds = 0;
  double seconds_per_iteration = 0;  // 0: not reported by the method (seconds / iterations)
  bool converged = true;
  std::optional<uint64_t> seed;
  // Further facts for the metadata (e.g. "init": "gram", "precision": "f64"); strings
  // only, kept in key order. RESCAL: "r_layout" ("r,r,m", or "m,r,r" as read from an
  // older file) gives the shape order of the R part.
  std::map<std::string, std::string> notes;

  double fit() const { return 1.0 - rel_error; }
  // Bytes of the parts in factor_dtype, and of the source tensor.
  uint64_t stored_bytes() const;
  uint64_t original_bytes() const;
  std::string part_name(const Part& part) const { return name + "." + part.suffix; }
};

// Package a method's result. `shape`/`dtype` describe the source tensor.
Decomposition from_cp(const std::string& name, const Shape& shape, DType dtype, const CpResult& r);
// Takes the result by value: a temporary's factors are moved, not copied.
Decomposition from_tucker(const std::string& name, const Shape& shape, DType dtype, TuckerResult r);
Decomposition from_tt(const std::string& name, const Shape& shape, DType dtype, const TtResult& r);
Decomposition from_rescal(const std::string& name, const Shape& shape, DType dtype, const RescalResult& r);

// The reverse, for tools that continue from a stored decomposition (tt-round,
// --init-file). Throw kInvalidInput when the method or the parts do not fit.
TtResult to_tt(const Decomposition& d);
CpResult to_cp(const Decomposition& d);
TuckerResult to_tucker(const Decomposition& d);

// The part of a CP or Tucker model that reconstructs rows [lo, hi) of mode `mode` (that
// factor's rows; the shape's extent hi - lo): what a process holding that slab of the
// tensor measures its error against (reconstruction_sums). kUsage for TT and RESCAL.
Decomposition slab_of(const Decomposition& d, size_t mode, int64_t lo, int64_t hi);

// Round every part to `dtype` and back (what storing them in it does), in place.
void round_parts(Decomposition& d, DType dtype);

// The dense tensor the decomposition represents, row-major in the source's shape, in
// f64. Contractions go through BLAS GEMMs; the largest intermediate is the result.
std::vector<double> reconstruct(const Decomposition& d);

// ---- storage ----

// A source tensor stored unchanged under its own name, in place of a decomposition by
// `method` that would not have been smaller.
struct KeptTensor {
  std::string name;
  Method method = Method::kCp;
};

// The `tk` metadata value describing `decomps` and `kept`, merged into `previous` (the
// input's `tk` value, whose other keys are kept; previous "decomp" and "decomp_kept"
// members are replaced).
std::string decomp_metadata(const std::vector<Decomposition>& decomps, const std::vector<KeptTensor>& kept,
                            const std::optional<std::string>& previous);
// `tk` value with the "decomp" and "decomp_kept" members removed (for files rebuilt
// from decompositions); nullopt when nothing else is left.
std::optional<std::string> metadata_without_decomp(const std::optional<std::string>& tk_value);

// The tensor infos and tensors to write for `d` (parts cast to d.factor_dtype).
std::vector<io::TensorInfo> part_infos(const Decomposition& d);
Tensor part_tensor(const Decomposition& d, const Part& part);

// Descriptions found in a `tk` metadata value, parts not yet loaded (values empty,
// shapes as expected). Throws kInvalidInput ("no tdecomp metadata") when there is
// neither a "decomp" nor a "decomp_kept" entry, or when either is malformed.
std::vector<Decomposition> parse_decomp_metadata(const std::optional<std::string>& tk_value);
// The tensors a `tk` metadata value lists as kept (none without "decomp_kept"); throws
// kInvalidInput when the member is malformed.
std::vector<KeptTensor> parse_kept_metadata(const std::optional<std::string>& tk_value);

// Load the parts of `d` with `load(name)`, which returns the stored tensor; checks
// shapes and dtypes against the description (kInvalidInput naming the part otherwise).
template <typename Load> void load_parts(Decomposition& d, Load&& load);
void set_part(Decomposition& d, size_t part_index, const Tensor& stored);

template <typename Load> void load_parts(Decomposition& d, Load&& load) {
  for (size_t p = 0; p < d.parts.size(); ++p) set_part(d, p, load(d.part_name(d.parts[p])));
}

}  // namespace tk::decomp
