#include "cli/device.h"

#include "tk/core/error.h"

namespace tk::cli {

Device device_parse(const std::string& text) {
  const Device d = device::parse_request(text);
  located("--device " + text, [&] { device::check_present(d); });
  return d;
}

std::string device_name(const Device& device) { return device::request_name(device); }

void require_no_gpu(const Device& device, const std::string& what) {
  if (device.kind != Device::Kind::kCuda) return;
  throw unavailable(what + " has no GPU code path; --device cpu or auto runs it on the CPU",
                    "--device " + device_name(device));
}

}  // namespace tk::cli
