// The randomized Hadamard rotation used by the lossy codecs: each row of a matrix is
// multiplied by random signs (drawn from a seed), then transformed by orthonormal
// Walsh-Hadamard transforms over consecutive blocks whose sizes are powers of two. The
// rotation spreads every value's energy over its block, so the rotated values of a
// trained weight matrix are close to Gaussian, with no outliers to stretch the range of
// a quantizer. It is orthonormal: squared errors are the same in both domains.
#pragma once

#include <cstdint>
#include <vector>

namespace tk::codec {

// Rows are padded with zeros to a multiple of this many columns before rotation.
inline constexpr uint64_t kHadamardAlign = 16;
// The largest transform block (columns).
inline constexpr uint64_t kHadamardMaxBlock = 1024;

// `cols` rounded up to a multiple of kHadamardAlign (at least kHadamardAlign).
uint64_t hadamard_padded_cols(uint64_t cols);

// Block sizes of a padded row, left to right: the binary expansion of `padded_cols`
// (a multiple of kHadamardAlign) from the largest power, with kHadamardMaxBlock repeated
// as often as it fits. 1008 -> 512 256 128 64 32 16; 3072 -> 1024 1024 1024.
std::vector<uint32_t> hadamard_blocks(uint64_t padded_cols);

// The random signs (+1 / -1) of columns [first, first + count) for `seed`; `first` is a
// multiple of 64.
std::vector<float> hadamard_signs(uint64_t seed, uint64_t first, uint64_t count);

// Rotate `rows` rows of `padded_cols` floats each (row-major, contiguous) in place.
// Rows run in parallel (OpenMP) when there are many.
void hadamard_rotate(float* data, uint64_t rows, uint64_t padded_cols, uint64_t seed);
// Undo hadamard_rotate with the same seed (exact up to float rounding).
void hadamard_unrotate(float* data, uint64_t rows, uint64_t padded_cols, uint64_t seed);

// Undo the rotation of columns [first, first + count) of rows `padded_cols` long, for
// rows that hold just those columns (`count` floats each, contiguous). The range must
// fall on block boundaries: `first` a multiple of kHadamardMaxBlock, and `first + count`
// one too or the end of the row. Lets a decoder unrotate a long row piece by piece.
void hadamard_unrotate_columns(float* data, uint64_t rows, uint64_t padded_cols, uint64_t first, uint64_t count,
                               uint64_t seed);

// Orthonormal fast Walsh-Hadamard transform of n floats (n a power of two); its own
// inverse.
void walsh_hadamard(float* x, uint64_t n);

}  // namespace tk::codec
