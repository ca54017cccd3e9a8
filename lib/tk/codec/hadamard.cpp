#include "tk/codec/hadamard.h"

#include <bit>
#include <cmath>

#include "tk/core/error.h"

namespace tk::codec {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Butterflies of span h over a block of n floats, written so that the compiler
// vectorises the inner loop.
void butterflies(float* x, uint64_t n, uint64_t h) {
  for (uint64_t i = 0; i < n; i += 2 * h) {
    float* a = x + i;
    float* b = x + i + h;
    for (uint64_t j = 0; j < h; ++j) {
      const float u = a[j], v = b[j];
      a[j] = u + v;
      b[j] = u - v;
    }
  }
}

void check_padded(uint64_t padded_cols) {
  if (padded_cols == 0 || padded_cols % kHadamardAlign != 0)
    throw internal_error("Hadamard rotation: row length " + std::to_string(padded_cols) + " is not a multiple of " +
                         std::to_string(kHadamardAlign));
}

enum class Direction { kForward, kInverse };

// Transform columns [first, first + count) of `rows` rows whose full length is
// `padded_cols`; the rows hold just those columns, contiguously.
void transform_rows(float* data, uint64_t rows, uint64_t padded_cols, uint64_t first, uint64_t count, uint64_t seed,
                    Direction direction) {
  check_padded(padded_cols);
  std::vector<uint32_t> blocks;
  uint64_t at = 0;
  for (uint32_t n : hadamard_blocks(padded_cols)) {
    if (at >= first && at < first + count) blocks.push_back(n);
    at += n;
  }
  uint64_t covered = 0;
  for (uint32_t n : blocks) covered += n;
  if (first % kHadamardMaxBlock != 0 || first + count > padded_cols || covered != count)
    throw internal_error("Hadamard rotation: columns " + std::to_string(first) + "+" + std::to_string(count) +
                         " do not fall on block boundaries");
  const std::vector<float> signs = hadamard_signs(seed, first, count);
  const auto one_row = [&](float* row) {
    if (direction == Direction::kForward)
      for (uint64_t c = 0; c < count; ++c) row[c] *= signs[c];
    uint64_t begin = 0;
    for (uint32_t n : blocks) {
      walsh_hadamard(row + begin, n);
      begin += n;
    }
    if (direction == Direction::kInverse)
      for (uint64_t c = 0; c < count; ++c) row[c] *= signs[c];
  };
  if (rows * count >= (uint64_t{1} << 16)) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < static_cast<int64_t>(rows); ++r) one_row(data + static_cast<uint64_t>(r) * count);
  } else {
    for (uint64_t r = 0; r < rows; ++r) one_row(data + r * count);
  }
}

}  // namespace

uint64_t hadamard_padded_cols(uint64_t cols) {
  if (cols == 0) return kHadamardAlign;
  return (cols + kHadamardAlign - 1) / kHadamardAlign * kHadamardAlign;
}

std::vector<uint32_t> hadamard_blocks(uint64_t padded_cols) {
  check_padded(padded_cols);
  std::vector<uint32_t> blocks;
  uint64_t left = padded_cols;
  while (left >= kHadamardMaxBlock) {
    blocks.push_back(static_cast<uint32_t>(kHadamardMaxBlock));
    left -= kHadamardMaxBlock;
  }
  while (left > 0) {
    const uint64_t n = std::bit_floor(left);
    blocks.push_back(static_cast<uint32_t>(n));
    left -= n;
  }
  return blocks;
}

std::vector<float> hadamard_signs(uint64_t seed, uint64_t first, uint64_t count) {
  if (first % 64 != 0) throw internal_error("Hadamard signs must start at a multiple of 64 columns");
  std::vector<float> signs(count);
  // splitmix64 is a counter: the word of columns [64 w, 64 w + 64) is the w-th output.
  uint64_t state = seed + first / 64 * 0x9E3779B97F4A7C15ull;
  uint64_t bits = 0;
  for (uint64_t c = 0; c < count; ++c) {
    if (c % 64 == 0) bits = splitmix64(state);
    signs[c] = (bits >> (c % 64)) & 1 ? -1.0f : 1.0f;
  }
  return signs;
}

void walsh_hadamard(float* x, uint64_t n) {
  for (uint64_t h = 1; h < n; h *= 2) butterflies(x, n, h);
  const float norm = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  for (uint64_t i = 0; i < n; ++i) x[i] *= norm;
}

void hadamard_rotate(float* data, uint64_t rows, uint64_t padded_cols, uint64_t seed) {
  transform_rows(data, rows, padded_cols, 0, padded_cols, seed, Direction::kForward);
}

void hadamard_unrotate(float* data, uint64_t rows, uint64_t padded_cols, uint64_t seed) {
  transform_rows(data, rows, padded_cols, 0, padded_cols, seed, Direction::kInverse);
}

void hadamard_unrotate_columns(float* data, uint64_t rows, uint64_t padded_cols, uint64_t first, uint64_t count,
                               uint64_t seed) {
  transform_rows(data, rows, padded_cols, first, count, seed, Direction::kInverse);
}

}  // namespace tk::codec
