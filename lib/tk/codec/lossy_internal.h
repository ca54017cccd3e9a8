// Internal pieces of the lossy codec (lossy.cpp): the payloads of the two methods, each
// coding a rotated matrix of rows x padded_cols floats. The frame format is in
// lossy.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "tk/codec/lossy.h"
#include "tk/codec/video.h"

namespace tk::codec::detail {

// Uniform quantization with one step for the whole matrix (equal steps minimise the
// total squared error at a given entropy-coded rate). The codes' zigzag form is split
// into byte planes, and each plane into chunks of kQuantChunk codes, each chunk
// Huffman-coded on its own (in parallel). Nonzero codes are reconstructed at the
// centroid of their cell: |q| - offset[min(|q|, 16) - 1] steps.
inline constexpr int kQuantOffsets = 16;
inline constexpr uint64_t kQuantChunk = uint64_t{1} << 22;

// A coded chunk: u8 method (0 raw bytes, 1 one repeated byte, 2 Huffman), then the data.
struct QuantPayload {
  float step = 0;
  std::array<float, kQuantOffsets> offsets{};
  int planes = 0;
  std::vector<std::vector<uint8_t>> chunks;  // plane after plane, chunk after chunk
};

uint64_t quant_chunk_count(uint64_t codes);

// Choose the step whose codes' order-0 entropy is `code_bits` per value, and code.
QuantPayload quant_encode(const float* values, uint64_t count, double code_bits, int threads);
// Reconstruct the values of some chunks of a payload of `count` codes, each into its own
// destination (room for kQuantChunk values, fewer for the last chunk), in parallel.
// Throws kInvalidInput when a chunk does not decode to its codes.
struct QuantChunkTarget {
  uint64_t chunk = 0;
  float* values = nullptr;
};
void quant_decode_chunks(const QuantPayload& payload, uint64_t count, std::span<const QuantChunkTarget> targets,
                         int threads);

// Per-(row, group of kVideoScaleGroup columns) scales map values onto luma around the
// middle level; the matrix is tiled into frames of width x height samples, left to
// right, then top to bottom, padding at the middle level.
inline constexpr uint64_t kVideoScaleGroup = 1024;
inline constexpr uint64_t kVideoMaxSide = 1024;

struct VideoPayload {
  VideoCodec codec = VideoCodec::kHevc;
  int bit_depth = 8;
  int crf = 0;
  uint32_t width = 0, height = 0;
  std::vector<float> scales;                 // rows x groups, value = (luma - middle) * scale
  std::vector<std::vector<uint8_t>> packets; // one per frame
};

// Frame sides for a matrix; frames in total.
void video_geometry(uint64_t rows, uint64_t padded_cols, uint32_t* width, uint32_t* height);
uint64_t video_frame_count(uint64_t rows, uint64_t padded_cols, uint32_t width, uint32_t height);
uint64_t video_scale_count(uint64_t rows, uint64_t padded_cols);

// Code a matrix at options.crf, or search the CRF for options.bits_per_value, counting
// `overhead_bits` (scales, headers) and `values` (the tensor's element count) in the
// rate.
VideoPayload video_payload_encode(const float* matrix, uint64_t rows, uint64_t padded_cols,
                                  const LossyOptions& options, VideoCodec codec, uint64_t values);
// Reconstruct rows [first_row, first_row + rows) of the matrix from the luma of the frame
// rows that hold them (`luma`: frames [frame_row * across, ...) in order, as video_decode
// writes them), columns [first_col, first_col + cols) of each, into `out` (rows x cols).
struct VideoFrameRows {
  uint64_t first = 0, count = 0;  // frame rows held
  std::vector<uint16_t> luma;
};
// Decode frame rows [first, first + count) of the tiling.
VideoFrameRows video_decode_frame_rows(const VideoPayload& payload, uint64_t padded_cols, uint64_t first,
                                       uint64_t count, int threads);
void video_cells(const VideoPayload& payload, const VideoFrameRows& frames, uint64_t padded_cols, uint64_t first_row,
                 uint64_t rows, uint64_t first_col, uint64_t cols, float* out);

// lossy_decode_stream with units of `unit_cells` cells (a multiple of
// kHadamardMaxBlock) instead of 2^23: tests use small units to cross every boundary.
void lossy_decode_units(std::span<const uint8_t> frame, const LossySink& sink, int threads, uint64_t unit_cells);

}  // namespace tk::codec::detail
