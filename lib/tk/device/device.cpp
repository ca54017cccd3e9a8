#include "tk/device/device.h"

#ifdef TK_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tk::device {

bool cuda_compiled() {
#ifdef TK_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count(std::string* why) {
#ifdef TK_HAVE_CUDA
  int n = 0;
  // Without a driver or a GPU the runtime answers with an error, not a crash.
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    // The runtime says "insufficient driver" also when there is no driver at all.
    if (why) {
      *why = e == cudaErrorInsufficientDriver ? "no CUDA driver, or one older than this build's runtime"
                                              : cudaGetErrorString(e);
    }
    return 0;
  }
  if (n == 0 && why) *why = "no device";
  return n;
#else
  if (why) *why = "CUDA support not compiled in";
  return 0;
#endif
}

}  // namespace tk::device
