// The MTTKRP of a dense tensor on the device, as cuBLAS calls on its row-major layout:
// M = X_(n) (KR_left ⊙ KR_right), KR_left and KR_right the Khatri-Rao products of the
// modes before and after n. Seen around mode n the tensor is `left` slices of
// dim x `right` (cuda/modes.h):
// - mode 0: M = X_(0) KR_right, one GEMM;
// - the last mode: M = X_(n) KR_left, one GEMM over the slices as rows;
// - a middle mode: Y = X contracted with KR_left over the slices (one GEMM, dim x right
//   x R), then column r of M is slice r of Y times column r of KR_right: a strided
//   batch of R matrix-vector GEMMs.
// The Khatri-Rao products are built on the device, column by column, as outer products
// (a strided batch of rank-1 GEMMs), from the host's factors (I_k x R each, small).
// M comes back to the host, where the ALS loop (cp_core.cpp) solves the R x R normal
// equations and measures the fit exactly as for the CPU's MTTKRP.
#include "tk/decomp/cuda/cp.h"

#include <cmath>
#include <memory>
#include <vector>

#include "tk/core/error.h"
#include "tk/decomp/cp_internal.h"
#include "tk/decomp/cuda/modes.h"
#include "tk/decomp/modes.h"
#include "tk/linalg/blas.h"

namespace tk::decomp::cuda {

namespace {

using cp_detail::Factors;
using device::cuda::DeviceArray;
using linalg::Op;

// An I x R row-major factor as the device's column-major I x R (each column contiguous).
template <typename T> DeviceArray<T> upload_columns(const Gpu& gpu, const std::vector<T>& a, int64_t rows, int64_t rank) {
  std::vector<T> columns(a.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t r = 0; r < rank; ++r) columns[r * rows + i] = a[i * rank + r];
  return to_device(columns.data(), columns.size(), gpu.stream);
}

// The Khatri-Rao product of the factors of modes [first, last) (not empty), column-major
// (rows x R, rows = the product of their extents, the last mode's index varying fastest,
// as cp_detail::khatri_rao orders them).
template <typename T>
DeviceArray<T> khatri_rao_columns(const Gpu& gpu, const Factors<T>& a, const std::vector<int64_t>& shape, int first,
                                  int last, int64_t rank) {
  int64_t rows = shape[first];
  DeviceArray<T> product = upload_columns(gpu, a[first], rows, rank);
  for (int k = first + 1; k < last; ++k) {
    const int64_t n = shape[k];
    const DeviceArray<T> factor = upload_columns(gpu, a[k], n, rank);
    DeviceArray<T> next(static_cast<size_t>(rows * n * rank));
    // Column r, indexed p * n + i, is the n x rows outer product factor[:, r] product[:, r]^T.
    linalg::cuda::gemm_batched(gpu.handles, Op::kNoTrans, Op::kTrans, n, rows, 1, T(1), factor.data(), n, n,
                               product.data(), rows, rows, T(0), next.data(), n, rows * n, rank);
    gpu.stream.synchronize();  // `product` and `factor` are freed below
    product = std::move(next);
    rows *= n;
  }
  return product;
}

// The dense problem with its MTTKRP on the device; the tensor `x` (device memory, of
// `shape`) outlives it.
template <typename T> class DeviceProblem : public cp_detail::GramProblem<T> {
 public:
  DeviceProblem(const Gpu& gpu, const T* x, const std::vector<int64_t>& shape, int64_t rank, double norm_sq,
                const CpOptions& options)
      : cp_detail::GramProblem<T>(shape, rank, norm_sq, options), gpu_(gpu), x_(x) {}

 protected:
  void mttkrp(int mode, const Factors<T>& a, T* m) override {
    const std::vector<int64_t>& shape = this->shape_;
    const int64_t rank = this->rank_;
    const int d = static_cast<int>(shape.size());
    const modes::ModeSplit s = modes::mode_split(shape, static_cast<size_t>(mode));
    const linalg::cuda::Handles& h = gpu_.handles;
    DeviceArray<T> columns(static_cast<size_t>(s.dim * rank));  // M column-major, dim x R
    if (mode == 0) {
      // X_(0) is, column-major, right x dim: M = X_(0) KR_right.
      const DeviceArray<T> kr = khatri_rao_columns(gpu_, a, shape, 1, d, rank);
      linalg::cuda::gemm(h, Op::kTrans, Op::kNoTrans, s.dim, rank, s.right, T(1), x_, s.right, kr.data(), s.right,
                         T(0), columns.data(), s.dim);
      gpu_.stream.synchronize();
    } else {
      // Y (dim * right x R) = X^T KR_left, X seen column-major as (dim * right) x left.
      const DeviceArray<T> kl = khatri_rao_columns(gpu_, a, shape, 0, mode, rank);
      const int64_t slice = s.dim * s.right;
      if (mode == d - 1) {
        linalg::cuda::gemm(h, Op::kNoTrans, Op::kNoTrans, slice, rank, s.left, T(1), x_, slice, kl.data(), s.left,
                           T(0), columns.data(), slice);
        gpu_.stream.synchronize();
      } else {
        DeviceArray<T> y(static_cast<size_t>(slice * rank));
        linalg::cuda::gemm(h, Op::kNoTrans, Op::kNoTrans, slice, rank, s.left, T(1), x_, slice, kl.data(), s.left,
                           T(0), y.data(), slice);
        // Column r of M = Y_r KR_right[:, r], Y_r (dim x right row-major) being, to
        // cuBLAS, right x dim: transposed.
        const DeviceArray<T> kr = khatri_rao_columns(gpu_, a, shape, mode + 1, d, rank);
        linalg::cuda::gemm_batched(h, Op::kTrans, Op::kNoTrans, s.dim, 1, s.right, T(1), y.data(), s.right, slice,
                                   kr.data(), s.right, s.right, T(0), columns.data(), s.dim, s.dim, rank);
        gpu_.stream.synchronize();
      }
    }
    const std::vector<T> host = to_host(columns.data(), columns.size(), gpu_.stream);
    for (int64_t i = 0; i < s.dim; ++i)
      for (int64_t r = 0; r < rank; ++r) m[i * rank + r] = host[r * s.dim + i];
  }

 private:
  const Gpu& gpu_;
  const T* x_;
};

// cp_detail::gram_init with the Gram matrices computed on the device.
template <typename T>
Factors<T> device_gram_init(const Gpu& gpu, const T* x, const std::vector<int64_t>& shape, const CpOptions& o) {
  const int64_t size = modes::element_count(shape);
  Factors<T> a;
  for (size_t n = 0; n < shape.size(); ++n) {
    const uint64_t seed = o.seed * 1000003u + n;
    const int64_t dim = shape[n];
    if (!cp_detail::dense_gram_start_pays(dim, size)) {
      a.push_back(cp_detail::gaussian_matrix<T>(dim, o.rank, seed));
      continue;
    }
    DeviceArray<T> gram(static_cast<size_t>(dim * dim));
    mode_gram(gpu, x, shape, n, gram.data());
    // The lower triangle, column-major, is the upper one of the row-major matrix.
    std::vector<T> g = to_host(gram.data(), gram.size(), gpu.stream);
    for (int64_t i = 1; i < dim; ++i)
      for (int64_t j = 0; j < i; ++j) g[i * dim + j] = g[j * dim + i];
    a.push_back(cp_detail::leading_eigenvectors(dim, g, o.rank, seed));
  }
  return a;
}

template <typename T> CpResult cp_als_any(const DenseView<T>& x, const CpOptions& o, int device) {
  cp_detail::validate_options(x.shape, o);
  if (o.mask) throw usage_error("masked CP-ALS has no GPU path");
  if (x.data == nullptr) throw internal_error("cp_als: no data");
  const int64_t size = modes::element_count(x.shape);
  const double norm_sq = modes::sum_squares(x.data, size);
  if (!std::isfinite(norm_sq)) throw invalid_input("the tensor has NaN or Inf entries (mask them to fit around them)");
  // The host's BLAS calls are R x R and rows x R: one thread, as on the CPU path.
  linalg::SerialBlas serial_blas;
  const device::cuda::DeviceScope scope(device);
  const Gpu gpu;
  const DeviceArray<T> data = to_device(x.data, static_cast<size_t>(size), gpu.stream);
  auto make_problem = [&]() -> std::unique_ptr<cp_detail::CpProblem<T>> {
    return std::make_unique<DeviceProblem<T>>(gpu, data.data(), x.shape, o.rank, norm_sq, o);
  };
  auto init = [&](int restart) {
    Factors<T> a = cp_detail::initial_factors<T>(x.shape, o, restart);
    return a.empty() ? device_gram_init(gpu, data.data(), x.shape, o) : a;
  };
  return cp_detail::run_cp_als<T>(x.shape, o, norm_sq, make_problem, init);
}

}  // namespace

CpResult cp_als(const DenseView<double>& x, const CpOptions& options, int device) {
  return cp_als_any(x, options, device);
}
CpResult cp_als(const DenseView<float>& x, const CpOptions& options, int device) {
  return cp_als_any(x, options, device);
}

}  // namespace tk::decomp::cuda
