// The mode operations of ../modes.h on a tensor in device memory: the Gram matrix of a
// mode-n unfolding, the projection on a factor and the leading eigenvectors, all through
// cuBLAS and cuSOLVER (tk/linalg/cuda/blas.h), never unfolding the tensor. Only CUDA
// builds compile this.
//
// The tensor is row-major (C order) as on the host and is seen, as there, around mode n
// as `left` slices of dim x `right`. To cuBLAS a slice is a column-major right x dim
// matrix S (leading dimension right), so the slice's Gram matrix is S^T S and its
// projection S U. The first mode (left = 1) and the last (right = 1) are one call each;
// a middle mode is a strided batch of slices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tk/device/cuda/runtime.h"
#include "tk/linalg/cuda/blas.h"

namespace tk::decomp::cuda {

// A stream of the current device and the cuBLAS and cuSOLVER handles queued on it.
struct Gpu {
  device::cuda::Stream stream;
  linalg::cuda::Handles handles{stream.get()};
};

// The lower triangle (column-major; the symmetric matrix is the same either way) of
// gram = X_(n) X_(n)^T, I_n x I_n, for the device tensor x of `shape`. Returns with the
// work done.
void mode_gram(const Gpu& gpu, const double* x, const std::vector<int64_t>& shape, size_t mode, double* gram);
void mode_gram(const Gpu& gpu, const float* x, const std::vector<int64_t>& shape, size_t mode, float* gram);

// y = x ×_n U^T (the projection on U) for the device tensor x of `shape` and the device
// factor U, I_n x rank row-major: y has `shape` with I_n replaced by rank and must not
// alias x. Returns with the work done.
void mode_project(const Gpu& gpu, const double* x, const std::vector<int64_t>& shape, size_t mode, const double* u,
                  int64_t rank, double* y);
void mode_project(const Gpu& gpu, const float* x, const std::vector<int64_t>& shape, size_t mode, const float* u,
                  int64_t rank, float* y);

// modes::leading_eigenvectors for a symmetric n x n device matrix (lower triangle read,
// destroyed): the `count` eigenvectors of the largest eigenvalues as a host n x count
// row-major matrix, signs fixed as there; `eigenvalues` (optional) all n, descending.
std::vector<double> leading_eigenvectors(const Gpu& gpu, int64_t n, double* sym, int64_t count,
                                         std::vector<double>* eigenvalues = nullptr);
std::vector<float> leading_eigenvectors(const Gpu& gpu, int64_t n, float* sym, int64_t count,
                                        std::vector<double>* eigenvalues = nullptr);

}  // namespace tk::decomp::cuda
