// The ggml tensor types that GGUF files store: each type's number, name and block layout
// (ggml-common.h), and the dequantization of the block types tensorkit knows.
//
// A row of a block type is a sequence of blocks of `block` values stored in `type_bytes`
// bytes each; the innermost dimension must be a whole number of blocks. Plain types
// (F32, F16, BF16, F64, I8..I64) have blocks of one value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "tk/core/dtype.h"

namespace tk::io {

// The numbers are ggml's (ggml.h, enum ggml_type); gaps are types ggml removed.
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21, kIQ2_S = 22,
  kIQ4_XS = 23, kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kIQ1_M = 29, kBF16 = 30,
  kTQ1_0 = 34, kTQ2_0 = 35, kMXFP4 = 39,
};

struct GgmlTypeTraits {
  GgmlType type;
  const char* name;     // ggml's spelling: "Q4_K", "F16", "MXFP4"
  uint32_t block;       // values per block
  uint32_t type_bytes;  // bytes per block
  // The dtype of a plain type's values, or nullopt for block types.
  std::optional<DType> plain;
  // Whether gguf_dequantize() decodes this block type (always true for plain types).
  bool dequantizes;
};

// Traits of a type number as read from a file; nullopt for numbers ggml does not define.
const GgmlTypeTraits* ggml_type_traits(uint32_t type);
const GgmlTypeTraits& ggml_traits(GgmlType type);
// Look a type up by its ggml name, case-insensitive ("q4_k", "Q8_0"); nullopt if unknown.
std::optional<GgmlType> ggml_type_parse(std::string_view name);
// The GGUF type of a tensorkit dtype, for the plain types GGUF holds; nullopt otherwise
// (U8, U16, U32, U64, BOOL, the 8-bit-and-narrower floats, C64).
std::optional<GgmlType> ggml_type_of(DType dtype);

// Bytes of `values` values of `type`: values / block * type_bytes. Throws kInvalidInput
// when `values` is not a whole number of blocks or the size overflows.
uint64_t ggml_storage_bytes(GgmlType type, uint64_t values);

// Decode `out.size()` values (a whole number of blocks) of block type `type` from their
// stored bytes `blocks` (exactly ggml_storage_bytes(type, out.size()) of them) into f32,
// with the values ggml's own dequantize_row_* gives. Throws kUnavailable for types whose
// `dequantizes` is false, kInternal for a size mismatch. Large inputs are decoded by
// several OpenMP threads; the result does not depend on their number.
void gguf_dequantize(GgmlType type, std::span<const uint8_t> blocks, std::span<float> out);

}  // namespace tk::io
