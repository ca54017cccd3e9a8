// What `TOOL --version` prints: the version and the features compiled in.
#pragma once

#include <string>

namespace tk::cli {

// The tensorkit version, "0.1.0".
const char* tk_version();

// "features: hdf5 zstd openmp cuda=no mpi=no" from the compile definitions.
std::string features_line();

// "kernels: avx2 (this processor runs: scalar avx2; TK_ISA chooses) blas: openmp": the
// vector path in use (tk/core/isa.h) and how BLAS runs in parallel.
std::string kernels_line();

// "TOOL (tensorkit) 0.1.0\nfeatures: ...\nkernels: ...\n"
std::string version_text(const std::string& tool);

}  // namespace tk::cli
