// ST-HOSVD and HOOI as tucker.cpp runs them, with the tensor in device memory. What
// crosses the bus per step is small: the eigenvectors and eigenvalues of a Gram matrix
// (I_n^2 values) down, a factor (I_n x r_n) up, and the core down at the end of a pass.
// ||X||^2 is summed on the host before the upload, as the CPU sums it, so the error from
// the norms (||X||^2 - ||core||^2) has the CPU's accuracy; a model too accurate for that
// formula is measured on a reconstruction on the host, as on the CPU.
#include "tk/decomp/cuda/tucker.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tk/decomp/cuda/modes.h"
#include "tk/decomp/modes.h"
#include "tk/decomp/tucker_internal.h"
#include "tk/linalg/blas.h"

namespace tk::decomp::cuda {

namespace {

using device::cuda::DeviceArray;
using tucker_rules::Clock;
using tucker_rules::Model;

size_t count_of(const std::vector<int64_t>& shape) { return static_cast<size_t>(modes::element_count(shape)); }

// The tensor on the device and the passes over it.
template <typename T> class DeviceTucker {
 public:
  explicit DeviceTucker(const DenseView<T>& x) : shape_(x.shape), x_(to_device(x.data, count_of(x.shape), gpu_.stream)) {}

  // One ST-HOSVD pass (tucker.cpp's sthosvd): fixed ranks, or ranks by the tolerance rule.
  Model<T> sthosvd(const TuckerOptions& options, double tol, double norm2) {
    const size_t d = shape_.size();
    Model<T> model;
    model.ranks = options.ranks.empty() ? shape_ : options.ranks;
    model.factors.resize(d);
    double discarded = 0;
    std::vector<int64_t> shape = shape_;
    DeviceArray<T> storage;
    const T* current = x_.data();
    const std::vector<size_t> order = tucker_rules::projection_order(shape_, options.ranks);
    for (size_t step = 0; step < d; ++step) {
      const size_t n = order[step];
      const int64_t dim = shape[n];
      DeviceArray<T> gram(static_cast<size_t>(dim * dim));
      mode_gram(gpu_, current, shape, n, gram.data());
      std::vector<double> eigenvalues;
      const std::vector<T> all = leading_eigenvectors(gpu_, dim, gram.data(), dim, &eigenvalues);
      if (options.ranks.empty())
        model.ranks[n] = tucker_rules::tolerance_rank(eigenvalues, tol, norm2, step, d, discarded);
      const int64_t r = model.ranks[n];
      std::vector<T> factor(static_cast<size_t>(dim * r));
      for (int64_t i = 0; i < dim; ++i) std::copy_n(&all[i * dim], r, &factor[i * r]);
      storage = project(current, shape, n, factor, r);
      current = storage.data();
      model.factors[n] = std::move(factor);
    }
    model.core = to_host(current, count_of(shape), gpu_.stream);
    return model;
  }

  // One HOOI sweep (tucker.cpp's hooi_sweep) over `order`.
  void hooi_sweep(const std::vector<size_t>& order, Model<T>& next) {
    for (size_t n : order) {
      std::vector<int64_t> shape = shape_;
      DeviceArray<T> partial;
      const T* current = x_.data();
      for (size_t m : order)
        if (m != n) {
          partial = project(current, shape, m, next.factors[m], next.ranks[m]);
          current = partial.data();
        }
      const int64_t dim = shape[n];
      DeviceArray<T> gram(static_cast<size_t>(dim * dim));
      mode_gram(gpu_, current, shape, n, gram.data());
      next.factors[n] = leading_eigenvectors(gpu_, dim, gram.data(), next.ranks[n]);
      if (n == order.back()) {
        const DeviceArray<T> core = project(current, shape, n, next.factors[n], next.ranks[n]);
        next.core = to_host(core.data(), count_of(shape), gpu_.stream);
      }
    }
  }

 private:
  // x (of `shape`) projected on the host factor (I_n x rank); shape[n] becomes rank.
  DeviceArray<T> project(const T* x, std::vector<int64_t>& shape, size_t n, const std::vector<T>& factor,
                         int64_t rank) {
    const DeviceArray<T> u = to_device(factor.data(), factor.size(), gpu_.stream);
    std::vector<int64_t> after = shape;
    after[n] = rank;
    DeviceArray<T> y(count_of(after));
    mode_project(gpu_, x, shape, n, u.data(), rank, y.data());
    shape = std::move(after);
    return y;
  }

  std::vector<int64_t> shape_;
  Gpu gpu_;
  DeviceArray<T> x_;
};

template <typename T> TuckerResult tucker_any(const DenseView<T>& x, const TuckerOptions& options, int device) {
  const Clock::time_point start = Clock::now();
  modes::validate_dense_shape(x.shape, "tucker");
  tucker_rules::validate_options(x.shape, options);
  const double norm2 = modes::sum_squares(x.data, modes::element_count(x.shape));
  modes::check_finite_norm(norm2, "tucker");
  // The host's share (a reconstruction, when the error is too small for the norms) runs
  // as on the CPU path: OpenMP splits the mode products, BLAS calls stay serial.
  linalg::SerialBlas serial_blas;
  const device::cuda::DeviceScope scope(device);
  DeviceTucker<T> gpu(x);
  double error = 0;
  Model<T> model = tucker_rules::sthosvd_within_tol<T>(
      options, x.shape, [&](const TuckerOptions& o, double tol) { return gpu.sthosvd(o, tol, norm2); },
      [&](const Model<T>& m) { return tucker_rules::measured_relative_error(x, m, norm2); }, error);
  int iterations = 0;
  if (options.method == TuckerMethod::kHooi) {
    const std::vector<size_t> order = tucker_rules::projection_order(x.shape, model.ranks);
    iterations = tucker_rules::hooi_sweeps(options, norm2, start, model,
                                           [&](Model<T>& next) { gpu.hooi_sweep(order, next); });
    error = tucker_rules::measured_relative_error(x, model, norm2);
  }
  return tucker_rules::to_result(std::move(model), error, iterations, start);
}

}  // namespace

TuckerResult tucker(const DenseView<double>& x, const TuckerOptions& options, int device) {
  return tucker_any(x, options, device);
}
TuckerResult tucker(const DenseView<float>& x, const TuckerOptions& options, int device) {
  return tucker_any(x, options, device);
}

}  // namespace tk::decomp::cuda
