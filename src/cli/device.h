// The --device option: where compute runs.
#pragma once

#include <string>

namespace tk::cli {

struct Device {
  enum class Kind { kCpu, kCuda, kAuto };
  Kind kind = Kind::kCpu;
  int index = 0;  // CUDA device ordinal
};

// Parse "cpu", "cuda", "cuda:N" or "auto". Throws kUsage for anything else, and
// kUnavailable for cuda[:N]: "CUDA support not compiled in", "no CUDA device (REASON)",
// "device N not present (M CUDA devices)", or, with the device present, because no tool
// has a GPU code path yet. "auto" stays kAuto and runs on the CPU.
Device device_parse(const std::string& text);

// "cpu", "cuda:0", "auto".
std::string device_name(const Device& device);

}  // namespace tk::cli
