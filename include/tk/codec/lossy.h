// Lossy compression of float tensors, two ways to the same trade-off so that users can
// compare them at equal bits per value:
//  - video: each 2-D view of the tensor (optionally rotated by a randomized Hadamard
//    transform) is scaled to 8- or 10-bit luma, tiled into frames and encoded intra-only
//    through libavcodec (libx265, SVT-AV1, libx264); decoding reads the luma plane
//    directly (no colour conversion);
//  - quant: the same rotation, rounding to the bits asked, and entropy coding.
// Frames are self-describing (method, dtype, shape, scales, rotation seed, measured
// error), so lossy_decode needs nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tk/core/tensor.h"

namespace tk::codec {

enum class LossyMethod { kVideoHevc, kVideoAv1, kVideoH264, kQuant };

struct LossyOptions {
  LossyMethod method = LossyMethod::kQuant;
  // Exactly one of these drives the rate: a codec CRF (video only, >= 0), or a target
  // bits per value (the encoder searches the CRF / picks the bit depth to meet it).
  int crf = -1;
  double bits_per_value = 0;
  bool rotate = true;      // randomized Hadamard rotation before scaling
  uint64_t seed = 0;       // rotation signs
  int bit_depth = 8;       // video luma depth, 8 or 10
  int threads = 0;
  int gpu = -1;            // video: the CUDA device whose NVENC encodes (-1: software)
};

struct LossyReport {
  uint64_t values = 0;
  uint64_t bytes = 0;          // frame size
  double bits_per_value = 0;   // 8 * bytes / values
  double rel_rmse = 0;         // ||x - x'|| / ||x||
  double sqnr_db = 0;          // 10 log10(||x||^2 / ||x - x'||^2)
  double max_abs_error = 0;
  double encode_seconds = 0;
};

// Is `method` usable here? False when libavcodec lacks the encoder (the message of a
// kUnavailable error names the missing encoder library).
bool lossy_available(LossyMethod method, std::string* why = nullptr);
// Whether CUDA device `gpu` encodes `method` (the video methods, through NVENC); false
// with the reason otherwise.
bool lossy_gpu_available(LossyMethod method, int gpu, std::string* why = nullptr);
// The encoder that codes `method` ("libx265", "hevc_nvenc" with gpu >= 0, "quant").
std::string lossy_encoder_name(LossyMethod method, int gpu = -1);

// Encode a float tensor (F32, F16, BF16, F64). Throws kUnavailable when the encoder is
// missing, kUsage for a non-float tensor or bad options. Fills `report` when given.
std::vector<uint8_t> lossy_encode(const Tensor& tensor, const LossyOptions& options, LossyReport* report = nullptr);

// Decode a frame from lossy_encode into a tensor of the original dtype and shape.
// Throws kInvalidInput on a malformed frame, kUnavailable when the decoder is missing.
Tensor lossy_decode(std::span<const uint8_t> frame);

// Decode a frame piece by piece: `sink` receives the tensor's bytes in order. Memory is
// bounded by a unit of 2^23 values and what the method keeps around it (quant: one
// chunk of 2^22 values; video: the frame rows of its tiling the unit spans, at most 1024
// rows of the tensor's row length at 2 bytes a sample), not by the size the frame
// claims. Throws as lossy_decode does; pieces already delivered stay delivered.
using LossySink = std::function<void(Buffer piece)>;
void lossy_decode_stream(std::span<const uint8_t> frame, const LossySink& sink, int threads = 0);

// What a frame says about itself, read without decoding: the stored error (rel_rmse,
// sqnr_db, max_abs_error), values, bytes and bits_per_value; encode_seconds is 0.
struct LossyFrameInfo {
  LossyMethod method = LossyMethod::kQuant;
  DType dtype = DType::kF32;
  Shape shape;
  bool rotated = false;
  uint64_t seed = 0;
  int crf = -1;        // video: the CRF used (searched or given); quant: -1
  int bit_depth = 0;   // video: luma depth; quant: 0
  LossyReport report;
};

// Check a frame (checksum, counts against the shape) and describe it. Throws
// kInvalidInput on a malformed frame.
LossyFrameInfo lossy_inspect(std::span<const uint8_t> frame);

// "hevc", "av1", "h264", "quant" and back; nullopt-like failure as kUsage.
const char* lossy_method_name(LossyMethod method);
LossyMethod lossy_method_parse(const std::string& text);

}  // namespace tk::codec
