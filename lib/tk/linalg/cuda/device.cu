// CUDA runtime queries behind tk/linalg/device.h. Compiled only when nvcc is present.
#include <cuda_runtime.h>

#include <string>

namespace tk::linalg {

int cuda_runtime_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error: no driver or no GPU means zero devices
    return 0;
  }
  return n;
}

std::string cuda_runtime_device_name(int index) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return "unknown CUDA device";
  return prop.name;
}

}  // namespace tk::linalg
