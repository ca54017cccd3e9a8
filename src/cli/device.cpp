#include "cli/device.h"

#include <charconv>

#include "tk/core/error.h"
#include "tk/device/device.h"

namespace tk::cli {

Device device_parse(const std::string& text) {
  Device d;
  if (text == "cpu") return d;
  if (text == "auto") {
    d.kind = Device::Kind::kAuto;
    return d;
  }
  if (text.rfind("cuda", 0) != 0) throw usage_error("invalid device '" + text + "' (expected cpu, cuda[:N] or auto)");
  d.kind = Device::Kind::kCuda;
  if (text.size() > 4) {
    const char* first = text.data() + 5;
    const char* last = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(first, last, d.index);
    if (text[4] != ':' || first == last || ec != std::errc() || ptr != last || d.index < 0)
      throw usage_error("invalid device '" + text + "' (expected cpu, cuda[:N] or auto)");
  }
  // No tool has a GPU code path yet: a CUDA device is refused, never stood in for by the
  // CPU. The message says what is missing first: the backend, a device, this device.
  const std::string where = "--device " + text;
  if (!device::cuda_compiled()) throw unavailable("CUDA support not compiled in", where);
  std::string why;
  const int count = device::cuda_device_count(&why);
  if (count == 0) throw unavailable("no CUDA device (" + why + ")", where);
  if (d.index >= count) {
    throw unavailable("device " + std::to_string(d.index) + " not present (" + std::to_string(count) +
                          " CUDA device" + (count == 1 ? "" : "s") + ")",
                      where);
  }
  throw unavailable("no GPU code path in this version; --device cpu or auto runs on the CPU", where);
}

std::string device_name(const Device& device) {
  switch (device.kind) {
    case Device::Kind::kCpu: return "cpu";
    case Device::Kind::kCuda: return "cuda:" + std::to_string(device.index);
    case Device::Kind::kAuto: return "auto";
  }
  return "cpu";
}

}  // namespace tk::cli
