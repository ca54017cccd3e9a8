// Lossless compression of tensor bytes: each element's bytes are split into streams
// that compress well apart (bf16/f16: exponent byte and sign+mantissa byte; f32: four
// byte planes; f64: eight), and each stream of each chunk is entropy-coded on its own
// (zstd, or Huffman where that wins), or stored raw when coding does not reach 0.95x.
// Other dtypes get plain zstd per chunk. Chunks are independent, so both directions run
// in parallel, and the frame is the same for any thread count. The frame is
// self-describing: dtype, element count, chunk table, and an XXH3 of the decoded bytes
// of each chunk (the layout is described in lossless.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "tk/core/buffer.h"
#include "tk/core/dtype.h"

namespace tk::codec {

struct LosslessOptions {
  int level = 3;                  // zstd level for streams coded with zstd
  uint32_t chunk_bytes = 1 << 20; // bytes of input per chunk (256 KiB .. 1 MiB sensible);
                                  // a multiple of 64 from 256 B to 64 MiB, else kUsage
  int threads = 0;                // 0: OpenMP default; 1: serial
  // The bytes are an XOR delta (BitX): float planes take each element's bytes as they
  // are, high to low, with plane 0 sorted by the top bit of plane 1 (byte_planes.h),
  // and from level 10 every plane gets a zstd try, kept where it saves a byte (elements
  // left unchanged are runs of zeros inside planes that are otherwise nearly random).
  bool delta = false;
};

// Compress `bytes`, which hold elements of `dtype` (any dtype; byte grouping applies to
// the float dtypes), into a self-describing frame.
std::vector<uint8_t> lossless_compress(DType dtype, std::span<const uint8_t> bytes,
                                       const LosslessOptions& options = {});

// Size of the bytes a frame decodes to. Throws kInvalidInput when `frame` is not one.
uint64_t lossless_decoded_size(std::span<const uint8_t> frame);

// Decode `frame` into `out`, which must be exactly lossless_decoded_size() bytes, and
// check the XXH3 of the result. Throws kInvalidInput on any corruption (bad magic,
// truncated frame, stream that does not decode, checksum mismatch); never reads or
// writes out of bounds on malformed input.
void lossless_decompress(std::span<const uint8_t> frame, std::span<uint8_t> out, int threads = 0);

// Bytes of a frame's fixed header, all that lossless_claimed_size needs.
inline constexpr size_t kLosslessHeaderBytes = 32;
// The decoded size a frame of `frame_bytes` bytes claims, read from its first bytes
// (`head`, at least kLosslessHeaderBytes of them) and checked against what a frame of
// that length can hold: its chunk table must fit, so the claim is at most 64 MiB per
// table entry. Throws kInvalidInput when the claim is impossible or `head` no header.
uint64_t lossless_claimed_size(std::span<const uint8_t> head, uint64_t frame_bytes);

// Where a streaming decode reads its frame: the next `n` bytes (a view of a mapping, or
// read into a buffer), or throw.
using LosslessSource = std::function<Buffer(size_t n)>;
// Where it hands the decoded bytes: consecutive pieces, each a buffer the sink may keep
// (nothing else writes to it); their concatenation is the frame's content.
using LosslessSink = std::function<void(Buffer piece)>;

// Decode a frame of `frame_bytes` bytes read in order from `source`, a batch of chunks
// at a time (two chunks per thread), so that memory stays bounded by a batch (at most
// 16 MiB, or one chunk of up to 64 MiB), not by what the frame decodes to. The header's claims are checked against
// `frame_bytes` and `expected_bytes` (the decoded size the caller was promised) before
// anything is allocated for them, and each chunk's checksum before its bytes reach the
// sink. Throws kInvalidInput on any corruption, with the frame partly delivered. With a
// `pool`, pieces and read buffers come from it: those the sink has dropped are reused.
void lossless_decompress_stream(const LosslessSource& source, uint64_t frame_bytes, uint64_t expected_bytes,
                                const LosslessSink& sink, int threads = 0, BufferPool* pool = nullptr);

// A frame held in memory (a mapped file), read by byte range: only the chunks a range
// touches are decoded, each checked against its XXH3. The header and table are checked
// once, on construction (kInvalidInput when corrupt), so a frame's claims cost nothing
// until they are read. `frame` must outlive the reader.
class LosslessFrame {
 public:
  explicit LosslessFrame(std::span<const uint8_t> frame);
  ~LosslessFrame();
  LosslessFrame(LosslessFrame&&) noexcept;
  LosslessFrame& operator=(LosslessFrame&&) noexcept;

  uint64_t size() const;         // decoded bytes
  uint32_t chunk_bytes() const;  // decoded bytes per chunk (the last may be shorter)
  // Decode bytes [offset, offset + out.size()) into `out`.
  void read(uint64_t offset, std::span<uint8_t> out, int threads = 0) const;

 private:
  struct Parsed;
  std::unique_ptr<Parsed> f_;
};

}  // namespace tk::codec
