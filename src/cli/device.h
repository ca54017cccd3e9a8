// The --device option: where compute runs.
#pragma once

#include <string>

namespace tk::cli {

struct Device {
  enum class Kind { kCpu, kCuda, kAuto };
  Kind kind = Kind::kCpu;
  int index = 0;  // CUDA device ordinal
};

// Parse "cpu", "cuda", "cuda:N" or "auto". Throws kUsage for anything else and
// kUnavailable ("CUDA support not compiled in") for cuda in a build without CUDA.
// "auto" stays kAuto: the compute backend picks a GPU when CUDA is compiled in and
// one is present, else the CPU.
Device device_parse(const std::string& text);

// "cpu", "cuda:0", "auto".
std::string device_name(const Device& device);

}  // namespace tk::cli
