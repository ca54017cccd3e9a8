#include "tk/ckpt/cuda/gather.h"

#include <algorithm>

#include "tk/device/cuda/runtime.h"

namespace tk::ckpt::cuda {

namespace {

// Items per launch, passed by value: 128 * 24 bytes stays within the 4 KiB of kernel
// arguments every architecture takes, and needs no table in device memory (whose upload
// would have to outlive the launch). Also within the 65535 blocks of a grid's y.
constexpr size_t kItemsPerLaunch = 128;

struct GatherBatch {
  GatherItem items[kItemsPerLaunch];
};

// Blocks per item: enough that an item near the gather threshold is a few loop trips
// of 16-byte copies, not thousands of dependent byte loads.
constexpr unsigned kBlocksPerItem = 8;

// Item blockIdx.y, spread over the blocks along x.
__global__ void gather_kernel(const GatherBatch batch, uint8_t* __restrict__ dst) {
  const GatherItem item = batch.items[blockIdx.y];
  const uint8_t* __restrict__ src = item.src;
  uint8_t* __restrict__ out = dst + item.offset;
  const uint64_t first = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  // 16 bytes at a time when both ends allow it (allocators align tensors to 256 bytes;
  // a view may not be), the rest byte by byte.
  uint64_t vector_bytes = 0;
  if ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(out)) % sizeof(uint4) == 0) {
    const uint64_t vectors = item.bytes / sizeof(uint4);
    const auto* s = reinterpret_cast<const uint4*>(src);
    auto* d = reinterpret_cast<uint4*>(out);
    for (uint64_t i = first; i < vectors; i += stride) d[i] = s[i];
    vector_bytes = vectors * sizeof(uint4);
  }
  for (uint64_t i = vector_bytes + first; i < item.bytes; i += stride) out[i] = src[i];
}

}  // namespace

void gather(const GatherItem* items, size_t count, uint8_t* dst, cudaStream_t stream) {
  for (size_t first = 0; first < count; first += kItemsPerLaunch) {
    const size_t n = std::min(kItemsPerLaunch, count - first);
    GatherBatch batch{};
    std::copy(items + first, items + first + n, batch.items);
    const dim3 grid(kBlocksPerItem, static_cast<unsigned>(n));
    gather_kernel<<<grid, device::cuda::kBlock, 0, stream>>>(batch, dst);
    device::cuda::check_launch("checkpoint gather kernel");
  }
}

}  // namespace tk::ckpt::cuda
