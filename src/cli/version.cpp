#include "cli/version.h"

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

std::string version_text(const std::string& tool) {
  return tool + " (tensorkit) " + tk_version() + "\n" + features_line() + "\n";
}

}  // namespace tk::cli
