// Intra-only video coding of luma planes through FFmpeg's libavcodec, for the lossy
// tensor codec: every frame is a keyframe (no inter prediction, no B-frames), and
// decoding reads the luma plane as coded, without colour conversion. Encoders tried, in
// order: hevc: libx265; av1: libsvtav1, libaom-av1; h264: libx264. With a GPU asked for
// (VideoParams::gpu), the GPU's hardware encoder instead (NVENC: hevc_nvenc, av1_nvenc,
// h264_nvenc), as LLM.265 codes tensors; decoding stays in software. Encoders that take
// gray input get it; the others get 4:2:0 with neutral chroma (P010 for NVENC at 10 bits).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tk::codec {

enum class VideoCodec : uint8_t { kHevc = 0, kAv1 = 1, kH264 = 2 };

struct VideoParams {
  VideoCodec codec = VideoCodec::kHevc;
  int bit_depth = 8;  // 8 or 10
  int width = 0;      // a multiple of 16, 64 .. 4096
  int height = 0;
  int crf = 23;       // 0 .. video_crf_max(codec); lower is better quality
  int threads = 0;    // encoder threads; 0: the encoder's default
  int gpu = -1;       // the CUDA device whose NVENC encodes; -1: the software encoders
};

// Is an encoder (and a decoder) for `codec` in this libavcodec? Otherwise false, and
// `why` names the missing library.
bool video_available(VideoCodec codec, std::string* why = nullptr);

// The libavcodec encoder used for `codec` ("libx265", ...), or "" when none is present;
// with `gpu` >= 0 the NVENC one ("hevc_nvenc").
std::string video_encoder_name(VideoCodec codec, int gpu = -1);

// Whether CUDA device `gpu`'s NVENC opens an encoder for `codec` (an NVENC encoder in
// this libavcodec, and a driver with the encoding library); otherwise false with the
// reason in `why`. The answer is kept per codec and device.
bool video_gpu_available(VideoCodec codec, int gpu, std::string* why = nullptr);

// Largest CRF of the codec's scale: 51 for hevc/h264, 63 for av1.
int video_crf_max(VideoCodec codec);

// Encode `frames` planes of width x height samples (frame after frame, row-major, each
// sample below 2^bit_depth) into one packet per frame, in order. Throws kUnavailable
// when the encoder is missing, kUsage for bad parameters, kRuntime when the encoder
// fails.
std::vector<std::vector<uint8_t>> video_encode(const VideoParams& params, const uint16_t* planes, uint64_t frames);

// Decode the packets of video_encode into planes (frame after frame, width x height
// samples each; `planes` holds packets.size() frames). Throws kInvalidInput when the
// packets do not decode to exactly that many frames of that size and depth,
// kUnavailable when the decoder is missing.
void video_decode(const VideoParams& params, const std::vector<std::span<const uint8_t>>& packets, uint16_t* planes);

}  // namespace tk::codec
