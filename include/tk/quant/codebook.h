// Codebook (non-uniform) quantization: `kmeans:BITS` and `vq:DIM:BITS`.
//
// kmeans:BITS (1..8) learns 2^BITS sorted f16 levels per tensor, per row (channel) or
// per group of a row, by weighted 1-D k-means (k-means++ on a seeded subsample, then
// Lloyd iterations on the sorted values through prefix sums, so an iteration costs
// O(K log n) instead of O(n K)). Codes are assigned to the nearest stored (f16) level.
// An optional share of outliers (largest importance-weighted magnitude) is kept exactly
// in f16 and excluded from the fit.
//
// vq:DIM:BITS (DIM 1..16, BITS 1..14) learns one codebook of 2^BITS vectors of DIM
// values for the tensor (k-means on a seeded subsample of the row sub-vectors; nearest
// codeword by GEMM-based distances, ties re-checked exactly so the choice does not
// depend on the BLAS kernel), optionally after dividing each row by its RMS
// (granularity channel, the default).
//
// Parts (file layout in docs/QUANT.md):
//   kmeans: codes U8 [bytes] (BITS-bit codes, little-endian bit stream, element 0 in the
//           low bits), codebook F16 [codebooks, 2^BITS], and with outliers
//           outlier_index U32 [n] (delta-coded flat positions) and outlier_value F16 [n].
//   vq:     codes U8 [bytes] (BITS-bit codes per sub-vector), codebook F16 [2^BITS, DIM],
//           and with row scaling scales F16 [rows].
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tk/quant/scheme.h"

namespace tk::quant {

// The codebook scheme for a spec "kmeans:BITS" or "vq:DIM:BITS"; nullptr when the
// spec's family is neither. Throws kUsage when the family matches but the arguments
// are malformed or out of range.
std::unique_ptr<Scheme> make_codebook_scheme(std::string_view spec);

// Syntax lines of the codebook families, for scheme_names().
std::vector<std::string> codebook_scheme_names();

// ---- building blocks, exposed for tests and the benchmark ----

// Index of the level nearest to x among `levels` (ascending), the lower index on a tie.
// Reference: a linear scan over exact distances.
int codebook_nearest_reference(const float* levels, int count, float x);
// Same answer through the midpoints (count - 1 values, ascending, computed by
// codebook_midpoints) by binary search; a run of equal levels answers its first.
int codebook_nearest_sorted(const float* levels, const double* midpoints, int count, float x);
std::vector<double> codebook_midpoints(const float* levels, int count);

// Unpack `count` BITS-bit codes starting at element `first` of a packed stream and
// write levels[code] to out. Reference: one code at a time. Fast: byte lookup tables
// for 1, 2, 4 and 8 bits, 64-bit window reads otherwise. Both must agree exactly.
void codebook_decode_reference(const uint8_t* codes, uint64_t code_bytes, int bits,
                               uint64_t first, uint64_t count, const float* levels, float* out);
void codebook_decode(const uint8_t* codes, uint64_t code_bytes, int bits, uint64_t first,
                     uint64_t count, const float* levels, float* out);

// Pack codes (each < 2^bits) into a little-endian bit stream of ceil(n*bits/8) bytes.
std::vector<uint8_t> codebook_pack(const std::vector<uint16_t>& codes, int bits);

}  // namespace tk::quant
