// Internal pieces of the array conversions: element access for packed sub-byte types,
// single-threaded block decoders and encoders, and the block loop that spreads large
// arrays over OpenMP threads. Public entry points are in dtype.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "tk/core/dtype.h"

namespace tk::detail {

// Unaligned element access: the i-th T of an array at `base`.
template <typename T> inline T load(const void* base, uint64_t i) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T> inline void store(void* base, uint64_t i, T v) {
  std::memcpy(static_cast<uint8_t*>(base) + i * sizeof(T), &v, sizeof(T));
}

// Arrays of at least this many elements are converted by several threads: 4M elements
// are a millisecond or more of work per thread. Below that a parallel region costs more
// than it saves on a shared machine, where a descheduled thread holds the others at the
// closing barrier: tconvert's 1 MiB pieces took 1.8x longer with -j 2 than -j 1 beside a
// CPU-bound process when each piece was a region of its own.
inline constexpr uint64_t kParallelThreshold = uint64_t{1} << 22;
// Elements per block: a multiple of 8, so that every block of a packed F4 / F6 array
// starts on a byte boundary; small enough for the scratch buffers to stay in cache.
inline constexpr uint64_t kBlockElements = 4096;

// Call fn(begin, n) over [0, count) in blocks, in parallel when count is large.
// fn must not throw.
template <typename Fn> void for_blocks(uint64_t count, Fn&& fn) {
  const uint64_t blocks = (count + kBlockElements - 1) / kBlockElements;
  if (count >= kParallelThreshold) {
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < static_cast<int64_t>(blocks); ++b) {
      const uint64_t begin = static_cast<uint64_t>(b) * kBlockElements;
      fn(begin, std::min(kBlockElements, count - begin));
    }
  } else {
    for (uint64_t b = 0; b < blocks; ++b) {
      const uint64_t begin = b * kBlockElements;
      fn(begin, std::min(kBlockElements, count - begin));
    }
  }
}

// The library's two bit-stream readers (LSB-first streams, as every packed format here
// stores them). read_bits: bits [bit, bit + count) of a stream of `bytes` bytes (count
// <= 32, bit + count <= 8 * bytes), through one window of at most 8 bytes that never
// reads past the stream.
inline uint32_t read_bits(const uint8_t* stream, uint64_t bytes, uint64_t bit, int count) {
  const uint64_t byte = bit >> 3;
  uint64_t window = 0;
  std::memcpy(&window, stream + byte, bytes - byte < 8 ? bytes - byte : 8);
  return static_cast<uint32_t>((window >> (bit & 7)) & ((uint64_t{1} << count) - 1));
}
// unpack_codes: n codes of width `bits` (1..8) starting at element `first`, one code per
// output byte; reads only the bytes those codes occupy.
void unpack_codes(const uint8_t* src, int bits, uint64_t first, uint64_t n, uint8_t* codes);
// Pack n codes into a bit stream starting at element 0 of dst; writes ceil(n*bits/8)
// bytes, with zero padding bits at the end.
void pack_codes(const uint8_t* codes, int bits, uint64_t n, uint8_t* dst);

// Bytes holding n elements, rounded up to whole bytes. Throws kInvalidInput on overflow.
uint64_t packed_bytes(DType dtype, uint64_t n);

// Decode elements [first, first + n) of src into dst (one thread).
void decode_block_f32(DType dtype, const void* src, uint64_t first, uint64_t n, float* dst);
void decode_block_f64(DType dtype, const void* src, uint64_t first, uint64_t n, double* dst);

// Encode n values into elements [first, first + n) of dst (one thread). For packed types
// `first` must be a multiple of 8.
void encode_block_from_f32(DType dtype, const float* src, uint64_t first, uint64_t n, void* dst,
                           bool saturate);
void encode_block_from_f64(DType dtype, const double* src, uint64_t first, uint64_t n, void* dst,
                           bool saturate);

inline bool dtype_is_packed(DType dtype) { return dtype_bits(dtype) < 8; }
inline bool dtype_is_integer(DType dtype) {
  DTypeClass c = dtype_traits(dtype).cls;
  return c == DTypeClass::kBool || c == DTypeClass::kUnsigned || c == DTypeClass::kSigned;
}

}  // namespace tk::detail
