// Byte grouping of float elements for the lossless codec: each element's bytes go to
// `width` planes so that bytes of like meaning sit together. The top 16 bits of an
// IEEE-style float (sign, exponent, leading mantissa bits) are regrouped so that plane
// 0 holds the 8 bits below the sign (for bf16 and f32 exactly the exponent, for f64 its
// top 8 bits, for f16 the exponent and 3 mantissa bits) and plane 1 holds the sign
// above the next 7 bits; planes 2.. are the remaining bytes, high to low. The sign bit,
// which is random, thereby leaves the exponent plane, which then compresses better.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tk::codec {

// Split `count` little-endian elements of `width` bytes (2, 4 or 8) at `src` into the
// planes `planes[0..width)`, each of `count` bytes.
void split_planes(int width, const uint8_t* src, size_t count, uint8_t* const* planes);

// Inverse of split_planes: interleave `width` planes of `count` bytes into `dst`.
void merge_planes(int width, const uint8_t* const* planes, size_t count, uint8_t* dst);

}  // namespace tk::codec
