// The one small CUDA layer (docs/ARCHITECTURE.md): which CUDA devices this build and
// machine have. Everything else about devices (streams, pinned buffers) joins it with
// the first GPU code path; the tools have none yet, so --device cuda is refused (exit 5)
// rather than run on the CPU under a GPU's name.
#pragma once

#include <string>

namespace tk::device {

// Whether this build has the CUDA backend (nvcc was found when it was configured).
bool cuda_compiled();

// The CUDA devices the runtime sees: 0 without the backend, a driver or a GPU, with the
// reason (the runtime's own words) in `why` when given.
int cuda_device_count(std::string* why = nullptr);

}  // namespace tk::device
