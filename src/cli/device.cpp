#include "cli/device.h"

#include <charconv>

#include "tk/core/error.h"

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
#ifndef TK_HAVE_CUDA
  throw unavailable("CUDA support not compiled in", "--device " + text);
#endif
  return d;
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
