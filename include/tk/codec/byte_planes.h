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

// How an element's bytes go to planes: regrouped as above (weights), or as they are,
// high to low (XOR deltas, whose sign and exponent bits are mostly zero together: there
// the regrouping moves the exponent's low bit, which flips with the mantissa, into the
// nearly constant plane).
enum class PlaneOrder : uint8_t { kRegrouped, kBytes };

// Split `count` little-endian elements of `width` bytes (2, 4 or 8) at `src` into the
// planes `planes[0..width)`, each of `count` bytes.
void split_planes(int width, const uint8_t* src, size_t count, uint8_t* const* planes,
                  PlaneOrder order = PlaneOrder::kRegrouped);

// Inverse of split_planes: interleave `width` planes of `count` bytes into `dst`.
void merge_planes(int width, const uint8_t* const* planes, size_t count, uint8_t* dst,
                  PlaneOrder order = PlaneOrder::kRegrouped);

// The high plane of an XOR delta sorted by context: `out` receives the `count` bytes of
// `high` whose element has the top bit of `context` (plane 1) clear, then those with it
// set, each group in order. With plain byte planes of bf16 and f32, that bit is the
// exponent's lowest: a delta whose exponent changed there often changed above it too
// (a carry), and one whose did not almost never did, so the first group is nearly all
// zeros and the two code far smaller than mixed.
void sort_high_plane(const uint8_t* high, const uint8_t* context, size_t count, uint8_t* out);

// Inverse of sort_high_plane: `sorted` back into element order in `out`.
void unsort_high_plane(const uint8_t* sorted, const uint8_t* context, size_t count, uint8_t* out);

}  // namespace tk::codec
