// Tensor-Train decomposition: TT-SVD (Oseledets 2011) and TT rounding.
//
// TT-SVD walks left to right. The carried matrix C (r_k n_k x rest; X itself at the
// start, never copied) is truncated to its leading left singular subspace Q, Q becomes
// core k and Q^T C is carried on. The subspace comes from the Gram matrix of the smaller
// side with a symmetric eigensolver (syrk + syevd, far cheaper than an SVD of a wide
// matrix): C C^T when r_k n_k <= rest, else C^T C, whose leading eigenvectors V give
// Q = orth(C V) (QR). Gram matrices of 48 or more rows whose spectrum falls fast get
// their leading eigenvectors from a pivoted Cholesky factor instead (a few times cheaper
// than syevd; leading_eigenvectors_by_cholesky). A later wide step with 64 or more rows
// in double precision first tries a randomized sketch of C instead of its Gram matrix
// (truncate_by_sketch), kept only when it vouches for the step's budget. Either way Q
// has orthonormal columns,
// so the whole approximation is an orthogonal projection of X and
//   ||X - X_tt||^2 = sum over steps of ||C - Q Q^T C||^2,
// each computed from the data, never from eigenvalues known only to about eps ||C||^2.
// In double precision a wide C first tries ||C||^2 - ||Q^T C||^2, both summed from the
// data during the projection the step needs anyway, with a rigorous bound on the
// rounding of that difference (truncate_by_difference, tt_mass.h); when the bound does
// not fit the step's budget, or the tail is too small for the difference to resolve,
// the mass is measured from the rotated or residual matrix (truncate_by_rotation,
// truncate_by_residual), exact to rounding. Each step discards at most
// delta^2 = tol^2 / (d-1) * ||X||^2, so the error is at most tol unless max_rank cuts
// deeper.
//
// Rounding orthogonalises right to left (QR of each core's transpose; an SVD where a
// core is wider than tall), after which the TT's norm is that of the first core and a
// left-to-right sweep of small truncated SVDs (gesdd) discards exactly the squared
// singular values it drops.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <type_traits>

#include "tk/core/buffer.h"
#include "tk/core/error.h"
#include "tk/decomp/decomp.h"
#include "tk/decomp/modes.h"
#include "tk/decomp/tt_mass.h"

namespace tk::decomp {
namespace {

using Clock = std::chrono::steady_clock;
using linalg::Op;
using tt_detail::basis_bounds;
using tt_detail::BasisBounds;
using tt_detail::congruence;
using tt_detail::difference_allowance;
using tt_detail::difference_tail;
using tt_detail::project_and_sum;
using tt_detail::project_by_difference;
using tt_detail::rank_cap;
using tt_detail::ProjectionSums;
using tt_detail::rounding_gamma;
using tt_detail::SquaredSum;

// A TT-SVD of fewer elements takes a few milliseconds: too little to split among
// threads, whose synchronisation would cost more than it saves (16^5 ran slower on two
// threads than on one). Such runs use one thread whatever the OpenMP setting.
constexpr int64_t kParallelElements = int64_t(1) << 22;

// Run OpenMP code on one thread for a scope (restoring the thread count after).
class SequentialScope {
 public:
  explicit SequentialScope(bool active) : saved_(active ? omp_get_max_threads() : 0) {
    if (saved_ > 0) omp_set_num_threads(1);
  }
  ~SequentialScope() {
    if (saved_ > 0) omp_set_num_threads(saved_);
  }
  SequentialScope(const SequentialScope&) = delete;
  SequentialScope& operator=(const SequentialScope&) = delete;

 private:
  int saved_;  // 0: inactive
};

// Uninitialised storage for a carried matrix (Q^T C), written whole before it is read:
// Buffer::allocate, which places matrices of 2 MiB or more in transparent huge pages (a
// fresh matrix of a few MB otherwise costs a page fault per 4 KiB on first touch, which
// on the 16^5 tensor took longer than the product that fills it). Nothing is zero-filled.
template <typename T> class Scratch {
 public:
  Scratch() = default;
  explicit Scratch(int64_t count)
      : buffer_(Buffer::allocate(static_cast<size_t>(count) * sizeof(T))), size_(count) {}
  T* data() { return reinterpret_cast<T*>(buffer_.mutable_data()); }
  int64_t size() const { return size_; }
  // Keep the first `count` values (count <= size(); the storage is not reallocated).
  void shrink(int64_t count) { size_ = std::min(size_, count); }

 private:
  Buffer buffer_;
  int64_t size_ = 0;
};

// The Gram matrix of the smaller side of C (rows x cols, row-major): C C^T when
// rows <= cols, else C^T C (C as a rows x cols tensor, modes.h splits it among threads).
template <typename T> std::vector<T> smaller_side_gram(const T* c, int64_t rows, int64_t cols) {
  const int64_t side = std::min(rows, cols);
  std::vector<T> gram(static_cast<size_t>(side * side));
  modes::mode_gram(c, {rows, cols}, rows <= cols ? 0 : 1, gram.data());
  return gram;
}

// next = Q^T C (rank x cols) and the exact ||C - Q next||^2, the residual formed piece
// by piece in a cache-resident buffer (C is read from memory once more at most). A wide
// C goes by column blocks (each block's projection and residual together); a tall one
// is projected in one product, then its residual formed by row blocks. The blocks run in
// parallel with one BLAS thread each; their sums are added in block order.
template <typename T>
double project_with_residual(const T* c, int64_t rows, int64_t cols, const T* q, int64_t rank, T* next) {
  const bool wide = rows <= cols;
  const int64_t span = wide ? cols : rows, other = wide ? rows : cols;
  const int64_t width = std::min(span, std::max<int64_t>(64, (int64_t(1) << 14) / other));
  const int64_t blocks = (span + width - 1) / width;
  if (!wide)
    linalg::gemm(Op::kTrans, Op::kNoTrans, rank, cols, rows, T(1), q, rank, c, cols, T(0), next, cols);
  std::vector<double> sums(static_cast<size_t>(blocks));
  const int threads = modes::loop_threads(blocks / 2);
#pragma omp parallel num_threads(threads)
  {
    std::vector<T> residual(static_cast<size_t>(other * width));
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t start = b * width, w = std::min(width, span - start);
      if (wide) {  // columns [start, start + w)
        linalg::gemm(Op::kTrans, Op::kNoTrans, rank, w, rows, T(1), q, rank, c + start, cols, T(0), next + start,
                     cols);
        for (int64_t i = 0; i < rows; ++i) std::copy_n(c + i * cols + start, w, &residual[i * w]);
        linalg::gemm(Op::kNoTrans, Op::kNoTrans, rows, w, rank, T(-1), q, rank, next + start, cols, T(1),
                     residual.data(), w);
      } else {  // rows [start, start + w)
        std::copy_n(c + start * cols, w * cols, residual.data());
        linalg::gemm(Op::kNoTrans, Op::kNoTrans, w, cols, rank, T(-1), q + start * rank, rank, next, cols, T(1),
                     residual.data(), cols);
      }
      sums[static_cast<size_t>(b)] = modes::sum_squares(residual.data(), other * w);
    }
  }
  double total = 0;
  for (double v : sums) total += v;
  return total;
}

// Projection on the subspace of the leading `rank` eigenvectors (columns of `basis`,
// rows x side when wide, cols x side when tall, in which case Q = orth(C V_r): C V_r has
// orthogonal columns of norms sigma_j and QR makes them exact). The discarded mass
// ||C - Q Q^T C||^2 (`tail`) comes from the residual; the rank, first chosen from the
// eigenvalues, grows while that exact mass exceeds delta2 (rarely more than once) up to
// `cap` (at most side), which keeps the guarantee. `next` receives Q^T C. Costs about
// 4 rank flops per entry of C.
template <typename T>
std::vector<T> truncate_by_residual(const T* c, int64_t rows, int64_t cols, const std::vector<T>& basis, int64_t side,
                                    double delta2, int64_t cap, Scratch<T>& next, double& tail, int64_t& rank) {
  for (;;) {
    std::vector<T> q(static_cast<size_t>(rows * rank));
    if (rows <= cols) {
      for (int64_t i = 0; i < rows; ++i) std::copy_n(&basis[i * side], rank, &q[i * rank]);
    } else {
      linalg::gemm(Op::kNoTrans, Op::kNoTrans, rows, rank, cols, T(1), c, cols, basis.data(), side, T(0), q.data(),
                   rank);
      linalg::qr(rows, rank, q.data(), nullptr);
    }
    next = Scratch<T>(rank * cols);
    tail = project_with_residual(c, rows, cols, q.data(), rank, next.data());
    if (tail <= delta2 || rank >= cap) return q;
    ++rank;
  }
}

// The difference path for the leading `rank` columns of `basis` (rows x stride, a wide
// C's eigenvectors), tried when the eigenvalues' tail `estimate` leaves room for the
// allowance predicted from `c_norm2` (the Gram's trace; the real one is computed from
// the data). On success `next` holds Q^T C, `tail` the discarded mass and the returned
// q the core; an empty q means the caller must measure the mass from the data.
std::vector<double> truncate_by_difference(const double* c, int64_t rows, int64_t cols,
                                           const std::vector<double>& basis, int64_t stride, int64_t rank,
                                           const std::vector<double>& c_gram, double estimate, double c_norm2,
                                           double delta2, Scratch<double>& next, double& tail, SquaredSum& norm) {
  std::vector<double> q(static_cast<size_t>(rows * rank));
  for (int64_t i = 0; i < rows; ++i) std::copy_n(&basis[i * stride], rank, &q[i * rank]);
  const BasisBounds bounds = basis_bounds(q.data(), rows, rank);
  const int depth = modes::sum_squares_pairwise_depth(rows * cols);  // about that of the sums to come
  if (rank < rows && estimate + difference_allowance(rounding_gamma(rows) * bounds.abs_norm, bounds.eta, c_norm2,
                                                     depth, c_norm2, depth) > delta2)
    return {};
  next = Scratch<double>(rank * cols);
  if (!project_by_difference(c, rows, cols, q.data(), rank, bounds, c_gram.data(), delta2, next.data(), tail, norm))
    return {};
  return q;
}

// A randomized range finder for a later step's wide C (Halko, Martinsson and Tropp 2011)
// instead of its Gram matrix: Y = C Omega for a fixed +-1 matrix Omega (cols x k, k
// `columns`), Q_Y = orth(Y), B = Q_Y^T C and the eigenpairs W, lambda of B B^T. The rank
// r comes from lambda and the mass outside the sketch, ||C||^2 - ||B||^2; the core is
// Q = fl(Q_Y W_r) and the carried matrix N = fl(W_r^T B). About 2 k rows multiply-adds
// per column of C where the Gram matrix costs rows^2 / 2 and the projection r rows
// (112 x 4096 at step 1 of the 16^5 tensor, k = 16: 3.6 against 7.2 thousand).
// The sketch only proposes Q; the mass is ||C||^2 - ||N||^2 with the allowance of
// difference_allowance, where N's rounding E = N - Q^T C = W_r^T E_B + E_N - F^T C
// (E_B that of B, |E_B| <= gamma_rows |Q_Y|^T |C|; E_N that of W_r^T B,
// |E_N| <= gamma_k |W_r|^T |B|; F that of Q, |F| <= gamma_k |Q_Y| |W_r|) gives
//   ||E|| / ||C|| <= gamma_rows a_Y ||W_r||_2 + gamma_k a_W ||B|| / ||C|| + gamma_k a_Y a_W
// with a = || |.| ||_2 and ||B|| <= (||Q_Y||_2 + gamma_rows a_Y) ||C||. The step is
// taken only when the rank leaves kSketchOversampling columns of the sketch unused (else
// a better subspace may lie outside it) and the mass is accepted as on the difference
// path. Returns an empty core when the caller must take the Gram matrix's path.
constexpr int64_t kSketchMinColumns = 16;
constexpr int64_t kSketchOversampling = 4;

// Columns of the sketch for a step whose previous rank was `previous_rank`, 0 when the
// Gram matrix is cheaper (the sketch's two products cost 4 columns / rows of it).
int64_t sketch_columns(int64_t rows, int64_t cols, int64_t previous_rank) {
  const int64_t columns = std::max(kSketchMinColumns, 2 * previous_rank);
  return rows <= cols && 4 * columns <= rows ? columns : 0;
}

// Rows [first, first + count) of the fixed +-1 matrix Omega (`columns` wide) into
// `omega`: the signs of row j are the bits of splitmix64 hashes of j, so every block, run
// and machine sees the same Omega.
void sign_rows(int64_t first, int64_t count, int64_t columns, double* omega) {
  const int64_t words = (columns + 63) / 64;
  for (int64_t j = 0; j < count; ++j)
    for (int64_t w = 0; w < words; ++w) {
      uint64_t z = static_cast<uint64_t>((first + j) * words + w + 1) * 0x9e3779b97f4a7c15ULL;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      for (int64_t b = 0; b < 64 && w * 64 + b < columns; ++b)
        omega[j * columns + w * 64 + b] = (z >> b) & 1 ? -1.0 : 1.0;
    }
}

// Y = C Omega (rows x columns), a block of rows of Omega at a time: Omega is never
// stored whole (on the 16^5 tensor it would be 512 KiB of fresh pages, each a fault).
constexpr int64_t kSketchBlock = 256;
std::vector<double> sketch_range(const double* c, int64_t rows, int64_t cols, int64_t columns) {
  std::vector<double> y(static_cast<size_t>(rows * columns), 0.0), omega(static_cast<size_t>(kSketchBlock * columns));
  for (int64_t j0 = 0; j0 < cols; j0 += kSketchBlock) {
    const int64_t w = std::min(kSketchBlock, cols - j0);
    sign_rows(j0, w, columns, omega.data());
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, rows, columns, w, 1.0, c + j0, cols, omega.data(), columns, 1.0, y.data(),
                 columns);
  }
  return y;
}

std::vector<double> truncate_by_sketch(const double* c, int64_t rows, int64_t cols, int64_t columns, double delta2,
                                       int64_t cap, Scratch<double>& next, double& tail, int64_t& rank,
                                       SquaredSum& norm) {
  std::vector<double> y = sketch_range(c, rows, cols, columns);
  linalg::qr(rows, columns, y.data(), nullptr);
  // B goes into `next`, whose first rank rows then receive N = W_r^T B block by block
  // (each block of N depends on the same block of B only): no second fresh matrix.
  next = Scratch<double>(columns * cols);
  double* b = next.data();
  const ProjectionSums sums = project_and_sum(c, rows, cols, y.data(), columns, norm, b);
  norm = sums.c;
  const double outside = sums.c.value - sums.b.value;
  if (!std::isfinite(sums.c.value) || !(outside < delta2)) return {};
  std::vector<double> b_gram(static_cast<size_t>(columns * columns));
  linalg::syrk(Op::kNoTrans, columns, cols, 1.0, b, cols, 0.0, b_gram.data(), columns);
  std::vector<double> eigenvalues, work(b_gram);
  const std::vector<double> w_all = modes::leading_eigenvectors(columns, work.data(), columns, &eigenvalues);
  rank = modes::truncation_rank(eigenvalues, delta2 - outside, std::min(cap, columns));
  if (rank > columns - kSketchOversampling) return {};
  std::vector<double> w(static_cast<size_t>(columns * rank));
  for (int64_t i = 0; i < columns; ++i) std::copy_n(&w_all[i * columns], rank, &w[i * rank]);
  std::vector<double> q(static_cast<size_t>(rows * rank));
  linalg::gemm(Op::kNoTrans, Op::kNoTrans, rows, rank, columns, 1.0, y.data(), columns, w.data(), rank, 0.0,
               q.data(), rank);
  std::vector<double> block(static_cast<size_t>(rank * kSketchBlock));
  for (int64_t j0 = 0; j0 < cols; j0 += kSketchBlock) {
    const int64_t width = std::min(kSketchBlock, cols - j0);
    linalg::gemm(Op::kTrans, Op::kNoTrans, rank, width, columns, 1.0, w.data(), rank, b + j0, cols, 0.0, block.data(),
                 width);
    for (int64_t i = 0; i < rank; ++i) std::copy_n(&block[i * width], width, b + i * cols + j0);
  }
  next.shrink(rank * cols);
  const SquaredSum n_norm{modes::sum_squares_pairwise(next.data(), rank * cols),
                         modes::sum_squares_pairwise_depth(rank * cols)};
  const BasisBounds qy = basis_bounds(y.data(), rows, columns), wr = basis_bounds(w.data(), columns, rank),
                    core = basis_bounds(q.data(), rows, rank);
  const double b_over_c = std::sqrt(1 + qy.eta) + rounding_gamma(rows) * qy.abs_norm;
  const double product_error = rounding_gamma(rows) * qy.abs_norm * std::sqrt(1 + wr.eta) +
                               rounding_gamma(columns) * wr.abs_norm * (b_over_c + qy.abs_norm);
  if (!difference_tail(product_error, core, congruence(b_gram.data(), w.data(), columns, rank), rank, sums.c, n_norm,
                       delta2, tail))
    return {};
  norm = n_norm;
  return q;
}

// Rotation of a wide C by all eigenvectors E (rows x rows) of C C^T: E^T C holds the
// projection Q^T C in its first rows and the discarded part in the others, so the
// squared norms of its rows, summed from the data, choose the rank and give the exact
// discarded mass. Column blocks are rotated in a cache-resident buffer (C is read once,
// only the leading rows are stored), in parallel with one BLAS thread each, the row
// sums added in block order. Costs rows^2 per column: used when the rank is a good part
// of rows. `rank` comes in as the eigenvalues' estimate; should the exact masses ask
// for more rows than were kept, the residual path takes over.
template <typename T>
std::vector<T> truncate_by_rotation(const T* c, int64_t rows, int64_t cols, const std::vector<T>& e, double delta2,
                                    int64_t cap, Scratch<T>& next, double& tail, int64_t& rank) {
  const int64_t keep = std::min(cap, rank + 2);
  const int64_t width = std::max<int64_t>(256, (int64_t(1) << 15) / rows);
  const int64_t blocks = (cols + width - 1) / width;
  next = Scratch<T>(keep * cols);
  std::vector<double> block_mass(static_cast<size_t>(blocks * rows));
  const int threads = modes::loop_threads(blocks / 2);
#pragma omp parallel num_threads(threads)
  {
    std::vector<T> buffer(static_cast<size_t>(rows * width));
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t j0 = b * width, w = std::min(width, cols - j0);
      linalg::gemm(Op::kTrans, Op::kNoTrans, rows, w, rows, T(1), e.data(), rows, c + j0, cols, T(0), buffer.data(), w);
      for (int64_t i = 0; i < rows; ++i) block_mass[b * rows + i] = modes::sum_squares(&buffer[i * w], w);
      for (int64_t i = 0; i < keep; ++i) std::copy_n(&buffer[i * w], w, next.data() + i * cols + j0);
    }
  }
  std::vector<double> row_mass(static_cast<size_t>(rows), 0.0);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t i = 0; i < rows; ++i) row_mass[i] += block_mass[b * rows + i];
  rank = modes::truncation_rank(row_mass, delta2, cap, &tail);
  if (rank > keep) return truncate_by_residual(c, rows, cols, e, rows, delta2, cap, next, tail, rank);
  std::vector<T> q(static_cast<size_t>(rows * rank));
  for (int64_t i = 0; i < rows; ++i) std::copy_n(&e[i * rows], rank, &q[i * rank]);
  next.shrink(rank * cols);
  return q;
}

// Below this size a full eigensolver costs little; above it, on the Grams of TT-SVD
// whose spectra fall fast (112 x 112 and 128 x 128 on the 16^5 tensor), syevd took about
// 0.9 ms each against 0.1 ms for the pivoted Cholesky path.
constexpr int64_t kCholeskySide = 48;

// The leading eigenvectors of a Gram matrix G (n x n, not modified) from its pivoted
// Cholesky factor: P^T G P ~ L L^T stopped at pivots <= delta2 / (16 n) leaves a positive
// semi-definite remainder, so with F = P L (n x m) the eigenpairs of F F^T are those of G
// up to that remainder, and they come from the m x m matrix F^T F = W diag(lambda) W^T:
// the eigenvectors are orth(F W), in order. `basis` (n x m, orthonormal columns) and
// `eigenvalues` (m, descending) receive them and `remainder` the remainder's trace as
// computed (trace(G) - ||L||^2; like any eigenvalue tail, known to about eps trace(G)).
// These only choose the first rank; the discarded mass is measured from the data after.
// Returns false, leaving the work to the full eigensolver, when the factor keeps more
// than half the columns (nothing gained).
template <typename T>
bool leading_eigenvectors_by_cholesky(int64_t n, const std::vector<T>& gram, double delta2, std::vector<T>& basis,
                                      std::vector<double>& eigenvalues, double& remainder) {
  std::vector<T> factor(gram);
  std::vector<int64_t> piv(static_cast<size_t>(n));
  const double pivot_tol = delta2 / (16.0 * double(n));
  const int64_t m = linalg::pivoted_cholesky(n, factor.data(), static_cast<T>(pivot_tol), piv.data());
  if (m < 1 || 2 * m > n) return false;
  std::vector<T> f(static_cast<size_t>(n * m));  // F = P L
  double kept = 0;
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < m; ++j) {
      const T v = j <= k ? factor[k * n + j] : T(0);
      f[piv[k] * m + j] = v;
      kept += double(v) * double(v);
    }
  remainder = std::max(0.0, modes::trace(n, gram.data()) - kept);
  std::vector<T> small(static_cast<size_t>(m * m));
  linalg::syrk(Op::kTrans, m, n, T(1), f.data(), m, T(0), small.data(), m);
  const std::vector<T> w = modes::leading_eigenvectors(m, small.data(), m, &eigenvalues);
  basis.assign(static_cast<size_t>(n * m), T(0));
  linalg::gemm(Op::kNoTrans, Op::kNoTrans, n, m, m, T(1), f.data(), m, w.data(), m, T(0), basis.data(), m);
  linalg::qr(n, m, basis.data(), nullptr);
  return true;
}

// One TT-SVD step on C (rows x cols) given its smaller-side Gram matrix (destroyed):
// returns the core Q (rows x rank, orthonormal columns), replaces `carried` by Q^T C and
// adds the exact discarded mass ||C - Q Q^T C||^2 to `discarded` (never the eigenvalue
// tail, known only to about eps ||C||^2).
template <typename T>
std::vector<T> truncate_step(const T* c, int64_t rows, int64_t cols, std::vector<T>& gram, double delta2, int64_t cap,
                             Scratch<T>& carried, double& discarded, int64_t& rank, SquaredSum& norm) {
  const int64_t side = std::min(rows, cols);
  cap = std::min(cap, side);
  Scratch<T> next;  // c may point into carried: replaced only at the end
  double tail = 0;
  std::vector<T> q;
  std::vector<double> eigenvalues;
  std::vector<T> basis;
  double remainder = 0, estimate = 0;
  const bool wide = rows <= cols;
  const double c_norm2 = modes::trace(side, gram.data());
  const std::vector<T> c_gram = wide && std::is_same_v<T, double> ? gram : std::vector<T>();  // syev destroys gram
  // A wide C in double precision first tries the difference path (rank FMA per entry);
  // when it cannot vouch for the step's budget, the mass is measured from the data (in
  // single precision the rounding of Q^T C, u = 6e-8, leaves the difference too coarse
  // to report the error by). The Cholesky path serves
  // the difference and residual projections only (the rotation needs every eigenvector);
  // should the exact mass ask for more columns than it found, the full eigensolver
  // takes over.
  if (side >= kCholeskySide && leading_eigenvectors_by_cholesky(side, gram, delta2, basis, eigenvalues, remainder)) {
    const int64_t found = static_cast<int64_t>(eigenvalues.size());
    rank = modes::truncation_rank(eigenvalues, delta2 - remainder, std::min(cap, found), &estimate);
    if (remainder < delta2 && rank < found) {
      if constexpr (std::is_same_v<T, double>)
        if (wide)
          q = truncate_by_difference(c, rows, cols, basis, found, rank, c_gram, estimate + remainder, c_norm2, delta2,
                                     next, tail, norm);
      if (q.empty() && !(wide && rows <= 3 * rank)) {
        q = truncate_by_residual(c, rows, cols, basis, found, delta2, std::min(cap, found), next, tail, rank);
        norm = SquaredSum{};
      }
      if (!q.empty() && (tail <= delta2 || rank >= cap)) {
        carried = std::move(next);
        discarded += tail;
        return q;
      }
    }
  }
  basis = modes::leading_eigenvectors(side, gram.data(), side, &eigenvalues);
  rank = modes::truncation_rank(eigenvalues, delta2, cap, &estimate);
  if constexpr (std::is_same_v<T, double>) {
    if (wide) {
      q = truncate_by_difference(c, rows, cols, basis, side, rank, c_gram, estimate, c_norm2, delta2, next, tail, norm);
      if (!q.empty()) {
        carried = std::move(next);
        discarded += tail;
        return q;
      }
    }
  }
  // Rotation costs rows^2 per column of C, the residual about 4 rank rows.
  if (wide && rows <= 3 * rank)
    q = truncate_by_rotation(c, rows, cols, basis, delta2, cap, next, tail, rank);
  else
    q = truncate_by_residual(c, rows, cols, basis, side, delta2, cap, next, tail, rank);
  norm = SquaredSum{};
  carried = std::move(next);
  discarded += tail;
  return q;
}

template <typename T> TtResult tt_svd_impl(const DenseView<T>& x, const TtOptions& options) {
  const Clock::time_point start = Clock::now();
  linalg::SerialBlas serial_blas;  // the parallel work is the OpenMP loops over blocks
  SequentialScope small(modes::element_count(x.shape) < kParallelElements);
  tt_detail::validate_options(options, "tt");
  modes::validate_dense_shape(x.shape, "tt");
  const size_t d = x.shape.size();
  // ||X||^2: for double input the trace of the first Gram matrix (no extra pass over X);
  // for float input a pass accumulating in double.
  double norm2 = -1;
  if constexpr (std::is_same_v<T, float>) norm2 = modes::sum_squares(x.data, modes::element_count(x.shape));

  TtResult result;
  result.shape = x.shape;
  result.ranks.assign(d + 1, 1);
  result.cores.resize(d);
  const T* c = x.data;
  Scratch<T> carried;
  SquaredSum carried_norm;  // ||C||^2 when a difference path summed it
  int64_t rest = modes::element_count(x.shape);
  double discarded = 0;
  // delta^2, each step's share of the squared error (||X||^2 known from the first step).
  auto step_budget = [&] { return options.tol * options.tol / double(d - 1) * norm2; };
  for (size_t k = 0; k + 1 < d; ++k) {
    const int64_t rows = result.ranks[k] * x.shape[k];
    rest /= x.shape[k];
    const int64_t cap = rank_cap(options, std::min(rows, rest));
    int64_t rank = 0;
    std::vector<T> q;
    // Later steps (||X||^2 known) first try a sketch of C instead of its Gram matrix.
    if constexpr (std::is_same_v<T, double>) {
      const int64_t columns = k > 0 ? sketch_columns(rows, rest, result.ranks[k]) : 0;
      if (columns > 0) {
        Scratch<double> next;
        double tail = 0;
        q = truncate_by_sketch(c, rows, rest, columns, step_budget(), cap, next, tail, rank, carried_norm);
        if (!q.empty()) {
          carried = std::move(next);
          discarded += tail;
        }
      }
    }
    if (q.empty()) {
      std::vector<T> gram = smaller_side_gram(c, rows, rest);
      if (k == 0) {
        if (norm2 < 0) norm2 = modes::trace(std::min(rows, rest), gram.data());
        modes::check_finite_norm(norm2, "tt");
      }
      q = truncate_step(c, rows, rest, gram, step_budget(), cap, carried, discarded, rank, carried_norm);
    }
    result.ranks[k + 1] = rank;
    result.cores[k].assign(q.begin(), q.end());
    c = carried.data();
  }
  result.cores[d - 1].assign(c, c + result.ranks[d - 1] * x.shape[d - 1]);
  result.rel_error = norm2 > 0 ? std::sqrt(discarded / norm2) : 0;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

void validate_tt(const TtResult& tt) {
  const size_t d = tt.shape.size();
  if (d < 2 || tt.ranks.size() != d + 1 || tt.cores.size() != d || tt.ranks.front() != 1 || tt.ranks.back() != 1)
    throw invalid_input("tt-round: the TT's shape, ranks and cores do not match");
  for (size_t k = 0; k < d; ++k) {
    if (tt.shape[k] < 1 || tt.ranks[k] < 1 || tt.ranks[k + 1] < 1 ||
        static_cast<int64_t>(tt.cores[k].size()) != tt.ranks[k] * tt.shape[k] * tt.ranks[k + 1])
      throw invalid_input("tt-round: core " + std::to_string(k) + " does not have the size its ranks give");
    for (double v : tt.cores[k])
      if (!std::isfinite(v)) throw invalid_input("tt-round: core " + std::to_string(k) + " holds NaN or Inf values");
  }
}

// Make cores 1..d-1 right-orthonormal (each r_k x (n_k r_{k+1}) with orthonormal rows),
// moving the non-orthogonal part into the core on the left. A rank larger than
// n_k r_{k+1} shrinks to it on the way.
void orthogonalize_right_to_left(TtResult& tt) {
  for (size_t k = tt.shape.size() - 1; k >= 1; --k) {
    const int64_t r = tt.ranks[k], cols = tt.shape[k] * tt.ranks[k + 1];
    std::vector<double> mt(static_cast<size_t>(cols * r));  // core^T, cols x r
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < cols; ++j) mt[j * r + i] = tt.cores[k][i * cols + j];
    int64_t new_r = r;
    std::vector<double> rt;  // R^T in core^T = Q R, so core = R^T Q^T; R is new_r x r
    if (cols >= r) {
      std::vector<double> rr(static_cast<size_t>(r * r));
      linalg::qr(cols, r, mt.data(), rr.data());
      rt = std::move(rr);
    } else {
      new_r = cols;
      std::vector<double> u(static_cast<size_t>(cols * cols)), s(static_cast<size_t>(cols)),
          vt(static_cast<size_t>(cols * r));
      linalg::svd(cols, r, mt.data(), u.data(), s.data(), vt.data());
      for (int64_t i = 0; i < cols; ++i)
        for (int64_t j = 0; j < r; ++j) vt[i * r + j] *= s[i];
      mt = std::move(u);
      rt = std::move(vt);
    }
    std::vector<double> core(static_cast<size_t>(new_r * cols));  // Q^T
    for (int64_t i = 0; i < new_r; ++i)
      for (int64_t j = 0; j < cols; ++j) core[i * cols + j] = mt[j * new_r + i];
    tt.cores[k] = std::move(core);
    // Left core (r_{k-1} n_{k-1} x r) times R^T (r x new_r).
    const int64_t left_rows = tt.ranks[k - 1] * tt.shape[k - 1];
    std::vector<double> left(static_cast<size_t>(left_rows * new_r));
    linalg::gemm(Op::kNoTrans, Op::kTrans, left_rows, new_r, r, 1.0, tt.cores[k - 1].data(), r, rt.data(), r, 0.0,
                 left.data(), new_r);
    tt.cores[k - 1] = std::move(left);
    tt.ranks[k] = new_r;
  }
}

}  // namespace

namespace tt_detail {

void validate_options(const TtOptions& options, const char* what) {
  if (!(options.tol >= 0 && options.tol < 1))
    throw usage_error(std::string(what) + ": the tolerance must be in (0,1)");
  if (options.max_rank < 0) throw usage_error(std::string(what) + ": the maximum rank must be positive");
  if (options.tol == 0 && options.max_rank == 0)
    throw usage_error(std::string(what) + ": give a tolerance, a maximum rank or both");
}

int64_t rank_cap(const TtOptions& options, int64_t largest) {
  return options.max_rank > 0 ? std::min(options.max_rank, largest) : largest;
}

}  // namespace tt_detail

TtResult tt_svd(const DenseView<double>& x, const TtOptions& options) { return tt_svd_impl(x, options); }
TtResult tt_svd(const DenseView<float>& x, const TtOptions& options) { return tt_svd_impl(x, options); }

TtResult tt_round(const TtResult& tt, const TtOptions& options) {
  const Clock::time_point start = Clock::now();
  tt_detail::validate_options(options, "tt-round");
  validate_tt(tt);
  TtResult out = tt;
  orthogonalize_right_to_left(out);
  const size_t d = out.shape.size();
  const double norm2 = modes::sum_squares(out.cores[0].data(), static_cast<int64_t>(out.cores[0].size()));
  const double delta2 = options.tol * options.tol / double(d - 1) * norm2;
  double discarded = 0;
  for (size_t k = 0; k + 1 < d; ++k) {
    const int64_t rows = out.ranks[k] * out.shape[k], cols = out.ranks[k + 1], p = std::min(rows, cols);
    std::vector<double> u(static_cast<size_t>(rows * p)), s(static_cast<size_t>(p)), vt(static_cast<size_t>(p * cols));
    linalg::svd(rows, cols, out.cores[k].data(), u.data(), s.data(), vt.data());
    std::vector<double> s2(s.size());
    for (size_t i = 0; i < s.size(); ++i) s2[i] = s[i] * s[i];
    double tail = 0;
    const int64_t r = modes::truncation_rank(s2, delta2, rank_cap(options, p), &tail);
    discarded += tail;
    std::vector<double> core(static_cast<size_t>(rows * r));
    for (int64_t i = 0; i < rows; ++i) std::copy_n(&u[i * p], r, &core[i * r]);
    out.cores[k] = std::move(core);
    // Next core becomes diag(s_r) Vt_r (r x cols) times itself (cols x n r').
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < cols; ++j) vt[i * cols + j] *= s[i];
    const int64_t next_cols = out.shape[k + 1] * out.ranks[k + 2];
    std::vector<double> next(static_cast<size_t>(r * next_cols));
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, r, next_cols, cols, 1.0, vt.data(), cols, out.cores[k + 1].data(),
                 next_cols, 0.0, next.data(), next_cols);
    out.cores[k + 1] = std::move(next);
    out.ranks[k + 1] = r;
  }
  out.rel_error = norm2 > 0 ? std::sqrt(discarded / norm2) : 0;
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace tk::decomp
