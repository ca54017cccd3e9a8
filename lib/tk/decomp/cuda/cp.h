// Dense CP-ALS on a CUDA device: the tensor is uploaded once and stays there; each
// MTTKRP runs on the device through cuBLAS (cuda/cp.cpp), while the ALS loop, the R x R
// normal equations, the fit and the restarts are the CPU's (cp_internal.h). Only CUDA
// builds compile this: reach it through decompose() (decompose.h).
#pragma once

#include "tk/decomp/decomp.h"

namespace tk::decomp::cuda {

// cp_als(x, options) with its MTTKRPs (and the Gram start's Gram matrices) on CUDA device
// `device`: the same iterations and stopping rules, the fit from the same inner
// products. No mask (kUsage: masked CP has no GPU path).
CpResult cp_als(const DenseView<double>& x, const CpOptions& options, int device);
CpResult cp_als(const DenseView<float>& x, const CpOptions& options, int device);

}  // namespace tk::decomp::cuda
