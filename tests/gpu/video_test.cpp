// tcompress --video on the GPU's hardware encoder (NVENC) against the software one: the
// same stream format (the software decoder reads it) and an error of the same order.
#include <cmath>
#include <random>
#include <vector>

#include "gpu_test.h"
#include "tk/codec/lossy.h"
#include "tk/codec/video.h"

namespace tk::codec {
namespace {

// NVENC needs the driver's encoding library as well as the GPU: skip, saying why, where
// a machine lacks it.
#define TK_REQUIRE_NVENC(codec)                                        \
  do {                                                                 \
    TK_REQUIRE_GPU();                                                  \
    std::string why;                                                   \
    if (!video_gpu_available(codec, 0, &why)) GTEST_SKIP() << why;    \
  } while (0)

double psnr(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, int bit_depth) {
  double se = 0;
  for (size_t i = 0; i < a.size(); ++i) se += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  const double peak = (1 << bit_depth) - 1;
  return se == 0 ? INFINITY : 10 * std::log10(peak * peak * double(a.size()) / se);
}

TEST(GpuVideo, NvencStreamsDecodeInSoftware) {
  TK_REQUIRE_NVENC(VideoCodec::kHevc);
  for (int bit_depth : {8, 10}) {
    VideoParams p{VideoCodec::kHevc, bit_depth, 256, 256, 12, 0, 0};
    const uint64_t frames = 3;
    std::vector<uint16_t> planes(frames * 256 * 256), back(planes.size());
    const double top = (1 << bit_depth) - 1;
    for (size_t i = 0; i < planes.size(); ++i) {  // smooth gradients, as scaled weights are not, but codable
      const double x = double(i % 256) / 256, y = double(i / 256 % 256) / 256;
      planes[i] = static_cast<uint16_t>(std::lround(top * (0.5 + 0.4 * std::sin(6 * x + 3 * y + double(i / 65536)))));
    }
    const auto packets = video_encode(p, planes.data(), frames);
    ASSERT_EQ(packets.size(), frames);
    std::vector<std::span<const uint8_t>> views(packets.begin(), packets.end());
    video_decode(p, views, back.data());
    EXPECT_GT(psnr(planes, back, bit_depth), 35.0) << bit_depth << "-bit";
  }
}

TEST(GpuVideo, LossyTensorsOnNvencMatchSoftwareQuality) {
  TK_REQUIRE_NVENC(VideoCodec::kHevc);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  Tensor t = Tensor::empty(DType::kF32, {512, 1024});
  for (uint64_t i = 0; i < t.numel(); ++i) t.mutable_data_as<float>()[i] = normal(rng);
  LossyOptions o;
  o.method = LossyMethod::kVideoHevc;
  o.crf = 18;
  LossyReport software, hardware;
  lossy_encode(t, o, &software);
  o.gpu = 0;
  const std::vector<uint8_t> frame = lossy_encode(t, o, &hardware);
  const Tensor back = lossy_decode(frame);
  EXPECT_EQ(back.shape(), t.shape());
  // Different encoders at one QP: the same order of error, not the same bits.
  EXPECT_GT(hardware.sqnr_db, software.sqnr_db - 6.0) << "software " << software.sqnr_db;
  EXPECT_GT(hardware.sqnr_db, 15.0);
}

}  // namespace
}  // namespace tk::codec
