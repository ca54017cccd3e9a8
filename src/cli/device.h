// The --device option: where compute runs (tk/device/device.h decides per piece of work).
#pragma once

#include <string>

#include "tk/device/device.h"

namespace tk::cli {

using Device = device::Request;

// Parse "cpu", "cuda", "cuda:N" or "auto". Throws kUsage for anything else, and, before
// any work starts, kUnavailable for cuda[:N] when this build or machine cannot run on
// that device: "CUDA support not compiled in", "no CUDA device (REASON)" or "device N not
// present (M CUDA devices)".
Device device_parse(const std::string& text);

// "cpu", "cuda:0", "auto".
std::string device_name(const Device& device);

// For a tool or command with no GPU code at all: cuda[:N] is refused (kUnavailable,
// naming `what`) rather than run on the CPU under a GPU's name; cpu and auto pass.
void require_no_gpu(const Device& device, const std::string& what);

}  // namespace tk::cli
