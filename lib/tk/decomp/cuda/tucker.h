// Tucker on a CUDA device: the tensor is uploaded once and stays there; every Gram
// matrix, projection and eigen-decomposition runs on the device (cuda/modes.h); the
// host keeps the factors, the core and the error (tucker_internal.h's rules, the
// CPU's). Only CUDA builds compile this: reach it through decompose() (decompose.h).
#pragma once

#include "tk/decomp/decomp.h"

namespace tk::decomp::cuda {

// tucker(x, options) with its work on CUDA device `device`: the same ranks for the same
// tolerance up to rounding, rel_error measured on the host as there, so --tol holds as
// it does on the CPU. kUnavailable when the device's memory cannot hold the tensor and
// its first projection.
TuckerResult tucker(const DenseView<double>& x, const TuckerOptions& options, int device);
TuckerResult tucker(const DenseView<float>& x, const TuckerOptions& options, int device);

}  // namespace tk::decomp::cuda
