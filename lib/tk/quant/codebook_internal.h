// Pieces shared by the codebook schemes (codebook.cpp, vq.cpp): spec parsing, the
// seeded generator, code packing and the checks dequantize() makes on parts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/tensor.h"
#include "tk/quant/scheme.h"

namespace tk::quant::cbdetail {

// Split "kmeans:3" into {"kmeans", "3"}; integer arguments checked against [lo, hi].
std::vector<std::string_view> split_spec(std::string_view spec);
int parse_spec_int(std::string_view text, int lo, int hi, std::string_view spec);

// splitmix64: a small generator whose sequence is the same on every platform (the
// standard distributions are not), so codebooks depend only on the seed.
class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();                       // [0, 1)
  uint64_t below(uint64_t n);             // [0, n)
 private:
  uint64_t state_;
};

// Seed of one independent stream (a row, a group): the same whatever thread runs it.
uint64_t derive_seed(uint64_t seed, uint64_t stream);

// Bytes of `count` codes of `bits` bits packed little-endian.
uint64_t packed_bytes(uint64_t count, int bits);
// Write code i at bit i*bits of `out` (zeroed, packed_bytes(count, bits) long).
template <typename Code>
void pack_codes(const Code* codes, uint64_t count, int bits, uint8_t* out) {
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t bit = i * static_cast<uint64_t>(bits);
    uint32_t value = codes[i];
    for (int done = 0; done < bits;) {
      int shift = static_cast<int>((bit + done) & 7);
      int take = std::min(bits - done, 8 - shift);
      out[(bit + done) >> 3] |= static_cast<uint8_t>(((value >> done) & ((1u << take) - 1)) << shift);
      done += take;
    }
  }
}
// Code i of a packed stream (reads only inside [codes, codes + bytes)).
uint32_t unpack_code(const uint8_t* codes, uint64_t bytes, int bits, uint64_t i);

// Checks of dequantize(): the named part exists with this dtype and shape, else
// kInvalidInput naming the part.
const Tensor& require_part(const Quantized& q, const std::string& name, DType dtype,
                           const Shape& shape);
// An integer parameter in [lo, hi], else kInvalidInput.
int64_t require_param(const Quantized& q, const std::string& name, int64_t lo, int64_t hi);

// rows x cols view of a shape (cols = last dimension; a 0-rank tensor is 1 x 1).
void rows_cols(const Shape& shape, int64_t* rows, int64_t* cols);

// Tensors holding a copy of values.
Tensor make_u8(const std::vector<uint8_t>& bytes);
Tensor make_f16(const std::vector<float>& values, Shape shape);

}  // namespace tk::quant::cbdetail
