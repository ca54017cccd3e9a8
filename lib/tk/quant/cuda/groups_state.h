// What the GPU code of the quantization schemes shares (groups.cu, minifloat.cu): the
// input on the device, and one way to launch a kernel that fills a host array. CUDA
// sources only.
#pragma once

#include "tk/device/cuda/runtime.h"
#include "tk/quant/cuda/groups.h"

namespace tk::quant::gpu {

using device::cuda::blocks_for;
using device::cuda::check_launch;
using device::cuda::DeviceArray;
using device::cuda::kBlock;
using device::cuda::Stream;
using device::cuda::to_device;

struct Groups::State {
  device::cuda::DeviceScope scope;
  device::cuda::Stream stream;
  device::cuda::DeviceArray<float> x, w;
  int64_t rows, padded_cols, group;
  State(int device, const float* host_x, const float* host_w, int64_t r, int64_t pc, int64_t g)
      : scope(device), x(device::cuda::to_device(host_x, static_cast<size_t>(r * pc), stream)),
        w(device::cuda::to_device(host_w, static_cast<size_t>(pc), stream)), rows(r), padded_cols(pc), group(g) {}
  int64_t groups() const { return rows * (padded_cols / group); }
  // Threads of one per eight values, and the bytes of their codes packed `bits` wide.
  int64_t octets() const { return rows * (padded_cols / 8); }
  size_t packed_bytes(int bits) const { return static_cast<size_t>(rows * (padded_cols * bits / 8)); }
};

#if defined(__CUDACC__)  // device code: compiled by nvcc only (the header is installed too)
// The piece of a rows x padded_cols input that this thread takes, cut into pieces of
// `size` values along each row: its index g, row r and place b in the row (columns
// b * size ...); false past the last piece.
struct Piece {
  int64_t g, r, b;
};
__device__ inline bool piece_of_thread(int64_t rows, int64_t padded_cols, int64_t size, Piece& p) {
  const int64_t per_row = padded_cols / size;
  p.g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p.g >= rows * per_row) return false;
  p.r = p.g / per_row;
  p.b = p.g % per_row;
  return true;
}
#endif

// The device array that `launch` fills, checked and copied into `host`.
template <typename T, typename Launch>
void fill_on_device(const device::cuda::Stream& stream, const char* kernel, T* host, size_t n, Launch&& launch) {
  if (n == 0) return;
  device::cuda::DeviceArray<T> out(n);
  launch(out.data());
  device::cuda::check_launch(kernel);
  out.download(host, stream);
  stream.synchronize();
}

}  // namespace tk::quant::gpu
