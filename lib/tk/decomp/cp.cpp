// Dense CP-ALS: the entry points, the data checks, the Gram initialisation and the
// MTTKRP by a two-group dimension tree (see DenseProblem). The tensor is never copied or
// unfolded: every pass over it is one GEMM on its row-major layout.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "tk/core/error.h"
#include "tk/decomp/cp_internal.h"
#include "tk/decomp/decomp.h"
#include "tk/decomp/dense_dist.h"
#include "tk/decomp/modes.h"
#include "tk/dist/comm.h"
#include "tk/linalg/blas.h"

namespace tk::decomp {
namespace cp_detail {
namespace {

using linalg::Op;

// Below this many multiply-adds a parallel region costs more than it saves (small
// tensors run thousands of iterations; every region is a barrier).
constexpr int64_t kParallelWork = int64_t{1} << 20;

int64_t product(const std::vector<int64_t>& shape, int first, int last) {
  int64_t p = 1;
  for (int k = first; k < last; ++k) p *= shape[k];
  return p;
}

// M[i, r] = sum_{b, c} P[b, i, c, r] * KB[b, r] * KC[c, r]: the MTTKRP of one mode of a
// partial tensor P (before x dim x after x R) whose other modes' factors are KB and KC
// (Khatri-Rao rows). Rows of M are independent, so the threads split them and the
// result does not depend on the thread count.
template <typename T>
void contract_partial(const T* p, int64_t before, int64_t dim, int64_t after, int64_t rank, const T* kb, const T* kc,
                      T* m) {
  const int64_t work = before * dim * after * rank;
#pragma omp parallel for schedule(static) if (work > kParallelWork)
  for (int64_t i = 0; i < dim; ++i) {
    T* out = m + i * rank;
    std::fill(out, out + rank, T(0));
    for (int64_t b = 0; b < before; ++b) {
      const T* pb = p + ((b * dim + i) * after) * rank;
      const T* kbb = kb + b * rank;
      for (int64_t c = 0; c < after; ++c) {
        const T* pc = pb + c * rank;
        const T* kcc = kc + c * rank;
        for (int64_t r = 0; r < rank; ++r) out[r] += pc[r] * kbb[r] * kcc[r];
      }
    }
  }
}

// The same contraction on a partial stored transposed, R x (before x dim x after) (the
// layout A^T X of the right group's GEMM, which OpenBLAS runs faster than X^T A). Column
// r of M is two GEMVs over row r of the partial: v = PT_r KC[:, r] with PT_r seen as
// (before x dim) x after, then M[:, r] = V^T KB[:, r] with v seen as V, before x dim
// (a factor of an empty Khatri-Rao range, a single 1, is a scale instead). Each column is
// one thread's, so the result does not depend on the thread count.
template <typename T>
void contract_partial_transposed(const T* pt, int64_t before, int64_t dim, int64_t after, int64_t rank, const T* kb,
                                 const T* kc, T* m) {
  const int64_t size = before * dim * after;
  std::vector<T> kbt(static_cast<size_t>(rank * before)), kct(static_cast<size_t>(rank * after));
  for (int64_t b = 0; b < before; ++b)
    for (int64_t r = 0; r < rank; ++r) kbt[r * before + b] = kb[b * rank + r];
  for (int64_t c = 0; c < after; ++c)
    for (int64_t r = 0; r < rank; ++r) kct[r * after + c] = kc[c * rank + r];
  std::vector<T> mt(static_cast<size_t>(rank * dim));  // M^T
#pragma omp parallel if (size * rank > kParallelWork)
  {
    std::vector<T> v(after > 1 ? static_cast<size_t>(before * dim) : 0);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rank; ++r) {
      const T* row = pt + r * size;
      const T* w = row;
      T scale = 1;
      if (after > 1) {
        linalg::gemv(Op::kNoTrans, before * dim, after, T(1), row, after, kct.data() + r * after, T(0), v.data());
        w = v.data();
      } else {
        scale = kct[r];
      }
      T* out = mt.data() + r * dim;
      if (before > 1) {
        linalg::gemv(Op::kTrans, before, dim, scale, w, dim, kbt.data() + r * before, T(0), out);
      } else {
        scale *= kbt[r];
        for (int64_t i = 0; i < dim; ++i) out[i] = scale * w[i];
      }
    }
  }
  for (int64_t i = 0; i < dim; ++i)
    for (int64_t r = 0; r < rank; ++r) m[i * rank + r] = mt[r * dim + i];
}

// C (m x n) = op(A) B, the m rows of C split among the OpenMP threads, each block one
// GEMM, which OpenBLAS runs on one thread inside the parallel region: threads come from
// OpenMP only. Row r of op(A) is row r of A (kNoTrans) or column r (kTrans).
template <typename T>
void gemm_split_rows(Op op_a, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, T* c) {
#pragma omp parallel if (m * n * k >= kParallelWork)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t first = m * t / threads, last = m * (t + 1) / threads;
    if (last > first) {
      const T* block = op_a == Op::kNoTrans ? a + first * lda : a + first;
      linalg::gemm(op_a, Op::kNoTrans, last - first, n, k, T(1), block, lda, b, n, T(0), c + first * n, n);
    }
  }
}

// C (r x n) = A^T B for A (k x r) and B (k x n, leading dimension n), the n columns of C
// split among the OpenMP threads as above.
template <typename T> void gemm_transposed_split_columns(int64_t r, int64_t n, int64_t k, const T* a, const T* b, T* c) {
#pragma omp parallel if (r * n * k >= kParallelWork)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t first = n * t / threads, last = n * (t + 1) / threads;
    if (last > first)
      linalg::gemm(Op::kTrans, Op::kNoTrans, r, last - first, k, T(1), a, r, b + first, n, T(0), c + first, n);
  }
}

// The unweighted dense problem. The modes are split into a left group [0, split) and a
// right group [split, d). At mode 0 one GEMM contracts the tensor (L x Rt as stored) with
// the Khatri-Rao product of the right factors, giving the partial P_left (L x R); every
// left mode's MTTKRP is a small contraction of P_left. At mode `split` (the left factors
// now updated) one GEMM gives P_right^T = KR_left^T X (R x Rt) for the right modes. Two passes
// over the tensor per sweep instead of d, and ALS order is kept exactly.
template <typename T> class DenseProblem : public GramProblem<T> {
 public:
  DenseProblem(const DenseView<T>& x, int64_t rank, double norm_sq, const CpOptions& options)
      : GramProblem<T>(x.shape, rank, norm_sq, options), x_(x.data) {
    const int order = static_cast<int>(x.shape.size());
    // Balance the partials: the split whose larger side is smallest.
    split_ = 1;
    int64_t best = -1;
    for (int s = 1; s < order; ++s) {
      const int64_t larger = std::max(product(x.shape, 0, s), product(x.shape, s, order));
      if (best < 0 || larger < best) best = larger, split_ = s;
    }
    left_ = product(x.shape, 0, split_);
    right_ = product(x.shape, split_, order);
  }

 protected:
  void mttkrp(int mode, const Factors<T>& a, T* m) override {
    const std::vector<int64_t>& shape = this->shape_;
    const int64_t rank = this->rank_;
    const int order = static_cast<int>(shape.size());
    if (mode == 0) {
      const std::vector<T> kr = khatri_rao(a, shape, split_, order, rank);
      partial_left_.resize(static_cast<size_t>(left_ * rank));
      gemm_split_rows(Op::kNoTrans, left_, rank, right_, x_, right_, kr.data(), partial_left_.data());
    } else if (mode == split_) {
      const std::vector<T> kr = khatri_rao(a, shape, 0, split_, rank);
      partial_right_.resize(static_cast<size_t>(right_ * rank));
      gemm_transposed_split_columns(rank, right_, left_, kr.data(), x_, partial_right_.data());
    }
    const bool left = mode < split_;
    const int first = left ? 0 : split_;
    const int last = left ? split_ : order;
    const std::vector<T> kb = khatri_rao(a, shape, first, mode, rank);
    const std::vector<T> kc = khatri_rao(a, shape, mode + 1, last, rank);
    const int64_t before = product(shape, first, mode), after = product(shape, mode + 1, last);
    if (left)
      contract_partial(partial_left_.data(), before, shape[mode], after, rank, kb.data(), kc.data(), m);
    else
      contract_partial_transposed(partial_right_.data(), before, shape[mode], after, rank, kb.data(), kc.data(), m);
  }

 private:
  const T* x_;
  int split_ = 1;
  int64_t left_ = 0, right_ = 0;
  // Kept between sweeps, so that no sweep allocates and clears them again.
  std::vector<T> partial_left_;   // left_ x R
  std::vector<T> partial_right_;  // R x right_
};

// Across processes (dense_dist.h): this process holds rows [lo, hi) of mode 0 of the
// tensor, and the problem's shape is its slab's. Factor 0 is spread the same way; the
// others are whole on every process. An MTTKRP of mode 0 is complete in its rows; of any
// other mode it is a sum over the slabs, taken here, after which every process solves
// the same system. Two passes over the slab per sweep, as in one process.
template <typename T> class SpreadDenseProblem : public DenseProblem<T> {
 public:
  SpreadDenseProblem(const DenseView<T>& slab, int64_t rank, double norm_sq, const CpOptions& options,
                     dist::Comm& comm, int64_t first_rows)
      : DenseProblem<T>(slab, rank, norm_sq, options), comm_(comm), first_rows_(first_rows) {}

  void normalise(int mode, CpState<T>& s) override {
    if (mode != 0) return CpProblem<T>::normalise(mode, s);
    normalise_spread<T>(s, 0, this->shape_[0], this->rank_, sum_);
  }

  double total(double v) override {
    comm_.allreduce_sum(std::span<double>(&v, 1), dist::compute_deadline());
    return v;
  }

  // The one-process sketch, with mode 0's QR a Cholesky QR of its spread rows.
  void sketch(Factors<T>& gaussian) override {
    const int64_t rank = this->rank_;
    std::vector<T> m;
    for (size_t n = 0; n < gaussian.size(); ++n) {
      const int64_t rows = this->shape_[n];
      m.resize(static_cast<size_t>(rows * rank));
      mttkrp(static_cast<int>(n), gaussian, m.data());
      if (n > 0) {
        if (rows >= rank) linalg::qr(rows, rank, m.data(), nullptr);
      } else if (first_rows_ >= rank) {
        cholesky_qr_spread<T>(m, rows, rank, sum_);
      }
      gaussian[n] = m;
    }
  }

  // Mode 0's rows of every process, on every process (I_0 x R: small next to the slabs).
  Factors<T> collect(Factors<T> a) override {
    const auto* bytes = reinterpret_cast<const uint8_t*>(a[0].data());
    a[0] = dist::concatenated<T>(comm_.allgather({bytes, bytes + a[0].size() * sizeof(T)}, dist::compute_deadline()));
    return a;
  }

 protected:
  void mttkrp(int mode, const Factors<T>& a, T* m) override {
    DenseProblem<T>::mttkrp(mode, a, m);
    if (mode == 0) return;
    std::vector<T> partial(m, m + this->shape_[mode] * this->rank_);
    sum_(partial);
    std::copy(partial.begin(), partial.end(), m);
  }
  bool rows_spread(int mode) const override { return mode == 0; }

 private:
  dist::Comm& comm_;
  int64_t first_rows_;  // mode 0's extent in the whole tensor
  const SumOver<T> sum_ = [this](std::vector<T>& v) { dist::sum_in_double(comm_, v); };
};

}  // namespace

template <typename T> Factors<T> gram_init(const T* x, const std::vector<int64_t>& shape, const CpOptions& o) {
  // A mode whose Gram matrices (one I_n x I_n per thread) would cost more time or memory
  // than the ALS they save (over 8192, or over 1/8 of the tensor's size) starts from
  // Gaussian columns instead. Mode 0's start is never used by ALS (its first update
  // reads only the other modes), so a long first mode costs nothing.
  const int64_t size = product(shape, 0, static_cast<int>(shape.size()));
  Factors<T> a;
  for (size_t n = 0; n < shape.size(); ++n) {
    const uint64_t seed = o.seed * 1000003u + n;
    const int64_t dim = shape[n];
    if (!dense_gram_start_pays(dim, size)) {
      a.push_back(gaussian_matrix<T>(shape[n], o.rank, seed));
      continue;
    }
    std::vector<T> g(static_cast<size_t>(dim * dim));
    modes::mode_gram(x, shape, n, g.data());
    a.push_back(leading_eigenvectors(shape[n], g, o.rank, seed));
  }
  return a;
}

template Factors<float> gram_init<float>(const float*, const std::vector<int64_t>&, const CpOptions&);
template Factors<double> gram_init<double>(const double*, const std::vector<int64_t>&, const CpOptions&);

namespace {

// X_(0) X_(0)^T of a tensor whose mode-0 rows are spread over the processes: the other
// modes' J columns go in chunks; each chunk's rows are gathered from every process, each
// process adds its own rows' products, and the row blocks are gathered at the end.
// Memory: a chunk of I_0 x (2^22 / I_0) values and the I_0 x I_0 result.
template <typename T>
std::vector<T> first_mode_gram(const DenseView<T>& slab, const std::vector<int64_t>& shape, dist::Comm& comm) {
  const int64_t dim = shape[0], rows = slab.shape[0], cols = product(shape, 1, static_cast<int>(shape.size()));
  const int64_t width = std::max<int64_t>(1, (int64_t{1} << 22) / dim);
  std::vector<T> mine(static_cast<size_t>(rows * dim), T(0)), piece, chunk;
  for (int64_t c0 = 0; c0 < cols; c0 += width) {
    const int64_t w = std::min(width, cols - c0);
    piece.resize(static_cast<size_t>(rows * w));
    for (int64_t i = 0; i < rows; ++i) std::copy_n(slab.data + i * cols + c0, w, piece.begin() + i * w);
    const auto* bytes = reinterpret_cast<const uint8_t*>(piece.data());
    chunk = dist::concatenated<T>(comm.allgather({bytes, bytes + piece.size() * sizeof(T)}, dist::compute_deadline()));
    if (rows > 0) linalg::gemm(Op::kNoTrans, Op::kTrans, rows, dim, w, T(1), piece.data(), w, chunk.data(), w, T(1),
                               mine.data(), dim);
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(mine.data());
  return dist::concatenated<T>(comm.allgather({bytes, bytes + mine.size() * sizeof(T)}, dist::compute_deadline()));
}

// gram_init's start across processes: every mode's Gram matrix summed over the slabs,
// mode 0's from its spread rows (first_mode_gram) when HALS reads it (nonneg); without
// nonneg, ALS never reads mode 0's start, which is left zero.
template <typename T>
Factors<T> spread_gram_init(const DenseView<T>& slab, const std::vector<int64_t>& shape, const CpOptions& o,
                            dist::Comm& comm, int64_t lo) {
  const int64_t size = product(shape, 0, static_cast<int>(shape.size()));
  const int64_t rows = slab.shape[0];
  Factors<T> a;
  for (size_t n = 0; n < shape.size(); ++n) {
    const uint64_t seed = o.seed * 1000003u + n;
    const int64_t dim = shape[n];
    std::vector<T> full;
    if (!dense_gram_start_pays(dim, size)) {
      full = gaussian_matrix<T>(dim, o.rank, seed);
    } else if (n == 0 && !o.nonneg) {
      a.emplace_back(static_cast<size_t>(rows * o.rank), T(0));
      continue;
    } else {
      std::vector<T> g(static_cast<size_t>(dim * dim), T(0));
      if (n == 0) {
        g = first_mode_gram(slab, shape, comm);
      } else {
        if (rows > 0) modes::mode_gram(slab.data, slab.shape, n, g.data());
        dist::sum_in_double(comm, g);
      }
      full = leading_eigenvectors(dim, g, o.rank, seed);
    }
    a.push_back(n == 0 ? rows_of(full, lo, lo + rows, o.rank) : std::move(full));
  }
  return a;
}

template <typename T>
CpResult cp_als_spread(const DenseView<T>& slab, const std::vector<int64_t>& shape, dist::Comm& comm,
                       const CpOptions& options) {
  CpOptions o = options;
  if (comm.rank() != 0) o.on_iteration = {};
  validate_options(shape, o);
  if (o.mask) throw usage_error("masked CP does not run across processes");
  // Named values, not a structured binding: the lambda below captures them, which clang
  // before 16 refuses for bindings (make fuzz builds with clang).
  const auto rows = slab_rows(shape[0], comm.rank(), comm.size());
  const int64_t lo = rows.first, hi = rows.second;
  std::vector<int64_t> local = shape;
  local[0] = hi - lo;
  if (slab.shape != local) throw usage_error("cp_als: this process's slab is not its rows of mode 0");
  const double norm_sq = [&] {
    double v = modes::sum_squares(slab.data, nullptr, product(local, 0, static_cast<int>(local.size())));
    comm.allreduce_sum(std::span<double>(&v, 1), dist::compute_deadline());
    return v;
  }();
  if (!std::isfinite(norm_sq)) throw invalid_input("the tensor has NaN or Inf entries (mask them to fit around them)");
  linalg::SerialBlas serial_blas;
  auto make_problem = [&]() -> std::unique_ptr<CpProblem<T>> {
    return std::make_unique<SpreadDenseProblem<T>>(slab, o.rank, norm_sq, o, comm, shape[0]);
  };
  auto init = [&](int restart) {
    Factors<T> a = initial_factors<T>(shape, o, restart);
    if (a.empty()) return spread_gram_init(slab, shape, o, comm, lo);
    a[0] = rows_of(a[0], lo, hi, o.rank);
    return a;
  };
  return run_cp_als<T>(shape, o, norm_sq, make_problem, init);
}

template <typename T> CpResult cp_als_dense(const DenseView<T>& x, const CpOptions& o) {
  validate_options(x.shape, o);
  if (x.data == nullptr) throw internal_error("cp_als: no data");
  const int64_t size = product(x.shape, 0, static_cast<int>(x.shape.size()));
  const double norm_sq = modes::sum_squares(x.data, o.mask, size);
  if (!std::isfinite(norm_sq))
    throw invalid_input(o.mask ? "the tensor has NaN or Inf among its observed entries"
                               : "the tensor has NaN or Inf entries (mask them to fit around them)");
  if (o.mask) return cp_als_masked(x, o, norm_sq);
  // Parallel work is split by OpenMP; the other BLAS calls are R x R and run on one thread.
  linalg::SerialBlas serial_blas;
  auto make_problem = [&]() -> std::unique_ptr<CpProblem<T>> {
    return std::make_unique<DenseProblem<T>>(x, o.rank, norm_sq, o);
  };
  auto init = [&](int restart) {
    Factors<T> a = initial_factors<T>(x.shape, o, restart);
    return a.empty() ? gram_init(x.data, x.shape, o) : a;
  };
  return run_cp_als<T>(x.shape, o, norm_sq, make_problem, init);
}

}  // namespace
}  // namespace cp_detail

CpResult cp_als(const DenseView<double>& x, const CpOptions& options) { return cp_detail::cp_als_dense(x, options); }
CpResult cp_als(const DenseView<float>& x, const CpOptions& options) { return cp_detail::cp_als_dense(x, options); }

CpResult cp_als(const DenseView<double>& mine, const std::vector<int64_t>& shape, dist::Comm& comm,
                const CpOptions& options) {
  return cp_detail::cp_als_spread(mine, shape, comm, options);
}
CpResult cp_als(const DenseView<float>& mine, const std::vector<int64_t>& shape, dist::Comm& comm,
                const CpOptions& options) {
  return cp_detail::cp_als_spread(mine, shape, comm, options);
}

}  // namespace tk::decomp
