// The one small device layer (docs/ARCHITECTURE.md): which CUDA devices this build and
// machine have, and where a piece of work runs. What every build has is here; the CUDA
// runtime itself (streams, pinned and device buffers, errors) is in cuda/runtime.h,
// which only CUDA builds compile.
#pragma once

#include <cstdint>
#include <string>

#include "tk/core/error.h"

namespace tk::device {

// Whether this build has the CUDA backend (nvcc was found when it was configured).
bool cuda_compiled();

// The CUDA devices the runtime sees: 0 without the backend, a driver or a GPU, with the
// reason (the runtime's own words) in `why` when given.
int cuda_device_count(std::string* why = nullptr);

// What the user asked for (--device): the CPU, CUDA device `index`, or auto.
struct Request {
  enum class Kind { kCpu, kCuda, kAuto };
  Kind kind = Kind::kAuto;
  int index = 0;
};

// Parse "cpu", "cuda", "cuda:N" or "auto" (throws kUsage for anything else). Nothing is
// checked against the machine here: see check_present.
Request parse_request(const std::string& text);
// "cpu", "cuda:0", "auto".
std::string request_name(const Request& request);

// For cuda[:N]: throws kUnavailable when this build or machine cannot run on that device
// ("CUDA support not compiled in", "no CUDA device (WHY)", "device N not present (M
// CUDA devices)"). cpu and auto always pass.
void check_present(const Request& request);

// Where one piece of work runs, and why there.
struct Placement {
  bool cuda = false;
  int index = 0;       // the CUDA device, when cuda
  std::string reason;  // why auto chose what it chose (empty for an explicit request)
  std::string name() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }
};

// Place work of `work` units whose GPU path pays from `min_work` units up: cpu on the
// CPU; cuda[:N] on that device (check_present's errors otherwise); auto on device 0 when
// one is present and work >= min_work, else on the CPU, saying why. `has_gpu_path` false
// (this operation has no GPU code): cuda[:N] throws kUnavailable naming `what`, and auto
// takes the CPU.
Placement place(const Request& request, uint64_t work, uint64_t min_work, bool has_gpu_path = true,
                const std::string& what = {});

// Run gpu_work(), placed on a GPU. Under --device auto, a kUnavailable from it (the GPU
// out of memory, or taken by another process) runs cpu_work() instead, the reason in
// `why` first: auto should not fail where the CPU does the work. Under cuda[:N] the
// error stands, since that GPU was asked for.
template <typename Gpu, typename Cpu>
auto or_on_cpu(const Request& request, Gpu&& gpu_work, Cpu&& cpu_work, std::string* why) -> decltype(gpu_work()) {
  if (request.kind != Request::Kind::kAuto) return gpu_work();
  try {
    return gpu_work();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnavailable) throw;
    *why = e.message();
  }
  return cpu_work();
}

// Whether p points into CUDA device memory (cudaPointerGetAttributes). False in a build
// without CUDA, on a machine without a device, and for host, pinned host and null
// pointers; managed memory counts as host memory (the CPU can read it).
bool is_device_pointer(const void* p);

}  // namespace tk::device
