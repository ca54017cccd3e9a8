#include "tk/codec/video.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/dict.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "tk/core/error.h"

namespace tk::codec {
namespace {

// libavcodec and libavutil are opened on first use, not linked: linked, they and the
// 85 libraries they load (x265, aom, cairo, ...) cost every tool about 20 ms at start
// (`tcompress --version` took 28 ms, now 10), and only the video codecs use them. The
// names are the sonames of the headers built against.
#define TK_AV_CODEC_FUNCTIONS(X)                                                                                    \
  X(avcodec_alloc_context3) X(avcodec_find_decoder_by_name) X(avcodec_find_encoder_by_name)                      \
  X(avcodec_free_context) X(avcodec_open2) X(avcodec_receive_frame) X(avcodec_receive_packet) X(avcodec_send_frame) \
  X(avcodec_send_packet) X(av_new_packet) X(av_packet_alloc) X(av_packet_free) X(av_packet_unref)
#define TK_AV_UTIL_FUNCTIONS(X)                                                                                    \
  X(av_dict_free) X(av_dict_set) X(av_frame_alloc) X(av_frame_free) X(av_frame_get_buffer) X(av_frame_make_writable) \
  X(av_frame_unref) X(av_get_pix_fmt_name) X(av_log_set_level) X(av_pix_fmt_desc_get) X(av_strerror)

struct Av {
#define TK_AV_MEMBER(name) decltype(&::name) name = nullptr;
  TK_AV_CODEC_FUNCTIONS(TK_AV_MEMBER)
  TK_AV_UTIL_FUNCTIONS(TK_AV_MEMBER)
#undef TK_AV_MEMBER
  std::string error;  // why the libraries are not there; empty when they are
};

const Av& load_av() {
  static const Av loaded = [] {
    Av av;
    const std::string util_name = "libavutil.so." + std::to_string(LIBAVUTIL_VERSION_MAJOR);
    const std::string codec_name = "libavcodec.so." + std::to_string(LIBAVCODEC_VERSION_MAJOR);
    // Never closed: the functions are used until exit.
    void* util = ::dlopen(util_name.c_str(), RTLD_NOW | RTLD_LOCAL);
    void* codec = util ? ::dlopen(codec_name.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!codec) {
      av.error = std::string("video codecs need ") + (util ? codec_name : util_name) + ", which cannot be loaded (" +
                 ::dlerror() + ")";
      return av;
    }
    bool complete = true;
    auto bind = [&](void* library, const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(library, name));
      if (!fn && complete) {
        complete = false;
        av.error = std::string("video codecs: ") + name + " is missing from " + codec_name + " or " + util_name;
      }
    };
#define TK_AV_BIND_CODEC(name) bind(codec, #name, av.name);
#define TK_AV_BIND_UTIL(name) bind(util, #name, av.name);
    TK_AV_CODEC_FUNCTIONS(TK_AV_BIND_CODEC)
    TK_AV_UTIL_FUNCTIONS(TK_AV_BIND_UTIL)
#undef TK_AV_BIND_CODEC
#undef TK_AV_BIND_UTIL
    return av;
  }();
  return loaded;
}

// The loaded functions; throws kUnavailable when the libraries are not there.
const Av& av() {
  const Av& loaded = load_av();
  if (!loaded.error.empty()) throw unavailable(loaded.error);
  return loaded;
}

struct CodecEntry {
  const char* codec;
  std::vector<const char*> encoders;
  std::vector<const char*> decoders;
  const char* library;  // named when no encoder is found
  const char* gpu_encoder;  // NVENC's
};

const CodecEntry& entry(VideoCodec codec) {
  static const CodecEntry kHevc{"hevc", {"libx265"}, {"hevc"}, "libx265", "hevc_nvenc"};
  static const CodecEntry kAv1{"av1",        {"libsvtav1", "libaom-av1"}, {"libdav1d", "libaom-av1"},
                               "libsvtav1 or libaom", "av1_nvenc"};
  static const CodecEntry kH264{"h264", {"libx264"}, {"h264"}, "libx264", "h264_nvenc"};
  switch (codec) {
    case VideoCodec::kHevc: return kHevc;
    case VideoCodec::kAv1: return kAv1;
    case VideoCodec::kH264: return kH264;
  }
  throw usage_error("unknown video codec " + std::to_string(static_cast<int>(codec)));
}

// The library never prints: libavcodec's log and the encoders' own loggers are quiet
// (SVT-AV1 reads SVT_LOG; a value the user set is kept).
void quiet_logs() {
  static std::once_flag once;
  std::call_once(once, [] {
    av().av_log_set_level(AV_LOG_QUIET);
    ::setenv("SVT_LOG", "1", 0);
  });
}

const AVCodec* find_encoder(VideoCodec codec, int gpu, const char** name = nullptr) {
  if (gpu >= 0) {
    const char* n = entry(codec).gpu_encoder;
    if (name) *name = n;
    return av().avcodec_find_encoder_by_name(n);
  }
  for (const char* n : entry(codec).encoders)
    if (const AVCodec* c = av().avcodec_find_encoder_by_name(n)) {
      if (name) *name = n;
      return c;
    }
  return nullptr;
}

const AVCodec* find_decoder(VideoCodec codec) {
  for (const char* n : entry(codec).decoders)
    if (const AVCodec* c = av().avcodec_find_decoder_by_name(n)) return c;
  return nullptr;
}

bool supports(const AVCodec* codec, AVPixelFormat format) {
  if (codec->pix_fmts == nullptr) return false;
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == format) return true;
  return false;
}

// Gray when the encoder takes it, else 4:2:0 with neutral chroma (planar, or P010's
// interleaved chroma and high-aligned samples at 10 bits, which is what NVENC takes).
AVPixelFormat input_format(const AVCodec* codec, int bit_depth) {
  const AVPixelFormat gray = bit_depth == 8 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_GRAY10LE;
  const AVPixelFormat yuv = bit_depth == 8 ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_YUV420P10LE;
  if (supports(codec, gray)) return gray;
  if (supports(codec, yuv)) return yuv;
  if (bit_depth == 10 && supports(codec, AV_PIX_FMT_P010LE)) return AV_PIX_FMT_P010LE;
  return AV_PIX_FMT_NONE;
}

struct ContextFree {
  void operator()(AVCodecContext* c) const { av().avcodec_free_context(&c); }
};
struct FrameFree {
  void operator()(AVFrame* f) const { av().av_frame_free(&f); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av().av_packet_free(&p); }
};
struct DictFree {
  void operator()(AVDictionary* d) const { av().av_dict_free(&d); }
};
using ContextPtr = std::unique_ptr<AVCodecContext, ContextFree>;
using FramePtr = std::unique_ptr<AVFrame, FrameFree>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;

std::string av_message(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av().av_strerror(code, text, sizeof text);
  return text;
}

// Private options that make each encoder intra-only, without B-frames, and tuned for
// squared error rather than perceived quality.
// x264 and x265 take the value as a constant QP (same 0..51 scale): their CRF rate
// control gives the frames after the first far fewer bits in an all-intra stream
// (x265 at CRF 24, 1024-row frames: 24.3 dB for one frame, 11.5 dB over four), and
// the tensor's frames should all be coded alike.
AVDictionary* encoder_options(const std::string& name, int crf, int gpu) {
  AVDictionary* d = nullptr;
  const std::string q = std::to_string(crf);
  if (name.find("_nvenc") != std::string::npos) {
    // A constant QP on every frame, as with x264/x265; the GOP of one frame (set on the
    // context) makes each an intra frame. AV1's QP scale is 0..255 where CRF's is 0..63.
    av().av_dict_set(&d, "rc", "constqp", 0);
    av().av_dict_set(&d, "qp", (name == "av1_nvenc" ? std::to_string(crf * 4) : q).c_str(), 0);
    av().av_dict_set(&d, "preset", "p4", 0);
    av().av_dict_set(&d, "tune", "hq", 0);
    av().av_dict_set(&d, "gpu", std::to_string(gpu).c_str(), 0);
  } else if (name == "libx265") {
    av().av_dict_set(&d, "preset", "fast", 0);
    av().av_dict_set(&d, "tune", "psnr", 0);
    const std::string params = "keyint=1:min-keyint=1:bframes=0:scenecut=0:log-level=none:qp=" + q;
    av().av_dict_set(&d, "x265-params", params.c_str(), 0);
  } else if (name == "libx264") {
    av().av_dict_set(&d, "qp", q.c_str(), 0);
    av().av_dict_set(&d, "preset", "medium", 0);
    av().av_dict_set(&d, "tune", "psnr", 0);
    av().av_dict_set(&d, "x264-params", "keyint=1:min-keyint=1:bframes=0:scenecut=0", 0);
  } else if (name == "libsvtav1") {
    av().av_dict_set(&d, "crf", q.c_str(), 0);
    av().av_dict_set(&d, "preset", "8", 0);
  } else if (name == "libaom-av1") {
    av().av_dict_set(&d, "crf", q.c_str(), 0);
    av().av_dict_set(&d, "usage", "allintra", 0);
    av().av_dict_set(&d, "cpu-used", "6", 0);
    av().av_dict_set(&d, "row-mt", "1", 0);
  }
  return d;
}

void check_params(const VideoParams& p) {
  if (p.bit_depth != 8 && p.bit_depth != 10)
    throw usage_error("video bit depth must be 8 or 10, not " + std::to_string(p.bit_depth));
  if (p.width < 64 || p.height < 64 || p.width > 4096 || p.height > 4096 || p.width % 16 || p.height % 16)
    throw usage_error("video frame of " + std::to_string(p.width) + "x" + std::to_string(p.height) +
                      ": sides must be multiples of 16 from 64 to 4096");
  if (p.crf < 0 || p.crf > video_crf_max(p.codec))
    throw usage_error(std::string("CRF for ") + entry(p.codec).codec + " must be 0 .. " +
                      std::to_string(video_crf_max(p.codec)) + ", not " + std::to_string(p.crf));
}

// Copy one plane into the frame's luma, chroma (if any) set to the middle value.
void fill_frame(AVFrame* f, const uint16_t* plane, int bit_depth) {
  const int w = f->width, h = f->height;
  for (int y = 0; y < h; ++y) {
    const uint16_t* src = plane + static_cast<size_t>(y) * w;
    uint8_t* dst = f->data[0] + static_cast<ptrdiff_t>(y) * f->linesize[0];
    if (bit_depth == 8)
      for (int x = 0; x < w; ++x) dst[x] = static_cast<uint8_t>(src[x]);
    else if (f->format == AV_PIX_FMT_P010LE)
      for (int x = 0; x < w; ++x) {
        const uint16_t v = static_cast<uint16_t>(src[x] << 6);
        std::memcpy(dst + 2 * x, &v, 2);
      }
    else
      std::memcpy(dst, src, static_cast<size_t>(w) * 2);
  }
  if (f->format == AV_PIX_FMT_P010LE) {  // one plane of interleaved U and V
    const uint16_t mid = 512 << 6;
    for (int y = 0; y < (h + 1) / 2; ++y) {
      uint8_t* row = f->data[1] + static_cast<ptrdiff_t>(y) * f->linesize[1];
      for (int x = 0; x < 2 * ((w + 1) / 2); ++x) std::memcpy(row + 2 * x, &mid, 2);
    }
    return;
  }
  const AVPixFmtDescriptor* desc = av().av_pix_fmt_desc_get(static_cast<AVPixelFormat>(f->format));
  for (int c = 1; c < desc->nb_components; ++c) {
    const int ch = AV_CEIL_RSHIFT(h, desc->log2_chroma_h);
    const int cw = AV_CEIL_RSHIFT(w, desc->log2_chroma_w);
    for (int y = 0; y < ch; ++y) {
      uint8_t* row = f->data[c] + static_cast<ptrdiff_t>(y) * f->linesize[c];
      if (bit_depth == 8) {
        std::memset(row, 128, static_cast<size_t>(cw));
      } else {
        const uint16_t mid = 512;
        for (int x = 0; x < cw; ++x) std::memcpy(row + 2 * x, &mid, 2);
      }
    }
  }
}

}  // namespace

bool video_available(VideoCodec codec, std::string* why) {
  const CodecEntry& e = entry(codec);
  if (const std::string& error = load_av().error; !error.empty()) {
    if (why) *why = error;
    return false;
  }
  if (find_encoder(codec, -1) == nullptr) {
    if (why) *why = std::string("no ") + e.codec + " encoder in libavcodec (" + e.library + " missing)";
    return false;
  }
  if (find_decoder(codec) == nullptr) {
    if (why) *why = std::string("no ") + e.codec + " decoder in libavcodec";
    return false;
  }
  return true;
}

std::string video_encoder_name(VideoCodec codec, int gpu) {
  if (!load_av().error.empty()) return "";
  const char* name = "";
  return find_encoder(codec, gpu, &name) ? name : "";
}

int video_crf_max(VideoCodec codec) { return codec == VideoCodec::kAv1 ? 63 : 51; }

namespace {

// An open encoder for `params` (its name in `name`): the software one, or device
// params.gpu's NVENC. Throws kUnavailable when there is none or it does not open.
ContextPtr open_encoder(const VideoParams& params, const char** name) {
  const AVCodec* codec = find_encoder(params.codec, params.gpu, name);
  if (codec == nullptr) {
    std::string why;
    if (params.gpu >= 0) throw unavailable(std::string("no ") + *name + " encoder in libavcodec");
    video_available(params.codec, &why);
    throw unavailable(why);
  }
  const AVPixelFormat format = input_format(codec, params.bit_depth);
  if (format == AV_PIX_FMT_NONE)
    throw unavailable(std::string(*name) + " does not take " + std::to_string(params.bit_depth) + "-bit frames");
  ContextPtr ctx(av().avcodec_alloc_context3(codec));
  if (!ctx) throw unavailable("out of memory allocating a video encoder");
  ctx->width = params.width;
  ctx->height = params.height;
  ctx->pix_fmt = format;
  ctx->time_base = AVRational{1, 25};
  ctx->framerate = AVRational{25, 1};
  ctx->gop_size = 1;
  ctx->max_b_frames = 0;
  ctx->thread_count = params.threads;
  ctx->color_range = AVCOL_RANGE_JPEG;
  AVDictionary* options = encoder_options(*name, params.crf, params.gpu);
  const int opened = av().avcodec_open2(ctx.get(), codec, &options);
  av().av_dict_free(&options);
  if (opened < 0) {
    const std::string on = params.gpu >= 0 ? " on CUDA device " + std::to_string(params.gpu) : "";
    throw unavailable(std::string(*name) + " cannot open a " + std::to_string(params.width) + "x" +
                      std::to_string(params.height) + " " + av().av_get_pix_fmt_name(format) + " encoder" + on + ": " +
                      av_message(opened));
  }
  return ctx;
}

}  // namespace

bool video_gpu_available(VideoCodec codec, int gpu, std::string* why) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::string> known;  // "" when it opened
  std::lock_guard<std::mutex> lock(mutex);
  const std::pair<int, int> key{static_cast<int>(codec), gpu};
  auto it = known.find(key);
  if (it == known.end()) {
    std::string reason;
    try {
      quiet_logs();
      const char* name = "";
      open_encoder(VideoParams{codec, 8, 256, 256, 23, 0, gpu}, &name);
    } catch (const Error& e) {
      reason = e.message();
    }
    it = known.emplace(key, reason).first;
  }
  if (why) *why = it->second;
  return it->second.empty();
}

std::vector<std::vector<uint8_t>> video_encode(const VideoParams& params, const uint16_t* planes, uint64_t frames) {
  quiet_logs();
  check_params(params);
  std::string why;
  if (!video_available(params.codec, &why)) throw unavailable(why);
  const char* name = "";
  ContextPtr ctx = open_encoder(params, &name);
  const AVPixelFormat format = ctx->pix_fmt;

  FramePtr frame(av().av_frame_alloc());
  PacketPtr packet(av().av_packet_alloc());
  if (!frame || !packet) throw unavailable("out of memory allocating a video frame");
  frame->format = format;
  frame->width = params.width;
  frame->height = params.height;
  if (av().av_frame_get_buffer(frame.get(), 0) < 0) throw unavailable("out of memory allocating a video frame");

  std::vector<std::pair<int64_t, std::vector<uint8_t>>> coded;
  const auto drain = [&] {
    for (;;) {
      const int got = av().avcodec_receive_packet(ctx.get(), packet.get());
      if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return;
      if (got < 0) throw runtime_error(std::string(name) + " failed: " + av_message(got));
      coded.emplace_back(packet->pts, std::vector<uint8_t>(packet->data, packet->data + packet->size));
      av().av_packet_unref(packet.get());
    }
  };
  const size_t plane_samples = static_cast<size_t>(params.width) * params.height;
  for (uint64_t i = 0; i < frames; ++i) {
    if (av().av_frame_make_writable(frame.get()) < 0) throw unavailable("out of memory for a video frame");
    fill_frame(frame.get(), planes + i * plane_samples, params.bit_depth);
    frame->pts = static_cast<int64_t>(i);
    frame->pict_type = AV_PICTURE_TYPE_I;
    for (;;) {
      const int sent = av().avcodec_send_frame(ctx.get(), frame.get());
      if (sent != AVERROR(EAGAIN)) {
        if (sent < 0) throw runtime_error(std::string(name) + " refused a frame: " + av_message(sent));
        break;
      }
      drain();
    }
    drain();
  }
  const int flushed = av().avcodec_send_frame(ctx.get(), nullptr);
  if (flushed < 0) throw runtime_error(std::string(name) + " failed to flush: " + av_message(flushed));
  drain();
  if (coded.size() != frames)
    throw runtime_error(std::string(name) + " returned " + std::to_string(coded.size()) + " packets for " +
                        std::to_string(frames) + " frames");
  std::stable_sort(coded.begin(), coded.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::vector<uint8_t>> packets;
  packets.reserve(coded.size());
  for (auto& c : coded) packets.push_back(std::move(c.second));
  return packets;
}

void video_decode(const VideoParams& params, const std::vector<std::span<const uint8_t>>& packets, uint16_t* planes) {
  quiet_logs();
  check_params(VideoParams{params.codec, params.bit_depth, params.width, params.height, 0, params.threads});
  const AVCodec* codec = find_decoder(params.codec);
  if (codec == nullptr) throw unavailable(std::string("no ") + entry(params.codec).codec + " decoder in libavcodec");
  ContextPtr ctx(av().avcodec_alloc_context3(codec));
  if (!ctx) throw unavailable("out of memory allocating a video decoder");
  ctx->thread_count = params.threads;
  const int opened = av().avcodec_open2(ctx.get(), codec, nullptr);
  if (opened < 0) throw unavailable(std::string("cannot open the ") + codec->name + " decoder: " + av_message(opened));

  FramePtr frame(av().av_frame_alloc());
  PacketPtr packet(av().av_packet_alloc());
  if (!frame || !packet) throw unavailable("out of memory allocating a video frame");
  const size_t plane_samples = static_cast<size_t>(params.width) * params.height;
  uint64_t decoded = 0;
  const auto bad = [&](const std::string& what) {
    return invalid_input("video stream does not decode: " + what, std::string("frame ") + std::to_string(decoded));
  };
  const auto drain = [&] {
    for (;;) {
      const int got = av().avcodec_receive_frame(ctx.get(), frame.get());
      if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return;
      if (got < 0) throw bad(av_message(got));
      if (decoded >= packets.size()) throw bad("more frames than packets");
      const AVPixFmtDescriptor* desc = av().av_pix_fmt_desc_get(static_cast<AVPixelFormat>(frame->format));
      if (frame->width != params.width || frame->height != params.height || desc == nullptr ||
          (desc->flags & AV_PIX_FMT_FLAG_RGB) || desc->comp[0].plane != 0 || desc->comp[0].depth != params.bit_depth ||
          desc->comp[0].step != (params.bit_depth == 8 ? 1 : 2) || (desc->flags & AV_PIX_FMT_FLAG_BE))
        throw bad(std::to_string(frame->width) + "x" + std::to_string(frame->height) + " " +
                  (desc ? desc->name : "unknown") + " frame, expected " + std::to_string(params.width) + "x" +
                  std::to_string(params.height) + " " + std::to_string(params.bit_depth) + "-bit luma");
      uint16_t* out = planes + decoded * plane_samples;
      for (int y = 0; y < params.height; ++y) {
        const uint8_t* src = frame->data[0] + static_cast<ptrdiff_t>(y) * frame->linesize[0];
        uint16_t* dst = out + static_cast<size_t>(y) * params.width;
        if (params.bit_depth == 8)
          for (int x = 0; x < params.width; ++x) dst[x] = src[x];
        else
          std::memcpy(dst, src, static_cast<size_t>(params.width) * 2);
      }
      ++decoded;
      av().av_frame_unref(frame.get());
    }
  };
  for (const auto& p : packets) {
    if (p.empty() || p.size() > static_cast<size_t>(INT32_MAX)) throw bad("empty or oversized packet");
    if (av().av_new_packet(packet.get(), static_cast<int>(p.size())) < 0) throw unavailable("out of memory for a packet");
    std::memcpy(packet->data, p.data(), p.size());
    for (;;) {
      const int sent = av().avcodec_send_packet(ctx.get(), packet.get());
      if (sent != AVERROR(EAGAIN)) {
        if (sent < 0) throw bad(av_message(sent));
        break;
      }
      drain();  // the decoder holds frames; take them and send the packet again
    }
    av().av_packet_unref(packet.get());
    drain();
  }
  av().avcodec_send_packet(ctx.get(), nullptr);
  drain();
  if (decoded != packets.size())
    throw bad(std::to_string(decoded) + " frames from " + std::to_string(packets.size()) + " packets");
}

}  // namespace tk::codec
