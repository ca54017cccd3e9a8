// Canonical, length-limited Huffman coding of one byte stream, as used by the lossless
// codec for the byte planes of float tensors. Symbols are single bytes or, when few
// byte values occur (the exponent plane of bf16 weights uses about 25), pairs of
// consecutive bytes: coding pairs halves the redundancy of a per-byte Huffman code
// (bf16 N(0, 0.02): 2.591 -> 2.565 bits per exponent, order-0 entropy 2.545).
//
// Stream layout (all integers little-endian):
//   u8   width: 1 (byte symbols) or 2 (pairs of bytes)
//   u8   the last byte, present only when width is 2 and the decoded size is odd
//   32 B bitmap of the byte values that occur (bit v of byte v/8); k = values set
//   nibbles, two per byte (low first): the code length (0 = unused, 1..14) of each
//        symbol, width 1: k of them in byte order; width 2: k*k of them, pair (a, b)
//        at rank(a)*k + rank(b), a the earlier byte
//   3 x u32  byte lengths of segments 0..2; segment 3 takes the rest
//   segments: the symbols split into four runs of ceil(symbols/4) (the last shorter),
//        each an LSB-first bit stream padded with zero bits to a whole byte, so that
//        four decoders run interleaved.
// The code is complete (Kraft sum exactly 1) and canonical: lengths alone define it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tk::codec {

// Longest code length. Pair alphabets need long codes for their rare pairs: limiting
// them to 11 bits costs 0.07 bits per byte on bf16 exponents, to 14 bits 0.002.
inline constexpr int kHuffmanMaxBits = 14;
// Bits of the first decode lookup: 2^11 entries of 8 bytes stay in L1. The few longer
// codes (under 1% of the symbols of a bf16 exponent plane) take a second lookup.
inline constexpr int kHuffmanTableBits = 11;
// Bytes past the planned size that HuffmanEncoder::encode may scribble on (8-byte stores).
inline constexpr size_t kHuffmanSlack = 8;

// What a histogram says about a stream; computed by HuffmanEncoder::plan.
struct ByteStreamStats {
  uint32_t distinct = 0;     // byte values that occur
  uint64_t top_count = 0;    // occurrences of the most frequent byte value
  uint8_t top_value = 0;     // the most frequent byte value (the value, when distinct == 1)
};

// Order-0 entropy, in bits per byte, of 16 evenly spread 1 KiB blocks of `src` (all of
// it when shorter than 32 KiB): a cheap test of whether coding a stream can pay. The
// estimate runs a little low (by about 0.01 bits for 256 equally likely values).
double sampled_entropy_bits(std::span<const uint8_t> src);

// Reusable per-thread encoder state (about 0.5 MiB of tables). Not thread safe.
class HuffmanEncoder {
 public:
  HuffmanEncoder();

  // Histogram `src`, choose byte or pair symbols and their code lengths, and return an
  // upper bound of the coded size in bytes (SIZE_MAX when Huffman coding does not
  // apply: fewer than two distinct values, or too little data). `stats()` is valid
  // afterwards in every case.
  size_t plan(std::span<const uint8_t> src);
  const ByteStreamStats& stats() const { return stats_; }

  // Code `src`, which must be the stream given to the last plan() that did not return
  // SIZE_MAX, into `dst`, which must hold the planned bound plus kHuffmanSlack bytes.
  // Returns the bytes written (at most the planned bound).
  size_t encode(std::span<const uint8_t> src, uint8_t* dst);

 private:
  void plan_lengths(const uint32_t* counts, uint32_t symbols, uint8_t* lengths, uint64_t* bits);
  template <int W> const uint8_t* encode_segments(const uint8_t* p, size_t count, size_t* lengths);

  std::vector<uint32_t> pair_counts_;  // 65536, indexed by first | second << 8; all zero between plans
  std::vector<uint32_t> codes_;        // 65536, bit-reversed code | length << 16, valid for planned symbols
  std::vector<uint32_t> counts_;       // pair counts over the values that occur, rank(a) * k + rank(b)
  std::vector<uint32_t> weights_;      // scratch of plan_lengths
  std::vector<uint64_t> sort_keys_;    // scratch of plan_lengths: count << 16 | symbol
  std::vector<uint8_t> pair_lengths_;  // code lengths of the pair symbols
  uint8_t byte_lengths_[256];          // code lengths of the byte symbols, by rank
  std::vector<uint8_t> segments_;      // the four segments while they are coded
  size_t segment_area_ = 0;            // bytes reserved per segment in segments_
  uint64_t byte_counts_[256];
  uint8_t values_[256];                // the byte values that occur, increasing
  uint32_t k_ = 0;                     // number of such values
  uint8_t pair_values_[256];           // the values that occur inside pairs, increasing
  uint32_t pair_k_ = 0;
  int width_ = 1;
  size_t planned_ = 0;
  ByteStreamStats stats_;
};

// Reusable per-thread decoder state. Not thread safe.
class HuffmanDecoder {
 public:
  HuffmanDecoder();

  // Decode a stream written by HuffmanEncoder into exactly dst.size() bytes. Throws
  // tk::Error(kInvalidInput) when `src` is not such a stream of that size; reads only
  // inside `src` and writes only inside `dst`.
  void decode(std::span<const uint8_t> src, std::span<uint8_t> dst);

 private:
  void build_tables(const uint8_t* values, uint32_t k, int width, uint32_t symbols);

  std::vector<uint64_t> single_;  // one symbol per entry: bytes | bits << 32 | width << 40
  std::vector<uint64_t> multi_;   // as many whole symbols as fit in 11 bits and 4 bytes
  std::vector<uint64_t> long_;    // second-level entries of codes longer than 11 bits
  std::vector<uint8_t> lengths_;
};

}  // namespace tk::codec
