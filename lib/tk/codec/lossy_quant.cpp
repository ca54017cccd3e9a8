// The quant method of the lossy codec: one uniform step, searched so that the codes'
// order-0 entropy meets the rate asked, then byte planes of the zigzag codes through the
// canonical Huffman coder of the lossless codec (zstd's matches cost 0.6 bits per value
// over the entropy on such codes; Huffman, with pair symbols for small alphabets, comes
// within a few hundredths), and centroid reconstruction.
#include <omp.h>

#include <algorithm>
#include <exception>
#include <cmath>
#include <cstring>

#include "tk/codec/huffman.h"
#include "tk/codec/lossy_internal.h"
#include "tk/core/error.h"

namespace tk::codec::detail {
namespace {

constexpr uint64_t kEntropySample = uint64_t{1} << 18;  // values sampled by the step search
constexpr int kHistogramHalf = 1 << 15;               // codes beyond count as 32-bit escapes
constexpr uint64_t kChunk = uint64_t{1} << 16;        // fixed chunks: sums independent of threads

inline uint32_t zigzag(int32_t q) { return (static_cast<uint32_t>(q) << 1) ^ static_cast<uint32_t>(q >> 31); }
inline int32_t unzigzag(uint32_t z) { return static_cast<int32_t>(z >> 1) ^ -static_cast<int32_t>(z & 1); }

// Order-0 entropy of the codes of a sample, bits per value.
double entropy_bits(const std::vector<float>& sample, double step) {
  std::vector<uint32_t> histogram(2 * kHistogramHalf + 1, 0);
  uint64_t escapes = 0;
  const float inv = static_cast<float>(1.0 / step);
  for (float x : sample) {
    const float q = std::nearbyint(x * inv);
    if (std::fabs(q) >= kHistogramHalf) {
      ++escapes;
    } else {
      ++histogram[static_cast<size_t>(static_cast<int32_t>(q) + kHistogramHalf)];
    }
  }
  const double n = static_cast<double>(sample.size());
  double bits = 32.0 * static_cast<double>(escapes);
  for (uint32_t c : histogram)
    if (c) bits -= c * std::log2(c / n);
  return bits / n;
}

enum class ChunkMethod : uint8_t { kRaw = 0, kConstant = 1, kHuffman = 2 };

std::vector<uint8_t> code_chunk(HuffmanEncoder& encoder, std::span<const uint8_t> bytes) {
  const size_t planned = encoder.plan(bytes);
  std::vector<uint8_t> out;
  if (encoder.stats().distinct <= 1) {
    out = {static_cast<uint8_t>(ChunkMethod::kConstant), encoder.stats().top_value};
  } else if (planned != SIZE_MAX && planned < bytes.size()) {
    out.resize(1 + planned + kHuffmanSlack);
    out[0] = static_cast<uint8_t>(ChunkMethod::kHuffman);
    out.resize(1 + encoder.encode(bytes, out.data() + 1));
  } else {
    out.push_back(static_cast<uint8_t>(ChunkMethod::kRaw));
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return out;
}

void decode_chunk(HuffmanDecoder& decoder, std::span<const uint8_t> chunk, std::span<uint8_t> out) {
  if (chunk.empty()) throw invalid_input("empty quant chunk");
  const auto data = chunk.subspan(1);
  switch (static_cast<ChunkMethod>(chunk[0])) {
    case ChunkMethod::kRaw:
      if (data.size() != out.size()) throw invalid_input("raw quant chunk of the wrong size");
      std::copy(data.begin(), data.end(), out.begin());
      return;
    case ChunkMethod::kConstant:
      if (data.size() != 1) throw invalid_input("constant quant chunk of the wrong size");
      std::fill(out.begin(), out.end(), data[0]);
      return;
    case ChunkMethod::kHuffman: decoder.decode(data, out); return;
  }
  throw invalid_input("unknown quant chunk method " + std::to_string(chunk[0]));
}

}  // namespace

uint64_t quant_chunk_count(uint64_t codes) { return (codes + kQuantChunk - 1) / kQuantChunk; }

QuantPayload quant_encode(const float* values, uint64_t count, double code_bits, int threads) {
  QuantPayload payload;
  const uint64_t chunks = (count + kChunk - 1) / kChunk;
  std::vector<double> chunk_energy(chunks, 0);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < static_cast<int64_t>(chunks); ++c) {
    const uint64_t begin = static_cast<uint64_t>(c) * kChunk, end = std::min(count, begin + kChunk);
    double e = 0;
    for (uint64_t i = begin; i < end; ++i) e += static_cast<double>(values[i]) * values[i];
    chunk_energy[static_cast<size_t>(c)] = e;
  }
  double energy = 0;
  for (double e : chunk_energy) energy += e;
  const double rms = count ? std::sqrt(energy / static_cast<double>(count)) : 0;

  double step = 1;
  if (rms > 0) {
    std::vector<float> sample;
    const uint64_t stride = std::max<uint64_t>(1, count / kEntropySample);
    for (uint64_t i = 0; i < count; i += stride) sample.push_back(values[i]);
    // High-rate estimate for a Gaussian (entropy = log2(sqrt(2 pi e) rms / step)), then
    // a bracket and bisection on log(step): the entropy falls as the step grows.
    const double start = rms * std::sqrt(2 * M_PI * M_E) * std::exp2(-std::max(code_bits, 0.5));
    double lo = start, hi = start;
    for (int i = 0; i < 60 && entropy_bits(sample, lo) < code_bits; ++i) lo /= 2;
    for (int i = 0; i < 60 && entropy_bits(sample, hi) > code_bits; ++i) hi *= 2;
    for (int i = 0; i < 30 && hi / lo > 1.0005; ++i) {
      const double mid = std::sqrt(lo * hi);
      (entropy_bits(sample, mid) > code_bits ? lo : hi) = mid;
    }
    step = hi;
  }
  payload.step = static_cast<float>(step);
  const float inv = 1.0f / payload.step;

  // Codes, their largest zigzag value and the cell centroids, per fixed chunk.
  std::vector<uint32_t> codes(count);
  std::vector<std::array<double, kQuantOffsets>> chunk_sum(chunks);
  std::vector<std::array<uint64_t, kQuantOffsets>> chunk_n(chunks);
  std::vector<uint32_t> chunk_max(chunks, 0);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < static_cast<int64_t>(chunks); ++c) {
    const uint64_t begin = static_cast<uint64_t>(c) * kChunk, end = std::min(count, begin + kChunk);
    std::array<double, kQuantOffsets> sum{};
    std::array<uint64_t, kQuantOffsets> n{};
    uint32_t top = 0;
    for (uint64_t i = begin; i < end; ++i) {
      const float scaled = values[i] * inv;
      const int32_t q = static_cast<int32_t>(std::clamp(std::nearbyint(scaled), -1073741823.0f, 1073741823.0f));
      codes[i] = zigzag(q);
      top = std::max(top, codes[i]);
      if (q != 0) {
        const int32_t a = std::abs(q);
        const int k = std::min(a, kQuantOffsets) - 1;
        sum[k] += a - std::fabs(scaled);
        ++n[k];
      }
    }
    chunk_sum[static_cast<size_t>(c)] = sum;
    chunk_n[static_cast<size_t>(c)] = n;
    chunk_max[static_cast<size_t>(c)] = top;
  }
  uint32_t top = 0;
  for (int k = 0; k < kQuantOffsets; ++k) {
    double sum = 0;
    uint64_t n = 0;
    for (uint64_t c = 0; c < chunks; ++c) {
      sum += chunk_sum[c][k];
      n += chunk_n[c][k];
    }
    payload.offsets[k] = n ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
  }
  for (uint32_t m : chunk_max) top = std::max(top, m);

  int plane_count = 1;
  while (plane_count < 4 && (top >> (8 * plane_count)) != 0) ++plane_count;
  payload.planes = plane_count;
  const uint64_t per_plane = quant_chunk_count(count);
  payload.chunks.resize(per_plane * static_cast<uint64_t>(plane_count));
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
  {
    HuffmanEncoder encoder;
    std::vector<uint8_t> bytes;
#pragma omp for schedule(dynamic)
    for (int64_t j = 0; j < static_cast<int64_t>(payload.chunks.size()); ++j) {
      const uint64_t plane = static_cast<uint64_t>(j) / per_plane, chunk = static_cast<uint64_t>(j) % per_plane;
      const uint64_t begin = chunk * kQuantChunk, n = std::min(kQuantChunk, count - begin);
      bytes.resize(n);
      for (uint64_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(codes[begin + i] >> (8 * plane));
      payload.chunks[static_cast<size_t>(j)] = code_chunk(encoder, bytes);
    }
  }
  return payload;
}

void quant_decode_chunks(const QuantPayload& payload, uint64_t count, std::span<const QuantChunkTarget> targets,
                         int threads) {
  const uint64_t per_plane = quant_chunk_count(count);
  if (payload.planes < 1 || payload.planes > 4 || payload.chunks.size() != per_plane * payload.planes)
    throw invalid_input("quant codes of the wrong layout");
  const float step = payload.step;
  const auto& offsets = payload.offsets;
  std::exception_ptr error;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (targets.size() > 1)
  {
    HuffmanDecoder decoder;
    std::vector<uint8_t> bytes;
    std::vector<uint32_t> codes;
#pragma omp for schedule(dynamic)
    for (int64_t j = 0; j < static_cast<int64_t>(targets.size()); ++j) {
      try {
        const uint64_t c = targets[static_cast<size_t>(j)].chunk;
        float* values = targets[static_cast<size_t>(j)].values;
        if (c >= per_plane) throw internal_error("quant chunk out of range");
        const uint64_t n = std::min(kQuantChunk, count - c * kQuantChunk);
        bytes.resize(n);
        codes.assign(n, 0);
        for (int p = 0; p < payload.planes; ++p) {
          decode_chunk(decoder, payload.chunks[p * per_plane + c], bytes);
          for (uint64_t i = 0; i < n; ++i) codes[i] |= static_cast<uint32_t>(bytes[i]) << (8 * p);
        }
        for (uint64_t i = 0; i < n; ++i) {
          const int32_t q = unzigzag(codes[i]);
          const int32_t a = std::abs(q);
          const float magnitude =
              a == 0 ? 0.0f : (static_cast<float>(a) - offsets[std::min(a, kQuantOffsets) - 1]) * step;
          values[i] = q < 0 ? -magnitude : magnitude;
        }
      } catch (...) {
#pragma omp critical(tk_lossy_quant_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace tk::codec::detail
