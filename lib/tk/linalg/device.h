// Compute devices: the CPU is the reference backend; CUDA is optional, compiled in when
// nvcc is present at build time and usable when a GPU is present at run time.
#pragma once

#include <string>

namespace tk::linalg {

enum class DeviceKind { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // CUDA ordinal
};

// True when the CUDA backend was compiled into this build.
bool cuda_compiled();
// Number of usable CUDA devices (0 when not compiled in or no driver/GPU).
int cuda_device_count();
// "NVIDIA H200" for device `index`; throws kUnavailable when it does not exist.
std::string cuda_device_name(int index);

// Parse and check a --device value: "cpu", "cuda", "cuda:N" or "auto" (CUDA device 0
// when one is usable, else the CPU). Throws kUsage for malformed text and kUnavailable
// when CUDA is asked for but not compiled in or no such device exists.
Device device_select(const std::string& text);

std::string device_to_string(const Device& device);

}  // namespace tk::linalg
