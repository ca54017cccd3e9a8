// Fast dequantization of codes that decode through a table: NF4, FP8, the MX element
// formats, NVFP4's E2M1, k-means levels and vq vectors. Every function gives exactly the
// values of its scalar reference (decode_packed_table, or a plain table lookup), bit for
// bit: outputs are table[code] * scale with the same single rounding. (A NaN entry times
// a NaN scale is NaN in both, with either operand's sign: C++ does not fix which.)
//
// The AVX2 paths (compiled in where the build targets AVX2, BMI2 and F16C):
//   - 4-bit tables (NF4, E2M1, kmeans:4): in-register permutes of the table,
//     pre-multiplied by each group's scale (the same products as multiplying after);
//   - FP8 and FP6 codes: computed arithmetically (the code's bits moved into an f16,
//     converted, times a power of two folded into the scale), the rule checked against
//     the table once for all codes; a vector of 16 holding a code the rule does not
//     cover (E4M3 NaN, E5M2 Inf and NaN) takes the table instead; I8 codes likewise by
//     integer conversion;
//   - k-means levels: permutes up to 5 bits, scalar table loads from 6 to 8 (eight
//     codes unpacked into a register, their entries built into one vector); vq vectors
//     of any dimension 1..16 as whole registers that the next codeword overwrites.
#pragma once

#include <cstdint>
#include <vector>

#include "tk/core/dtype.h"

namespace tk::quant::detail {

// A code table with its decoding plan. `format` names what the codes are, if the
// table is the decoding of a number format (kF8E4M3, kF8E5M2, kF6E2M3, kF6E3M2, kF4,
// or kI8 for a table of int8(code) times a constant); any other dtype (kU8) is a plain
// table. The arithmetic plan is used only if it reproduces every covered entry.
class CodeTable {
 public:
  CodeTable() = default;
  CodeTable(int bits, const float* table, DType format = DType::kU8);

  int bits() const { return bits_; }
  const float* values() const { return table_.data(); }

  // Dequantize n packed codes (LSB first, n and group multiples of 8): y[i] =
  // table[code i] * scales[i / group], as decode_packed_table. `reference` runs the scalar
  // reference instead.
  void decode_scaled(const uint8_t* packed, int64_t n, int64_t group, const float* scales, float* y,
                     bool reference) const;

  // What the fast path does, for tests and benchmarks.
  enum class Plan { kScalar, kPermute, kMinifloat, kInt8, kGather };
  Plan plan() const { return plan_; }

 private:
  int bits_ = 0;
  std::vector<float> table_;  // 2^bits entries, at least 16
  Plan plan_ = Plan::kScalar;
  // Minifloat and I8 plans: f16 bits = (code & mag_mask) << mag_shift | (code & sign_mask)
  // << sign_shift; value = f16 * factor. Codes with (code & special_mask) ==
  // special_value are taken from the table (special_mask 0: none).
  uint16_t mag_mask_ = 0, mag_shift_ = 0, sign_mask_ = 0, sign_shift_ = 0;
  uint16_t special_mask_ = 0, special_value_ = 0;
  float factor_ = 1.0f;
};

// Decode `count` codes of an LSB-first `bits`-wide stream (code_bytes long) starting at
// code `first` into out[i] = levels[code] (levels: 2^bits entries), as a scalar loop over
// cbdetail::unpack_code would; bits 1..8. Eight codes a step through in-register
// permutes (up to 32 levels) or scalar table loads (64..256). Returns false, having done
// nothing, where the build has no AVX2 path.
bool decode_levels(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                   const float* levels, float* out);

// Decode `count` vector codes of an LSB-first `bits`-wide stream (bits 1..14, code_bytes
// long) starting at code `first`: out[v * dim + d] = book[code * dim + d] * scale. book
// holds 2^bits * dim floats and 8 more that are read but not used (whole registers are
// loaded per codeword); nothing past out[count * dim] is written. Returns false, having
// done nothing, where the build has no fast path (no AVX2, or dim outside 1..16).
bool decode_vectors(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first, uint64_t count,
                    const float* book, int dim, float scale, float* out);

// E8M0 scale codes to f32 (2^(code - 127), 0xff NaN), as std::ldexp(1.0f, code - 127).
void decode_e8m0(const uint8_t* codes, int64_t n, float* out);

}  // namespace tk::quant::detail
