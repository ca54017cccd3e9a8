// The video method of the lossy codec: per-(row, group) scales onto luma, tiling into
// frames, the CRF search for a bits-per-value target, and the way back.
#include <algorithm>
#include <cmath>
#include <map>

#include "tk/codec/lossy_internal.h"
#include "tk/core/error.h"

namespace tk::codec::detail {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint64_t groups_per_row(uint64_t padded_cols) { return ceil_div(padded_cols, kVideoScaleGroup); }

// Fill planes [first, first + frames) from the matrix.
void to_luma(const float* matrix, const std::vector<float>& scales, uint64_t rows, uint64_t padded_cols,
             const VideoPayload& v, uint64_t first, uint64_t frames, uint16_t* planes) {
  const uint64_t across = ceil_div(padded_cols, v.width);
  const uint64_t groups = groups_per_row(padded_cols);
  const int middle = 1 << (v.bit_depth - 1);
  const float top = static_cast<float>(2 * middle - 1);
  const uint64_t samples = uint64_t{v.width} * v.height;
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t f = 0; f < static_cast<int64_t>(frames); ++f) {
    for (int64_t y = 0; y < static_cast<int64_t>(v.height); ++y) {
      const uint64_t frame = first + static_cast<uint64_t>(f);
      const uint64_t row = frame / across * v.height + static_cast<uint64_t>(y);
      const uint64_t col0 = frame % across * v.width;
      uint16_t* out = planes + static_cast<uint64_t>(f) * samples + static_cast<uint64_t>(y) * v.width;
      for (uint64_t x = 0; x < v.width; ++x) {
        const uint64_t col = col0 + x;
        uint16_t luma = static_cast<uint16_t>(middle);
        if (row < rows && col < padded_cols) {
          const float scale = scales[row * groups + col / kVideoScaleGroup];
          if (scale > 0) {
            const float level = std::nearbyint(middle + matrix[row * padded_cols + col] / scale);
            luma = static_cast<uint16_t>(std::clamp(level, 0.0f, top));
          }
        }
        out[x] = luma;
      }
    }
  }
}

uint64_t packet_bytes(const std::vector<std::vector<uint8_t>>& packets) {
  uint64_t n = 0;
  for (const auto& p : packets) n += p.size();
  return n;
}

// Tensor values that fall into frames [0, frames): rows and columns of the real data.
uint64_t values_in_frames(uint64_t frames, uint64_t rows, uint64_t padded_cols, uint32_t width, uint32_t height,
                          uint64_t values) {
  const uint64_t across = ceil_div(padded_cols, width);
  uint64_t n = 0;
  for (uint64_t f = 0; f < frames; ++f) {
    const uint64_t r0 = f / across * height, c0 = f % across * width;
    const uint64_t r = std::min<uint64_t>(rows, r0 + height) - std::min(rows, r0);
    const uint64_t c = std::min<uint64_t>(padded_cols, c0 + width) - std::min(padded_cols, c0);
    n += r * c;
  }
  // Padded columns and the tail of a near-square view hold no tensor values.
  const double real = rows && padded_cols ? static_cast<double>(values) / static_cast<double>(rows * padded_cols) : 0;
  return std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(n) * real));
}

}  // namespace

void video_geometry(uint64_t rows, uint64_t padded_cols, uint32_t* width, uint32_t* height) {
  const auto side = [](uint64_t n) {
    return static_cast<uint32_t>(std::clamp<uint64_t>(ceil_div(std::max<uint64_t>(n, 1), 64) * 64, 64, kVideoMaxSide));
  };
  *width = side(padded_cols);
  *height = side(rows);
}

uint64_t video_frame_count(uint64_t rows, uint64_t padded_cols, uint32_t width, uint32_t height) {
  return ceil_div(rows, height) * ceil_div(padded_cols, width);
}

uint64_t video_scale_count(uint64_t rows, uint64_t padded_cols) { return rows * groups_per_row(padded_cols); }

VideoPayload video_payload_encode(const float* matrix, uint64_t rows, uint64_t padded_cols,
                                  const LossyOptions& options, VideoCodec codec, uint64_t values) {
  VideoPayload v;
  v.codec = codec;
  v.bit_depth = options.bit_depth;
  video_geometry(rows, padded_cols, &v.width, &v.height);
  const uint64_t groups = groups_per_row(padded_cols);
  const int middle = 1 << (v.bit_depth - 1);
  v.scales.assign(rows * groups, 0.0f);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < static_cast<int64_t>(rows); ++r) {
    const float* row = matrix + static_cast<uint64_t>(r) * padded_cols;
    for (uint64_t g = 0; g < groups; ++g) {
      float absmax = 0;
      for (uint64_t c = g * kVideoScaleGroup; c < std::min(padded_cols, (g + 1) * kVideoScaleGroup); ++c)
        absmax = std::max(absmax, std::fabs(row[c]));
      v.scales[static_cast<uint64_t>(r) * groups + g] = absmax / static_cast<float>(middle - 1);
    }
  }
  const uint64_t frames = video_frame_count(rows, padded_cols, v.width, v.height);
  if (frames == 0) {
    v.crf = std::max(options.crf, 0);
    return v;
  }
  const uint64_t samples = uint64_t{v.width} * v.height;
  std::vector<uint16_t> planes(frames * samples);
  to_luma(matrix, v.scales, rows, padded_cols, v, 0, frames, planes.data());

  VideoParams params{codec,       v.bit_depth,     static_cast<int>(v.width), static_cast<int>(v.height),
                     options.crf, options.threads, options.gpu};
  if (options.crf >= 0) {
    v.crf = options.crf;
    v.packets = video_encode(params, planes.data(), frames);
    return v;
  }

  // Search the CRF on the first frames (the fullest ones): the smallest CRF (best
  // quality) whose estimated rate stays within the target. Rate changes by about one
  // bit per value per 6 CRF steps; guesses follow that model inside the bracket.
  const uint64_t sample = std::min<uint64_t>(frames, 2);
  const double sample_values =
      static_cast<double>(values_in_frames(sample, rows, padded_cols, v.width, v.height, values));
  const double overhead_bits = 8.0 * (4.0 * v.scales.size() + 4.0 * frames + 64) / static_cast<double>(values);
  std::map<int, std::vector<std::vector<uint8_t>>> tried;
  const auto rate = [&](int crf) {
    params.crf = crf;
    auto packets = video_encode(params, planes.data(), sample);
    const double bits = 8.0 * static_cast<double>(packet_bytes(packets)) / sample_values + overhead_bits;
    tried[crf] = std::move(packets);
    return bits;
  };
  const int crf_max = video_crf_max(codec);
  const double bits_per_crf = codec == VideoCodec::kAv1 ? 1.0 / 8 : 1.0 / 6;
  int over = -1, within = crf_max + 1;  // CRFs known above / within the target
  int crf = codec == VideoCodec::kAv1 ? 32 : 24;
  while (within - over > 1) {
    const double bits = rate(crf);
    (bits > options.bits_per_value ? over : within) = crf;
    int next = crf + static_cast<int>(std::lround((bits - options.bits_per_value) / bits_per_crf));
    if (next <= over || next >= within) next = over + (within - over) / 2;
    if (within - over > 1) crf = std::clamp(next, over + 1, within - 1);
  }
  v.crf = std::min(within, crf_max);
  if (sample == frames && tried.count(v.crf)) {
    v.packets = std::move(tried[v.crf]);
  } else {
    params.crf = v.crf;
    v.packets = video_encode(params, planes.data(), frames);
  }
  return v;
}

VideoFrameRows video_decode_frame_rows(const VideoPayload& v, uint64_t padded_cols, uint64_t first, uint64_t count,
                                       int threads) {
  const uint64_t across = ceil_div(padded_cols, v.width);
  const uint64_t samples = uint64_t{v.width} * v.height;
  const uint64_t begin = first * across, end = std::min<uint64_t>(v.packets.size(), (first + count) * across);
  if (begin > end) throw internal_error("video frame rows out of range");
  VideoFrameRows rows;
  rows.first = first;
  rows.count = count;
  rows.luma.resize((end - begin) * samples);
  if (end == begin) return rows;
  std::vector<std::span<const uint8_t>> packets(v.packets.begin() + static_cast<ptrdiff_t>(begin),
                                                v.packets.begin() + static_cast<ptrdiff_t>(end));
  video_decode(VideoParams{v.codec, v.bit_depth, static_cast<int>(v.width), static_cast<int>(v.height), 0, threads},
               packets, rows.luma.data());
  return rows;
}

void video_cells(const VideoPayload& v, const VideoFrameRows& frames, uint64_t padded_cols, uint64_t first_row,
                 uint64_t rows, uint64_t first_col, uint64_t cols, float* out) {
  const uint64_t across = ceil_div(padded_cols, v.width);
  const uint64_t groups = groups_per_row(padded_cols);
  const uint64_t samples = uint64_t{v.width} * v.height;
  const float middle = static_cast<float>(1 << (v.bit_depth - 1));
  if (first_row / v.height < frames.first || (first_row + rows - 1) / v.height >= frames.first + frames.count)
    throw internal_error("video rows outside the decoded frames");
#pragma omp parallel for schedule(static) if (rows * cols >= (uint64_t{1} << 16))
  for (int64_t r = 0; r < static_cast<int64_t>(rows); ++r) {
    const uint64_t row = first_row + static_cast<uint64_t>(r);
    const uint64_t frame_row = (row / v.height - frames.first) * across, y = row % v.height;
    const float* scales = v.scales.data() + row * groups;
    float* dst = out + static_cast<uint64_t>(r) * cols;
    for (uint64_t c = 0; c < cols; ++c) {
      const uint64_t col = first_col + c;
      const uint64_t frame = frame_row + col / v.width, x = col % v.width;
      dst[c] = (frames.luma[frame * samples + y * v.width + x] - middle) * scales[col / kVideoScaleGroup];
    }
  }
}

}  // namespace tk::codec::detail
