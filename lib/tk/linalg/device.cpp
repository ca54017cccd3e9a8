#include "tk/linalg/device.h"

#include <charconv>

#include "tk/core/error.h"

namespace tk::linalg {

#ifdef TK_HAVE_CUDA
// Defined in cuda/device.cu.
int cuda_runtime_device_count();
std::string cuda_runtime_device_name(int index);
bool cuda_compiled() { return true; }
int cuda_device_count() { return cuda_runtime_device_count(); }
std::string cuda_device_name(int index) {
  if (index < 0 || index >= cuda_device_count())
    throw unavailable("no CUDA device " + std::to_string(index));
  return cuda_runtime_device_name(index);
}
#else
bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_device_name(int index) {
  throw unavailable("CUDA support not compiled in");
}
#endif

Device device_select(const std::string& text) {
  if (text == "cpu") return {DeviceKind::kCpu, 0};
  if (text == "auto") {
    if (cuda_device_count() > 0) return {DeviceKind::kCuda, 0};
    return {DeviceKind::kCpu, 0};
  }
  if (text.rfind("cuda", 0) != 0) throw usage_error("unknown device '" + text + "' (cpu, cuda[:N], auto)");
  int index = 0;
  if (text.size() > 4) {
    const char* b = text.data() + 4;
    const char* e = text.data() + text.size();
    if (*b != ':') throw usage_error("unknown device '" + text + "' (cpu, cuda[:N], auto)");
    auto [p, ec] = std::from_chars(b + 1, e, index);
    if (ec != std::errc() || p != e || index < 0) throw usage_error("malformed device '" + text + "'");
  }
  if (!cuda_compiled()) throw unavailable("CUDA support not compiled in", "--device " + text);
  int n = cuda_device_count();
  if (n == 0) throw unavailable("no CUDA device available", "--device " + text);
  if (index >= n) throw unavailable("no CUDA device " + std::to_string(index) + " (" + std::to_string(n) + " present)", "--device " + text);
  return {DeviceKind::kCuda, index};
}

std::string device_to_string(const Device& device) {
  if (device.kind == DeviceKind::kCpu) return "cpu";
  return "cuda:" + std::to_string(device.index);
}

}  // namespace tk::linalg
