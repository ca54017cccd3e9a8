// TT-SVD (Oseledets 2011) as one path of tt.cpp's: step k truncates the carried matrix C
// (r_k n_k x rest, row-major; X itself at the start) to Q, its leading left singular
// subspace, Q becomes core k and Q^T C is carried on. Q comes from the Gram matrix of the
// smaller side (syrk + syevd): the leading eigenvectors of C C^T, or, for a tall C, the
// QR of C V with V those of C^T C. The rank is the smallest whose eigenvalue tail fits
// the step's share delta^2 = tol^2 / (d-1) ||X||^2; the eigenvalues are only known to
// about eps ||C||^2, so the discarded mass is then measured from the data, as
// ||C - Q Q^T C||^2 (one more GEMM), and where it does not fit the smallest rank that
// does is found by bisection up to the cap. Q has orthonormal
// columns, so ||X - X_tt||^2 is the sum of the steps' masses, and rel_error <= tol.
// The CPU's cheaper variants (a difference of norms with a rounding bound, sketches,
// pivoted Cholesky) stay on the CPU: here the GEMMs are cheap next to the bound's care.
//
// To cuBLAS a row-major rows x cols matrix C is A = C^T, cols x rows (leading dimension
// cols); Q is kept column-major (rows x r), so Q^T C is, column-major, A Q (cols x r).
#include "tk/decomp/cuda/tt.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "tk/core/error.h"
#include "tk/decomp/cuda/modes.h"
#include "tk/decomp/modes.h"
#include "tk/decomp/tt_mass.h"
#include "tk/linalg/blas.h"

namespace tk::decomp::cuda {

namespace {

using device::cuda::DeviceArray;
using linalg::Op;

template <typename T> class DeviceTt {
 public:
  DeviceTt(const Gpu& gpu, double delta2) : gpu_(gpu), delta2_(delta2) {}

  // Truncate C (rows x cols, row-major on the device) to `rank` columns of Q within the
  // budget, capped at `cap`: Q (column-major, rows x rank) into q, Q^T C (row-major
  // rank x cols) into next; returns the discarded mass.
  double truncate(const T* c, int64_t rows, int64_t cols, int64_t cap, DeviceArray<T>& q, DeviceArray<T>& next,
                  int64_t& rank) {
    const linalg::cuda::Handles& h = gpu_.handles;
    const bool wide = rows <= cols;
    const int64_t side = wide ? rows : cols;
    DeviceArray<T> gram(static_cast<size_t>(side * side));
    if (wide)
      linalg::cuda::syrk_lower(h, Op::kTrans, rows, cols, T(1), c, cols, T(0), gram.data(), rows);  // C C^T
    else
      linalg::cuda::syrk_lower(h, Op::kNoTrans, cols, rows, T(1), c, cols, T(0), gram.data(), cols);  // C^T C
    DeviceArray<T> w(static_cast<size_t>(side));
    linalg::cuda::syevd(h, side, gram.data(), w.data());  // ascending; eigenvector j is column j
    const std::vector<T> ascending = to_host(w.data(), w.size(), gpu_.stream);
    std::vector<double> eigenvalues(ascending.rbegin(), ascending.rend());
    auto attempt = [&](int64_t r) {
      basis(c, rows, cols, wide, gram.data(), r, q);
      return project(c, rows, cols, q.data(), r, next);
    };
    // Without a tolerance (max_rank alone) every step keeps its cap.
    rank = delta2_ > 0 ? modes::truncation_rank(eigenvalues, delta2_, cap) : cap;
    double mass = attempt(rank);
    if (mass <= delta2_ || rank >= cap) return mass;
    // The eigenvalues misjudged the tail (they are known to about eps ||C||^2): the
    // smallest larger rank whose measured mass fits, by bisection, as the mass of nested
    // bases only falls; the cap when none does.
    int64_t low = rank, high = cap, tried = rank;
    while (high - low > 1) {
      const int64_t middle = low + (high - low) / 2;
      mass = attempt(middle);
      tried = middle;
      (mass <= delta2_ ? high : low) = middle;
    }
    rank = high;
    return tried == high ? mass : attempt(high);
  }

 private:
  // Q for the leading `rank` eigenvectors (the last columns of `vectors`, side x side).
  void basis(const T* c, int64_t rows, int64_t cols, bool wide, const T* vectors, int64_t rank, DeviceArray<T>& q) {
    const int64_t side = wide ? rows : cols;
    const T* leading = vectors + (side - rank) * side;
    q = DeviceArray<T>(static_cast<size_t>(rows * rank));
    if (wide) {
      device::cuda::check(cudaMemcpyAsync(q.data(), leading, q.bytes(), cudaMemcpyDeviceToDevice, gpu_.stream.get()),
                          "copy");
    } else {
      // C V (rows x rank, column-major) = A^T V, then its orthonormal basis.
      linalg::cuda::gemm(gpu_.handles, Op::kTrans, Op::kNoTrans, rows, rank, cols, T(1), c, cols, leading, cols, T(0),
                         q.data(), rows);
      linalg::cuda::qr(gpu_.handles, rows, rank, q.data());
    }
    gpu_.stream.synchronize();
  }

  // next = Q^T C, and ||C - Q next||^2 measured from the data.
  double project(const T* c, int64_t rows, int64_t cols, const T* q, int64_t rank, DeviceArray<T>& next) {
    const linalg::cuda::Handles& h = gpu_.handles;
    next = DeviceArray<T>(static_cast<size_t>(rank * cols));
    linalg::cuda::gemm(h, Op::kNoTrans, Op::kNoTrans, cols, rank, rows, T(1), c, cols, q, rows, T(0), next.data(),
                       cols);
    DeviceArray<T> residual(static_cast<size_t>(rows * cols));
    device::cuda::check(
        cudaMemcpyAsync(residual.data(), c, residual.bytes(), cudaMemcpyDeviceToDevice, gpu_.stream.get()), "copy");
    // A - next Q^T, column-major cols x rows: C - Q (Q^T C) as stored.
    linalg::cuda::gemm(h, Op::kNoTrans, Op::kTrans, cols, rows, rank, T(-1), next.data(), cols, q, rows, T(1),
                       residual.data(), cols);
    const double norm = linalg::cuda::nrm2(h, rows * cols, residual.data());
    gpu_.stream.synchronize();
    return norm * norm;
  }

  const Gpu& gpu_;
  double delta2_;
};

template <typename T> TtResult tt_svd_any(const DenseView<T>& x, const TtOptions& options, int device) {
  const auto start = std::chrono::steady_clock::now();
  tt_detail::validate_options(options, "tt");
  modes::validate_dense_shape(x.shape, "tt");
  const size_t d = x.shape.size();
  int64_t rest = modes::element_count(x.shape);
  const double norm2 = modes::sum_squares(x.data, rest);
  modes::check_finite_norm(norm2, "tt");
  const device::cuda::DeviceScope scope(device);
  const Gpu gpu;
  DeviceArray<T> carried = to_device(x.data, static_cast<size_t>(rest), gpu.stream);
  DeviceTt<T> steps(gpu, options.tol * options.tol / double(d - 1) * norm2);
  TtResult result;
  result.shape = x.shape;
  result.ranks.assign(d + 1, 1);
  result.cores.resize(d);
  double discarded = 0;
  for (size_t k = 0; k + 1 < d; ++k) {
    const int64_t rows = result.ranks[k] * x.shape[k];
    rest /= x.shape[k];
    DeviceArray<T> q, next;
    int64_t rank = 0;
    discarded += steps.truncate(carried.data(), rows, rest, tt_detail::rank_cap(options, std::min(rows, rest)), q,
                                next, rank);
    // Core k, r_k x n_k x r_{k+1} row-major, is Q (rows x rank) row-major.
    const std::vector<T> columns = to_host(q.data(), q.size(), gpu.stream);
    std::vector<double>& core = result.cores[k];
    core.resize(columns.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t r = 0; r < rank; ++r) core[i * rank + r] = columns[r * rows + i];
    result.ranks[k + 1] = rank;
    carried = std::move(next);
  }
  const std::vector<T> last = to_host(carried.data(), carried.size(), gpu.stream);
  result.cores[d - 1].assign(last.begin(), last.end());
  result.rel_error = norm2 > 0 ? std::sqrt(discarded / norm2) : 0;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

TtResult tt_svd(const DenseView<double>& x, const TtOptions& options, int device) {
  return tt_svd_any(x, options, device);
}
TtResult tt_svd(const DenseView<float>& x, const TtOptions& options, int device) {
  return tt_svd_any(x, options, device);
}

}  // namespace tk::decomp::cuda
