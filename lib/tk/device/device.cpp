#include "tk/device/device.h"

#include <charconv>

#include "tk/core/error.h"

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
    cudaGetLastError();  // not sticky: clear it for the calls that follow
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

Request parse_request(const std::string& text) {
  Request r;
  if (text == "cpu") {
    r.kind = Request::Kind::kCpu;
    return r;
  }
  if (text == "auto") return r;
  const std::string bad = "invalid device '" + text + "' (expected cpu, cuda[:N] or auto)";
  if (text.rfind("cuda", 0) != 0) throw usage_error(bad);
  r.kind = Request::Kind::kCuda;
  if (text.size() > 4) {
    const char* first = text.data() + 5;
    const char* last = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(first, last, r.index);
    if (text[4] != ':' || first == last || ec != std::errc() || ptr != last || r.index < 0) throw usage_error(bad);
  }
  return r;
}

std::string request_name(const Request& request) {
  switch (request.kind) {
    case Request::Kind::kCpu: return "cpu";
    case Request::Kind::kCuda: return "cuda:" + std::to_string(request.index);
    case Request::Kind::kAuto: return "auto";
  }
  return "cpu";
}

void check_present(const Request& request) {
  if (request.kind != Request::Kind::kCuda) return;
  if (!cuda_compiled()) throw unavailable("CUDA support not compiled in");
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) throw unavailable("no CUDA device (" + why + ")");
  if (request.index >= count) {
    throw unavailable("device " + std::to_string(request.index) + " not present (" + std::to_string(count) +
                      " CUDA device" + (count == 1 ? "" : "s") + ")");
  }
}

Placement place(const Request& request, uint64_t work, uint64_t min_work, bool has_gpu_path,
                const std::string& what) {
  Placement p;
  switch (request.kind) {
    case Request::Kind::kCpu: return p;
    case Request::Kind::kCuda:
      check_present(request);
      if (!has_gpu_path) throw unavailable("no GPU code path for " + what).with_option("device.cpu");
      p.cuda = true;
      p.index = request.index;
      return p;
    case Request::Kind::kAuto: break;
  }
  if (!has_gpu_path) {
    p.reason = "no GPU code path for " + what;
    return p;
  }
  std::string why;
  if (cuda_device_count(&why) == 0) {
    p.reason = cuda_compiled() ? "no CUDA device (" + why + ")" : why;
    return p;
  }
  if (work < min_work) {
    p.reason = "too small to gain from the GPU";
    return p;
  }
  p.cuda = true;
  p.reason = "a CUDA device is present and the work is large enough";
  return p;
}

bool is_device_pointer(const void* p) {
#ifdef TK_HAVE_CUDA
  if (p == nullptr) return false;
  // Asking the runtime creates its context; without a device there is nothing to ask.
  static const bool any_device = cuda_device_count() > 0;
  if (!any_device) return false;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice;
#else
  (void)p;
  return false;
#endif
}

}  // namespace tk::device
