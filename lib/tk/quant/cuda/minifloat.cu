// The float-format schemes on the device: MX's and nvfp4's blocks and fp8's scales and
// codes, from minifloat_math.h (the CPU's own source) with float_format_encode for the
// element codes.
#include "tk/quant/cuda/groups_state.h"

namespace tk::quant::gpu {
namespace {

// The element encoder minifloat_math.h takes: float_format_encode, value by value.
struct Encoder {
  const FloatFormat& format;
  __device__ void operator()(const float* v, int64_t n, uint8_t* codes) const {
    for (int64_t i = 0; i < n; ++i) codes[i] = static_cast<uint8_t>(tk::detail::float_format_encode(format, v[i], true));
  }
};

// `n` codes (a multiple of 8) packed `bits` wide into out.
__device__ void pack(const uint8_t* codes, int64_t n, int bits, uint8_t* out) {
  for (int64_t k = 0; k < n / 8; ++k) detail::pack8(codes + 8 * k, bits, out + k * bits);
}

// One thread per block of 32.
__global__ void mx_kernel(const float* x, const float* w, int64_t rows, int64_t padded_cols,
                          detail::mx::Element element, const float* table, bool ceil, bool search, int bits,
                          uint8_t* packed, uint8_t* scales) {
  using detail::mx::kBlock;
  Piece p;
  if (!piece_of_thread(rows, padded_cols, kBlock, p)) return;
  const int64_t g = p.g, r = p.r, b = p.b;
  uint8_t codes[kBlock];
  scales[g] = detail::mx::encode_block(element, table, x + r * padded_cols + b * kBlock, w + b * kBlock, ceil, search,
                                       codes, Encoder{element.format});
  pack(codes, kBlock, bits, packed + r * (padded_cols * bits / 8) + b * kBlock * bits / 8);
}

// One thread per block of 16.
__global__ void nvfp4_kernel(const float* x, const float* w, int64_t rows, int64_t padded_cols, FloatFormat e2m1,
                             FloatFormat e4m3, const float* fp4, const float* fp8, float t, bool fast, uint8_t* packed,
                             uint8_t* scales) {
  using detail::nvfp4::kBlock;
  Piece p;
  if (!piece_of_thread(rows, padded_cols, kBlock, p)) return;
  const int64_t g = p.g, r = p.r, b = p.b;
  uint8_t codes[kBlock];
  scales[g] = detail::nvfp4::encode_block(e4m3, fp4, fp8, x + r * padded_cols + b * kBlock, w + b * kBlock, t, fast,
                                          codes, Encoder{e2m1});
  pack(codes, kBlock, 4, packed + r * (padded_cols / 2) + b * kBlock / 2);
}

// One thread per row and scale.
__global__ void fp8_errors_kernel(const float* x, const float* w, int64_t rows, int64_t cols, FloatFormat format,
                                  const float* table, const float* scales, int count, double* errors) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows * count) return;
  const int64_t k = t / rows, r = t % rows;
  errors[t] = detail::fp8::row_error(format, table, x + r * cols, w, cols, scales[k]);
}

// One thread per row: the CPU's per-channel fit_scale.
__global__ void fp8_scales_kernel(const float* x, const float* w, int64_t rows, int64_t cols, FloatFormat format,
                                  const float* table, float max_elem, const float* factors, bool fast, float* out) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + r * cols;
  out[r] = detail::fp8::fit_scale(xr, cols, max_elem, factors, fast, [&](const float* candidates, double* err) {
    for (int k = 0; k < detail::fp8::kCandidates; ++k) {
      err[k] = detail::fp8::row_error(format, table, xr, w, cols, candidates[k]);
    }
  });
}

// One thread per value.
__global__ void fp8_encode_kernel(const float* x, int64_t rows, int64_t cols, FloatFormat format,
                                  const float* row_scales, uint8_t* codes) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows * cols) return;
  const float inv = detail::fp8::inverse(row_scales[t / cols]);
  codes[t] = static_cast<uint8_t>(tk::detail::float_format_encode(format, x[t] * inv, true));
}

}  // namespace

void Groups::encode_mx(const detail::mx::Element& element, const float* table, bool ceil, bool search, int bits,
                       uint8_t* packed, uint8_t* scales) {
  const State& s = *state_;
  const DeviceArray<float> d_table = to_device(table, 256, s.stream);
  DeviceArray<uint8_t> d_packed(s.packed_bytes(bits));
  fill_on_device(s.stream, "mx encode", scales, static_cast<size_t>(s.groups()), [&](uint8_t* d_scales) {
    mx_kernel<<<blocks_for(s.groups()), kBlock, 0, s.stream.get()>>>(s.x.data(), s.w.data(), s.rows, s.padded_cols,
                                                                      element, d_table.data(), ceil, search, bits,
                                                                      d_packed.data(), d_scales);
  });
  d_packed.download(packed, s.stream);
  s.stream.synchronize();
}

void Groups::encode_nvfp4(const float* fp4, const float* fp8, float t, bool fast, uint8_t* packed, uint8_t* scales) {
  const State& s = *state_;
  const DeviceArray<float> d_fp4 = to_device(fp4, 256, s.stream);
  const DeviceArray<float> d_fp8 = to_device(fp8, 256, s.stream);
  DeviceArray<uint8_t> d_packed(s.packed_bytes(4));
  const FloatFormat& e2m1 = tk::detail::float_format(DType::kF4);
  const FloatFormat& e4m3 = tk::detail::float_format(DType::kF8E4M3);
  fill_on_device(s.stream, "nvfp4 encode", scales, static_cast<size_t>(s.groups()), [&](uint8_t* d_scales) {
    nvfp4_kernel<<<blocks_for(s.groups()), kBlock, 0, s.stream.get()>>>(s.x.data(), s.w.data(), s.rows,
                                                                         s.padded_cols, e2m1, e4m3, d_fp4.data(),
                                                                         d_fp8.data(), t, fast, d_packed.data(),
                                                                         d_scales);
  });
  d_packed.download(packed, s.stream);
  s.stream.synchronize();
}

std::vector<double> Groups::fp8_row_errors(const FloatFormat& format, const float* table, const float* scales,
                                           int count) {
  const State& s = *state_;
  const DeviceArray<float> d_table = to_device(table, 256, s.stream);
  const DeviceArray<float> d_scales = to_device(scales, static_cast<size_t>(count), s.stream);
  std::vector<double> out(static_cast<size_t>(s.rows * count));
  fill_on_device(s.stream, "fp8 errors", out.data(), out.size(), [&](double* errors) {
    fp8_errors_kernel<<<blocks_for(s.rows * count), kBlock, 0, s.stream.get()>>>(
        s.x.data(), s.w.data(), s.rows, s.padded_cols, format, d_table.data(), d_scales.data(), count, errors);
  });
  return out;
}

std::vector<float> Groups::fp8_row_scales(const FloatFormat& format, const float* table, float max_elem,
                                          const float* factors, bool fast) {
  const State& s = *state_;
  const DeviceArray<float> d_table = to_device(table, 256, s.stream);
  const DeviceArray<float> d_factors = to_device(factors, detail::fp8::kCandidates, s.stream);
  std::vector<float> out(static_cast<size_t>(s.rows));
  fill_on_device(s.stream, "fp8 scales", out.data(), out.size(), [&](float* found) {
    fp8_scales_kernel<<<blocks_for(s.rows), kBlock, 0, s.stream.get()>>>(
        s.x.data(), s.w.data(), s.rows, s.padded_cols, format, d_table.data(), max_elem, d_factors.data(), fast, found);
  });
  return out;
}

void Groups::encode_fp8(const FloatFormat& format, const float* row_scales, uint8_t* codes) {
  const State& s = *state_;
  const DeviceArray<float> d_scales = to_device(row_scales, static_cast<size_t>(s.rows), s.stream);
  fill_on_device(s.stream, "fp8 encode", codes, static_cast<size_t>(s.rows * s.padded_cols), [&](uint8_t* out) {
    fp8_encode_kernel<<<blocks_for(s.rows * s.padded_cols), kBlock, 0, s.stream.get()>>>(
        s.x.data(), s.rows, s.padded_cols, format, d_scales.data(), out);
  });
}

}  // namespace tk::quant::gpu
