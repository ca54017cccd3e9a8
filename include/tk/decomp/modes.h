// Dense mode operations on a row-major (C order) tensor, shared by the decompositions:
// the Gram matrix of a mode-n unfolding and the n-mode product, both computed without
// materialising the unfolding.
//
// A row-major tensor of shape I_1 x ... x I_d, seen around mode n, is a stack of
// `left` = I_1*...*I_{n-1} contiguous slices, each an I_n x `right` matrix with
// `right` = I_{n+1}*...*I_d (leading dimension `right`). The mode-n unfolding X_(n) is
// the concatenation of these slices side by side, so X_(n) X_(n)^T is the sum of the
// slices' Gram matrices and U^T X_(n) is U^T applied to every slice: strided syrk/gemm
// calls over the slices, never a copy of the tensor.
//
// Threads: with more than one OpenMP thread, the work is split into independent pieces
// (slices, panels, or column/row ranges of the first and last modes) run by an OpenMP
// loop with one BLAS thread each; with one thread it is one BLAS call per piece or one
// call in all. Results are deterministic for a given thread count. Callers that run many
// of these operations hold a OnePool for their whole run, so that OpenBLAS's own workers
// never spin between the loops (two pools on the same cores are slower, not faster).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tk/linalg/blas.h"

namespace tk::decomp::modes {

// Threads for an OpenMP loop over `count` independent pieces of work that each call
// BLAS: the OpenMP thread count when there are at least that many pieces and no
// enclosing parallel region, else 1 (run in sequence, BLAS threads inside).
int loop_threads(int64_t count);

// OpenMP threads available here: 1 inside a parallel region, else omp_get_max_threads().
int parallel_threads();

// A tensor seen around one mode: `left` slices of `dim` x `right`.
struct ModeSplit {
  int64_t left = 1;
  int64_t dim = 1;
  int64_t right = 1;
};

// Split `shape` around `mode` (0-based, < shape.size()).
ModeSplit mode_split(const std::vector<int64_t>& shape, size_t mode);

// Product of the extents (1 for an empty shape).
int64_t element_count(const std::vector<int64_t>& shape);

// gram (I_n x I_n, row-major, both triangles) = X_(n) X_(n)^T.
void mode_gram(const double* x, const std::vector<int64_t>& shape, size_t mode, double* gram);
void mode_gram(const float* x, const std::vector<int64_t>& shape, size_t mode, float* gram);

// y = x ×_n op(M): mode n of x (extent I_n) is contracted with the columns of op(M),
// a `rows` x I_n matrix, giving a tensor of `shape` with I_n replaced by `rows`.
// M is row-major: for kNoTrans it is rows x I_n, for kTrans it is I_n x rows (so that
// kTrans with a factor U of I_n x r computes x ×_n U^T, the projection onto U, and
// kNoTrans with U computes core ×_n U, the expansion back). y must not alias x.
void mode_product(const double* x, const std::vector<int64_t>& shape, size_t mode, const double* m,
                  linalg::Op op, int64_t rows, double* y);
void mode_product(const float* x, const std::vector<int64_t>& shape, size_t mode, const float* m,
                  linalg::Op op, int64_t rows, float* y);

// Sum of squares of n values accumulated in double, in fixed blocks (deterministic and
// accurate to about 1e-15 relative for any n). NaN or Inf in the data gives a non-finite
// result.
double sum_squares(const double* x, int64_t n);
double sum_squares(const float* x, int64_t n);
// The same over the entries whose mask byte is nonzero (all of them when mask is null);
// NaN or Inf in a masked-out entry does not count.
double sum_squares(const double* x, const uint8_t* mask, int64_t n);
double sum_squares(const float* x, const uint8_t* mask, int64_t n);

// Sum of squares of n values accumulated in double along a pairwise tree (runs of 256
// values in 16 lanes, then halves of the runs), with a rigorous rounding bound: each
// square passes through at most sum_squares_pairwise_depth(n) roundings, so the result
// is within gamma(depth) of the exact sum, gamma(k) = k u / (1 - k u), u = 2^-53
// (Higham, Accuracy and Stability of Numerical Algorithms, 2002, section 4.2).
// Deterministic; NaN or Inf in the data gives a non-finite result.
double sum_squares_pairwise(const double* x, int64_t n);
double sum_squares_pairwise(const float* x, int64_t n);
int sum_squares_pairwise_depth(int64_t n);

// The `count` eigenvectors of the largest eigenvalues of a symmetric n x n matrix,
// descending, as an n x count row-major matrix with the sign fixed so that the entry
// of largest magnitude of each column is positive (deterministic signs). `sym` is
// destroyed. `eigenvalues` (optional) receives all n eigenvalues, descending.
std::vector<double> leading_eigenvectors(int64_t n, double* sym, int64_t count,
                                         std::vector<double>* eigenvalues = nullptr);
std::vector<float> leading_eigenvectors(int64_t n, float* sym, int64_t count,
                                        std::vector<double>* eigenvalues = nullptr);

// Check a dense input's shape: order >= 2 and every extent >= 1 (kInvalidInput naming
// `what` otherwise).
void validate_dense_shape(const std::vector<int64_t>& shape, const char* what);

// Throw kInvalidInput naming `what` unless ||x||^2 is finite (NaN or Inf anywhere in x
// makes it NaN or Inf).
void check_finite_norm(double squared_norm, const char* what);

// ||x||^2 of a dense input after both checks above.
double validated_squared_norm(const double* x, const std::vector<int64_t>& shape, const char* what);
double validated_squared_norm(const float* x, const std::vector<int64_t>& shape, const char* what);

// Trace of an n x n row-major matrix, accumulated in double. The trace of any mode's
// Gram matrix is ||x||^2: a double-precision caller gets the norm from the first Gram
// matrix it computes instead of another pass over the tensor.
double trace(int64_t n, const double* a);
double trace(int64_t n, const float* a);

// The smallest rank r in [1, cap] whose discarded tail sum(eigenvalues[r:]) is at most
// `allowance` (eigenvalues descending, negative rounding noise counted as 0); `cap` when
// none is. `discarded` (optional) receives the tail mass at the returned rank.
int64_t truncation_rank(const std::vector<double>& eigenvalues, double allowance, int64_t cap,
                        double* discarded = nullptr);

}  // namespace tk::decomp::modes
