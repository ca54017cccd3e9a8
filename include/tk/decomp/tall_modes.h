// A tall mode: one whose extent I_n exceeds the product m of the other extents, so
// that its unfolding X_(n) (I_n x m) has rank at most m. Its Gram matrix X_(n) X_(n)^T
// (I_n x I_n) is then large and singular: the 30522 x 384 word embedding of a small
// BERT would need 30522^2 doubles (7.5 GB). The other side's Gram matrix X_(n)^T X_(n)
// (m x m) has the same nonzero eigenvalues, and with its eigenvectors V the leading
// left singular subspace of X_(n) is orth(X_(n) V_r): memory bounded by the tensor
// and its factors, work about 2 I_n m^2 flops.
//
// Shapes and slices as in modes.h: around mode n a row-major tensor is `left` slices of
// I_n x `right`; column (l, c) of X_(n) is column c of slice l, index l * right + c.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tk::decomp::modes {

// True when shape[mode] exceeds the product of the other extents.
bool is_tall_mode(const std::vector<int64_t>& shape, size_t mode);

// gram (m x m, row-major, both triangles) = X_(n)^T X_(n), m = element_count / I_n.
void unfolding_cogram(const double* x, const std::vector<int64_t>& shape, size_t mode, double* gram);
void unfolding_cogram(const float* x, const std::vector<int64_t>& shape, size_t mode, float* gram);

// The leading left singular subspace of X_(n) of dimension `rank` (<= I_n), given the
// eigenvectors of X_(n)^T X_(n) in descending order (`vectors`, m x m, eigenvector j in
// column j): Q = orth(X_(n) V_r) by Householder QR, I_n x rank row-major, orthonormal
// columns, each column's entry of largest magnitude positive (as leading_eigenvectors).
// Columns beyond m, or beyond the unfolding's rank, complete the basis orthonormally.
std::vector<double> tall_mode_basis(const double* x, const std::vector<int64_t>& shape, size_t mode,
                                    const std::vector<double>& vectors, int64_t rank);
std::vector<float> tall_mode_basis(const float* x, const std::vector<int64_t>& shape, size_t mode,
                                   const std::vector<float>& vectors, int64_t rank);

}  // namespace tk::decomp::modes
