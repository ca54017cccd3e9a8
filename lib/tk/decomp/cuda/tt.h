// TT-SVD on a CUDA device: the tensor is uploaded once and the carried matrix stays
// there; Gram matrices, eigenvectors, projections and each step's discarded mass run on
// the device (cuda/tt.cpp), the cores come back to the host. Only CUDA builds compile
// this: reach it through decompose() (decompose.h).
#pragma once

#include "tk/decomp/decomp.h"

namespace tk::decomp::cuda {

// tt_svd(x, options) with its work on CUDA device `device`. The --tol bound holds as on
// the CPU: every step's discarded mass is measured from the data (the residual
// C - Q Q^T C) and kept within its share tol^2 / (d-1) ||X||^2 unless max_rank cuts
// deeper; rel_error is the square root of their sum over ||X||^2. The ranks are the
// CPU's up to an eigenvalue on a boundary where Gram matrices resolve the tolerance (tol
// above about 1e-4); below it this path may keep more rank than the CPU's refined ones.
// Each core's rank index may come in another order and with other signs.
TtResult tt_svd(const DenseView<double>& x, const TtOptions& options, int device);
TtResult tt_svd(const DenseView<float>& x, const TtOptions& options, int device);

}  // namespace tk::decomp::cuda
