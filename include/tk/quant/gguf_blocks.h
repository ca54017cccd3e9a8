// tensorkit's quantized tensors as ggml blocks, for GGUF files that llama.cpp reads.
//
// A scheme has a ggml twin when ggml's dequantization of the repacked bytes gives the
// values tensorkit's dequantize() gives: the same codes, scales and formula, only the
// bytes arranged as ggml-common.h lays out its blocks. The twins:
//
//   tensorkit (options)                       ggml    value
//   int8  group 32, symmetric, f16 scales     Q8_0    d * q
//   int4  group 32, symmetric, f16 scales     Q4_0    d * (q - 8)
//   int4  group 32, asymmetric, f16 scales    Q4_1    d * q + m
//   int5  group 32, symmetric, f16 scales     Q5_0    d * (q - 16)
//   int5  group 32, asymmetric, f16 scales    Q5_1    d * q + m
//   int2  group 256, symmetric, f16 scales    TQ2_0   -d * (2 - q): the same products, negated twice
//   q2k, q3k, q4k, q5k, q6k                   Q2_K .. Q6_K  (d * sc) * q [- dmin * m]
//   mxfp4                                     MXFP4   e2m1 * 2^(e - 127)
//   iq4nl                                     IQ4_NL  d * kvalues_iq4nl[q]
//   iq4xs                                     IQ4_XS  (d * (ls - 32)) * kvalues_iq4nl[q]
//   iq3xxs                                    IQ3_XXS ((d * (0.5 + l)) * 0.5) * grid[p], signed
//   iq3s                                      IQ3_S   (d * (1 + 2 l)) * grid[p], signed
//   iq2xxs, iq2xs, iq2s                       IQ2_XXS, IQ2_XS, IQ2_S  ((d * (0.5 + l)) * 0.25) * grid[p], signed
//
// The values agree bit for bit except for the sign of some zeros: tensorkit's symmetric
// decoders add +0 (a zero code gives +0, where ggml's d * 0 is -0 for a negative d), and
// MXFP4 has no -0 (tensorkit's E2M1 code 8 is -0, ggml's is +0). Why the other schemes
// and options have none: see gguf_blocks.cpp.
//
// The tensor's last dimension (ggml's innermost, ne[0]) must be a whole number of
// blocks: a tensor whose rows tensorkit padded has no twin. A tensor quantized under
// a wider view (the view_cols parameter, see view.h) keeps its blocks in memory order,
// so it has one when both its last dimension and the view are whole blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tk/io/gguf_types.h"
#include "tk/quant/scheme.h"

namespace tk::quant {

// What quantize() needs to produce a tensor that maps to one ggml type.
struct GgufTwin {
  std::string scheme;    // spec for make_scheme: "int4", "q4k", "mxfp4"
  // The fields that fix the layout (group_size, granularity, symmetric, scale_dtype);
  // the rest are the defaults. A caller copies its own importance, seed, fast and
  // reference into them.
  QuantOptions options;
};

// The ggml block type whose decoding equals this quantized tensor's, or nullopt when
// none does: the scheme has no ggml twin, its options differ (group size, scale dtype,
// granularity, symmetry), its rows were padded, or a part is missing or malformed. For
// mxfp4 it also reads the scales: a block holding NaN or Inf (E8M0 0xff) has no twin.
std::optional<io::GgmlType> ggml_type_for(const Quantized& q);

// The scheme and options whose results map to `type`; nullopt for types with no
// tensorkit twin (F32 and the other plain types included).
std::optional<GgufTwin> tensorkit_twin(io::GgmlType type);

// The ggml type that `scheme` (a canonical spec) maps to; `symmetric` (the integer
// schemes' option) picks Q4_0 or Q4_1 and Q5_0 or Q5_1, and is ignored by the others.
// nullopt when the scheme has no twin.
std::optional<io::GgmlType> ggml_type_for_scheme(std::string_view scheme, bool symmetric);
// The schemes with a ggml twin, for messages: "int8 (Q8_0), int4 (Q4_0), int4 ASYM
// (Q4_1), ...", where ASYM is `asymmetric`, the caller's word for an integer scheme's
// asymmetric form (QuantOptions::symmetric false): a tool gives its flag.
std::string ggml_schemes_text(std::string_view asymmetric);
// Why q has no ggml type (ggml_type_for is nullopt), for messages: its rows are not whole
// blocks of its scheme's twin, or its scheme and options have none (with the schemes
// that have one, as ggml_schemes_text(asymmetric) words them).
std::string ggml_no_type_reason(const Quantized& q, std::string_view asymmetric);

// The ggml blocks of q in memory order, row after row: numel / block blocks of the
// type's size (ggml_storage_bytes(type, numel) bytes). Throws kUsage when
// ggml_type_for(q) is not `type`, kInvalidInput when a part has the wrong size.
std::vector<uint8_t> ggml_blocks(const Quantized& q, io::GgmlType type);

}  // namespace tk::quant
