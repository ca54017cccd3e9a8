#include "cli/version.h"

#include "tk/core/isa.h"
#include "tk/linalg/blas.h"

namespace tk::cli {

const char* tk_version() {
#ifdef TK_VERSION
  return TK_VERSION;
#else
  return "unknown";
#endif
}

std::string features_line() {
  std::string line = "features: hdf5 zstd";
#ifdef _OPENMP
  line += " openmp";
#endif
#ifdef TK_HAVE_CUDA
  line += " cuda=yes";
#else
  line += " cuda=no";
#endif
#ifdef TK_HAVE_MPI
  line += " mpi=yes";
#else
  line += " mpi=no";
#endif
  return line;
}

std::string kernels_line() {
  std::string line = std::string("kernels: ") + isa_name(active_isa()) + " (this processor runs:";
  for (Isa isa : supported_isas()) line += std::string(" ") + isa_name(isa);
  return line + "; TK_ISA chooses) blas: " + linalg::blas_threading();
}

std::string version_text(const std::string& tool) {
  return tool + " (tensorkit) " + tk_version() + "\n" + features_line() + "\n" + kernels_line() + "\n";
}

}  // namespace tk::cli
