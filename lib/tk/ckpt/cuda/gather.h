// Gathering many small device tensors into one device buffer, so that they cross to the
// host in one transfer instead of one per tensor. Shared by gather.cu (nvcc, C++17) and
// device_copier.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tk::ckpt::cuda {

// `bytes` bytes at `src` (device memory) go to dst + `offset`.
struct GatherItem {
  const uint8_t* src;
  uint64_t offset;
  uint64_t bytes;
};

// Queue on `stream` the copies of `count` items into `dst` (device memory of the
// stream's device, holding every item's offset + bytes). Throws tk::Error when a launch
// fails. The items are passed as kernel arguments: `items` may be freed on return.
void gather(const GatherItem* items, size_t count, uint8_t* dst, cudaStream_t stream);

}  // namespace tk::ckpt::cuda
