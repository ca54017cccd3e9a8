// What `TOOL --version` prints: the version and the features compiled in.
#pragma once

#include <string>

namespace tk::cli {

// The tensorkit version, "0.1.0".
const char* tk_version();

// "features: hdf5 zstd openmp cuda=no mpi=no" from the compile definitions.
std::string features_line();

// "TOOL (tensorkit) 0.1.0\nfeatures: ...\n"
std::string version_text(const std::string& tool);

}  // namespace tk::cli
