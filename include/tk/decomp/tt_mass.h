// The discarded mass of a TT-SVD step as a difference of norms, ||C||^2 - ||Q^T C||^2,
// with a rigorous bound on its rounding (tt.cpp's difference and sketch paths). Double
// precision only; row-major matrices.
//
// With N = fl(Q^T C) the carried matrix as stored, E = N - Q^T C its rounding and
// P = Q^T Q, the step's true discarded mass is
//   ||C - Q N||^2 = ||C||^2 - 2 <Q^T C, N> + tr(N^T P N)
//                 = ||C||^2 - ||N||^2 + 2 <E, N> + tr(N^T (P - I) N),
// so with ||E||_F <= e ||C||, |2 <E, N>| <= 2 e ||C|| ||N|| and
// |tr(N^T (P - I) N)| <= eta ||N||^2 for eta >= ||P - I||_2. For one product,
// |E| <= gamma_rows |Q|^T |C| entrywise (each entry a rows-term dot product), so
// e = gamma_rows || |Q| ||_2. Bounds use Higham's gamma_k = k u / (1 - k u), u = 2^-53:
// a k-term dot product computed in double, in any order, with or without FMA, is within
// gamma_k |a|^T |b| of the exact one, and a sum of nonnegative terms each passing through
// at most k roundings is within gamma_k of its exact value (Higham, Accuracy and
// Stability of Numerical Algorithms, 2002, sections 3.1 and 4.2). At the end, the option
// checks the GPU's TT-SVD shares.
#pragma once

#include <cstdint>
#include <vector>

#include "tk/decomp/decomp.h"

namespace tk::decomp::tt_detail {

// gamma_k for double.
double rounding_gamma(int64_t k);

// A squared norm summed pairwise from the data and the rounding depth of that sum
// (depth < 0: not summed). The carried matrix's, from the step that formed it, is the
// next step's ||C||^2: the same values, summed once.
struct SquaredSum {
  double value = 0;
  int depth = -1;
};

// ||C||^2 and ||Q^T C||^2.
struct ProjectionSums {
  SquaredSum c;
  SquaredSum b;
};

// How far a computed basis Q (rows x rank) is from orthonormal: eta >= ||Q^T Q - I||_2
// and abs_norm >= || |Q| ||_2, from the computed rank x rank products P = Q^T Q and
// A = |Q|^T |Q|. |P - Q^T Q| <= gamma_rows A entrywise, so eta is
// ||P - I||_F + gamma_rows ||A||_F; the spectral radius of the nonnegative A is at most
// its largest row sum, whose square root bounds || |Q| ||_2 (up to A's own rounding,
// relative gamma_rows, which difference_allowance's safety factor covers). `gram` keeps
// the computed P for orthonormality_correction.
struct BasisBounds {
  double eta = 0;
  double abs_norm = 0;
  std::vector<double> gram;
};
BasisBounds basis_bounds(const double* q, int64_t rows, int64_t rank);

// W^T G W (n x n) for G (m x m) and W (m x n).
std::vector<double> congruence(const double* g, const double* w, int64_t m, int64_t n);

// tr(N^T (P - I) N) = sum over j, k of (P - I)_jk (N N^T)_jk for the computed P of
// `basis` and an estimate `nn` of N N^T (rank x rank): the part of the discarded mass
// that comes from Q's departure from orthonormality (a few u ||C||^2, up to about 10% of
// a 16^5 step's tail). Added to the difference, it keeps the reported error close to
// the true one; any error in it is covered by adding its magnitude to the allowance,
// which already holds eta ||N||^2 >= |tr(N^T (P - I) N)|.
double orthonormality_correction(const BasisBounds& basis, const std::vector<double>& nn, int64_t rank);

// The rounding allowance of ||C||^2 - ||N||^2 as the true discarded mass, given
// `product_error` e (||E||_F <= e ||C||), eta, and the two pairwise sums with their
// depths: the terms above, the sums' gamma_depth and one rounding of the difference
// (u ||C||^2), times 1.01 for the second-order terms and the rounding of this very
// expression. On the 16^5 tensor about 3e-14 ||X||^2 at step 0 (16 rows), within the
// step budget of 2.5e-13 ||X||^2 at tol 1e-6 (the tail there: 7.5e-14).
double difference_allowance(double product_error, double eta, double c_norm2, int c_depth, double b_norm2,
                            int b_depth);

// Whether a discarded mass computed as a difference, `tail` of ||C||^2 = `c_norm2`,
// vouches for the step: within delta2 with its allowance, and at least 32 u ||C||^2.
// Below that the difference no longer tells the mass to a few per cent (the basis'
// departure from orthonormality alone moves it by a few u ||C||^2), and the caller
// measures it from the data so that the reported error stays exact, not merely bounded.
bool difference_accepted(double tail, double allowance, double c_norm2, double delta2);

// The step's discarded mass from the two sums, ||C||^2 - ||N||^2 plus the
// orthonormality correction of `basis` (the core, rank columns) given `nn` ~ N N^T,
// into `tail`; true when difference_accepted vouches for it with the allowance for
// `product_error` (||E||_F <= product_error ||C||, E the rounding of N), the sums'
// depths and the correction's magnitude.
bool difference_tail(double product_error, const BasisBounds& basis, const std::vector<double>& nn, int64_t rank,
                     const SquaredSum& c, const SquaredSum& n, double delta2, double& tail);

// next = Q^T C (rank x cols) for a wide C (rows x cols) by column blocks in cache (C read
// once, its squares, unless `c_known` holds them, and those of the block of next summed
// while resident), in parallel with one BLAS thread each; the partial sums are joined
// pairwise in a fixed order.
ProjectionSums project_and_sum(const double* c, int64_t rows, int64_t cols, const double* q, int64_t rank,
                               const SquaredSum& c_known, double* next);

// Q^T C (rank x cols) for a wide C, straight into `next` (project_and_sum), and the
// discarded mass ||C - Q Q^T C||^2 (`tail`) as ||C||^2 - ||Q^T C||^2 plus the
// orthonormality correction, within the allowance: rank FMA per entry of C instead of
// rows for a rotation by every eigenvector or 2 rank for a residual. A square Q
// (rank == rows) discards nothing but rounding: the true mass ||(I - Q Q^T) C - Q E||^2
// is at most (eta + gamma_rows || |Q| ||_2)^2 (1 + eta) ||C||^2, second order in u, and 0
// is reported. `c_gram` (C C^T, rows x rows, as computed) gives Q^T C C^T Q for the
// correction. `norm` comes in as ||C||^2 when known, and leaves as ||next||^2 (or
// ||C||^2 when the step is refused). Returns false, leaving the mass to be measured from
// the data, when difference_accepted refuses.
bool project_by_difference(const double* c, int64_t rows, int64_t cols, const double* q, int64_t rank,
                           const BasisBounds& basis, const double* c_gram, double delta2, double* next, double& tail,
                           SquaredSum& norm);

// Shared with the GPU's TT-SVD (cuda/tt.cpp), so that both check and cap alike.
// kUsage for a tolerance outside [0, 1), a negative max_rank, or neither given; `what`
// names the operation ("tt", "tt-round").
void validate_options(const TtOptions& options, const char* what);
// The rank cap of a step whose matrix allows at most `largest`: max_rank when smaller.
int64_t rank_cap(const TtOptions& options, int64_t largest);

}  // namespace tk::decomp::tt_detail
