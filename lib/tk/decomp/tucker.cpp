// Tucker decomposition: sequentially truncated HOSVD (ST-HOSVD, Vannieuwenhoven,
// Vandebril and Meerbergen 2012) and HOOI refinement (De Lathauwer, De Moor and
// Vandewalle 2000).
//
// ST-HOSVD handles one mode at a time: the Gram matrix of the current tensor's mode-n
// unfolding (strided syrk, modes.h), its leading eigenvectors (syevd) as the factor,
// then the projection X ×_n U^T, so the tensor shrinks before the next mode and no SVD
// of a large unfolding is ever formed.
//
// Mode order. With fixed ranks, modes go in decreasing reduction I_n / r_n (ties: the
// larger I_n first): the most shrinking projection comes first, so every later Gram
// matrix and product works on the smallest tensor. With a tolerance the ranks are not
// known in advance; modes go in decreasing I_n, the modes with the most room to shrink.
// Equal modes go last mode first, so that of a cube mode 0 is projected last: across
// processes that is the cut mode, whose slabs are contiguous bytes of a row-major file.
//
// Tolerance. For ST-HOSVD, ||X - X^||^2 is exactly the sum over the processed modes of
// the eigenvalue mass discarded at each step. The budget tol^2 ||X||^2 is shared
// adaptively: step k of d may discard up to (budget - discarded so far) / (d - k), so a
// mode that needs less passes its unused share to the modes after it, and the sum never
// exceeds the budget: rel_error <= tol.
//
// rel_error is sqrt(||X||^2 - ||core||^2) / ||X|| (the factors are orthonormal and the
// core is the projection of X), both norms accumulated in double; when that is below
// 1e-4, where the subtraction has lost its digits, it is measured on a reconstruction.
//
// Across processes (dense_dist.h) the tensor is cut into slabs along the mode ST-HOSVD
// projects last. Every other mode's Gram matrix is the sum of the slabs' and its
// projection is local to each slab; before the last mode the shrunk slabs are gathered,
// and every process finishes the same small problem. HOOI sums (or, for the cut mode,
// gathers) each partial projection. The steps are the one-process steps; only the
// order of floating-point sums differs.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <tuple>
#include <string>
#include <type_traits>

#include "tk/core/error.h"
#include "tk/decomp/decomp.h"
#include "tk/decomp/dense_dist.h"
#include "tk/decomp/modes.h"
#include "tk/decomp/tall_modes.h"
#include "tk/decomp/tucker_internal.h"
#include "tk/dist/comm.h"

namespace tk::decomp {

namespace tucker_rules {

void validate_options(const std::vector<int64_t>& shape, const TuckerOptions& options) {
  if (!(options.tol >= 0 && options.tol < 1)) throw usage_error("tucker: the tolerance must be in (0,1)");
  if (options.ranks.empty()) {
    if (options.tol == 0) throw usage_error("tucker: give either ranks or a tolerance");
  } else {
    if (options.tol != 0) throw usage_error("tucker: give either ranks or a tolerance, not both");
    if (options.ranks.size() != shape.size())
      throw usage_error("tucker: " + std::to_string(options.ranks.size()) + " ranks for a tensor of order " +
                        std::to_string(shape.size()));
    for (size_t n = 0; n < shape.size(); ++n)
      if (options.ranks[n] < 1 || options.ranks[n] > shape[n])
        throw usage_error("tucker: rank " + std::to_string(options.ranks[n]) + " of mode " + std::to_string(n) +
                          " is outside 1.." + std::to_string(shape[n]));
  }
  if (options.method == TuckerMethod::kHooi && (options.max_iters < 1 || !(options.hooi_tol >= 0)))
    throw usage_error("tucker: HOOI needs max_iters >= 1 and hooi_tol >= 0");
}

std::vector<size_t> projection_order(const std::vector<int64_t>& shape, const std::vector<int64_t>& ranks) {
  std::vector<size_t> order(shape.size());
  std::iota(order.begin(), order.end(), size_t(0));
  auto reduction = [&](size_t n) { return ranks.empty() ? 1.0 : double(shape[n]) / double(ranks[n]); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (reduction(a) != reduction(b)) return reduction(a) > reduction(b);
    if (shape[a] != shape[b]) return shape[a] > shape[b];
    return a > b;
  });
  return order;
}

int64_t tolerance_rank(const std::vector<double>& eigenvalues, double tol, double norm2, size_t step, size_t d,
                       double& discarded) {
  double tail = 0;
  const double allowance = std::max(0.0, tol * tol * norm2 - discarded) / double(d - step);
  const int64_t rank = modes::truncation_rank(eigenvalues, allowance, static_cast<int64_t>(eigenvalues.size()), &tail);
  discarded += tail;
  return rank;
}

}  // namespace tucker_rules

namespace {

using linalg::Op;
using tucker_rules::Clock;
using tucker_rules::projection_order;
using tucker_rules::seconds_since;
template <typename T> using TuckerModel = tucker_rules::Model<T>;

// Where the tensor is: whole in this process (no comm), or cut along `mode` over the
// processes of `comm`, this one holding rows [lo, hi) of the whole `shape`.
struct Spread {
  dist::Comm* comm = nullptr;
  size_t mode = 0;
  int64_t lo = 0, hi = 0;
  std::vector<int64_t> shape;
};

// Sum `values` over the processes (in double); nothing in one process.
template <typename T> void sum_over(const Spread& spread, std::vector<T>& values) {
  if (spread.comm) dist::sum_in_double(*spread.comm, values);
}

double sum_over(const Spread& spread, double value) {
  if (spread.comm) spread.comm->allreduce_sum(std::span<double>(&value, 1), dist::compute_deadline());
  return value;
}

// Every process's slab of a tensor of `shape` (this one's extent along the cut mode:
// its rows), assembled along the cut mode on every process; `shape` becomes the whole.
template <typename T> std::vector<T> gather_slabs(const Spread& spread, const T* data, std::vector<int64_t>& shape) {
  const size_t m = spread.mode;
  const int64_t count = modes::element_count(shape);
  const auto* bytes = reinterpret_cast<const uint8_t*>(data);
  const std::vector<std::vector<uint8_t>> all =
      spread.comm->allgather({bytes, bytes + static_cast<size_t>(count) * sizeof(T)}, dist::compute_deadline());
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < m; ++k) outer *= shape[k];
  for (size_t k = m + 1; k < shape.size(); ++k) inner *= shape[k];
  shape[m] = spread.shape[m];
  std::vector<T> whole(static_cast<size_t>(outer * shape[m] * inner));
  for (size_t p = 0; p < all.size(); ++p) {
    const auto [lo, hi] = slab_rows(spread.shape[m], static_cast<int>(p), static_cast<int>(all.size()));
    const int64_t run = (hi - lo) * inner;
    if (all[p].size() != static_cast<size_t>(outer * run) * sizeof(T)) throw internal_error("a slab of the wrong size");
    const T* piece = reinterpret_cast<const T*>(all[p].data());
    for (int64_t o = 0; o < outer; ++o) std::copy_n(piece + o * run, run, whole.begin() + (o * shape[m] + lo) * inner);
  }
  return whole;
}

// A factor as this process applies it: its rows of the cut mode, all rows otherwise.
template <typename T>
std::vector<T> factor_rows(const Spread& spread, size_t n, const std::vector<T>& factor, int64_t rank) {
  if (!spread.comm || n != spread.mode) return factor;
  return {factor.begin() + spread.lo * rank, factor.begin() + spread.hi * rank};
}

// Project the current tensor (data, shape) on mode n's factor: the result replaces
// `storage` and shape[n] becomes the factor's rank.
template <typename T>
const T* project_mode(const T* data, std::vector<int64_t>& shape, size_t n, const std::vector<T>& factor,
                      int64_t rank, std::vector<T>& storage) {
  std::vector<int64_t> after = shape;
  after[n] = rank;
  std::vector<T> next(static_cast<size_t>(modes::element_count(after)), T(0));
  // A slab without rows contributes nothing (zeros when the empty mode is projected).
  if (modes::element_count(shape) > 0) modes::mode_product(data, shape, n, factor.data(), Op::kTrans, rank, next.data());
  shape[n] = rank;
  storage = std::move(next);
  return storage.data();
}

// The eigenpairs of mode n's Gram matrix on the smaller side of its unfolding: X_(n)
// X_(n)^T, or for a tall mode X_(n)^T X_(n) (tall_modes.h; the same nonzero
// eigenvalues), which needs the whole tensor here: across processes only the gathered
// cut mode qualifies. Sets norm2 from the Gram's trace when it is negative.
template <typename T> struct ModeSpectrum {
  bool tall = false;
  int64_t side = 0;
  std::vector<double> eigenvalues;  // descending, `side` of them
  std::vector<T> vectors;           // side x side, eigenvector j in column j
};

template <typename T>
ModeSpectrum<T> mode_spectrum(const T* data, const std::vector<int64_t>& shape, size_t n, const Spread& spread,
                              double& norm2) {
  ModeSpectrum<T> s;
  const int64_t count = modes::element_count(shape);
  s.tall = modes::is_tall_mode(shape, n) && (!spread.comm || n == spread.mode);
  s.side = s.tall ? count / shape[n] : shape[n];
  std::vector<T> gram(static_cast<size_t>(s.side * s.side), T(0));
  if (count > 0) {
    if (s.tall)
      modes::unfolding_cogram(data, shape, n, gram.data());
    else
      modes::mode_gram(data, shape, n, gram.data());
  }
  if (n != spread.mode) sum_over(spread, gram);
  if (norm2 < 0) {
    norm2 = modes::trace(s.side, gram.data());
    modes::check_finite_norm(norm2, "tucker");
  }
  s.vectors = modes::leading_eigenvectors(s.side, gram.data(), s.side, &s.eigenvalues);
  return s;
}

// Mode n's factor of rank r (I_n x r, orthonormal columns) from its spectrum.
template <typename T>
std::vector<T> mode_basis(const ModeSpectrum<T>& s, const T* data, const std::vector<int64_t>& shape, size_t n,
                          int64_t r) {
  if (s.tall) return modes::tall_mode_basis(data, shape, n, s.vectors, r);
  std::vector<T> factor(static_cast<size_t>(s.side * r));
  for (int64_t i = 0; i < s.side; ++i) std::copy_n(&s.vectors[i * s.side], r, &factor[i * r]);
  return factor;
}

// ||X||^2 before the first Gram matrix: for float input a pass accumulating in double
// (a float trace is too coarse for the error formula); for double input it is the trace
// of the first Gram matrix, computed anyway (negative: not known yet).
template <typename T> double initial_squared_norm(const DenseView<T>& x, const Spread& spread) {
  if constexpr (std::is_same_v<T, float>) {
    const double norm2 = sum_over(spread, modes::sum_squares(x.data, modes::element_count(x.shape)));
    modes::check_finite_norm(norm2, "tucker");
    return norm2;
  } else {
    return -1;
  }
}

// ST-HOSVD; sets norm2 from the first Gram matrix when it is negative.
template <typename T>
TuckerModel<T> sthosvd(const DenseView<T>& x, const TuckerOptions& options, double tol, double& norm2,
                       const Spread& spread) {
  const Clock::time_point start = Clock::now();
  const size_t d = x.shape.size();
  const std::vector<int64_t>& whole = spread.comm ? spread.shape : x.shape;
  TuckerModel<T> model;
  model.ranks = options.ranks.empty() ? whole : options.ranks;
  model.factors.resize(d);
  double discarded = 0;
  std::vector<int64_t> shape = x.shape;
  const T* current = x.data;
  std::vector<T> storage;
  const std::vector<size_t> order = projection_order(whole, options.ranks);
  if (spread.comm && order.back() != spread.mode) throw internal_error("tucker: the tensor is cut along another mode");
  for (size_t step = 0; step < d; ++step) {
    const size_t n = order[step];
    if (spread.comm && n == spread.mode) {  // the last mode: every process takes the whole
      storage = gather_slabs(spread, current, shape);
      current = storage.data();
    }
    ModeSpectrum<T> spectrum = mode_spectrum(current, shape, n, spread, norm2);
    if (options.ranks.empty())
      model.ranks[n] = tucker_rules::tolerance_rank(spectrum.eigenvalues, tol, norm2, step, d, discarded);
    const int64_t r = model.ranks[n];
    std::vector<T> factor = mode_basis(spectrum, current, shape, n, r);
    current = project_mode(current, shape, n, factor, r, storage);
    model.factors[n] = std::move(factor);
    if (options.on_mode) options.on_mode(static_cast<int>(step + 1), static_cast<int>(d), seconds_since(start));
  }
  model.core.assign(current, current + modes::element_count(shape));
  return model;
}

// X projected on every mode's factor except `skip`, most shrinking mode first; across
// processes, the slabs' projections summed (or, skipping the cut mode, gathered).
template <typename T>
std::vector<T> project_all_but(const DenseView<T>& x, const TuckerModel<T>& model, size_t skip,
                               const std::vector<size_t>& order, std::vector<int64_t>& shape, const Spread& spread) {
  shape = x.shape;
  const T* current = x.data;
  std::vector<T> storage;
  for (size_t n : order)
    if (n != skip)
      current = project_mode(current, shape, n, factor_rows(spread, n, model.factors[n], model.ranks[n]),
                             model.ranks[n], storage);
  if (!spread.comm) return storage;
  if (skip == spread.mode) return gather_slabs(spread, storage.data(), shape);
  sum_over(spread, storage);
  return storage;
}

// Below this squared relative error, ||X||^2 - ||core||^2 has lost most of its digits
// to rounding (each norm is known to about 1e-16 relative): the error of the final
// model is then measured on an explicit reconstruction instead.
constexpr double kSmallSquaredError = 1e-8;

// Rows of mode 0 rebuilt at a time by reconstructed_relative_error: about 8 MiB of
// doubles per slab whatever the tensor's size.
constexpr int64_t kSlabElements = int64_t{1} << 20;

// ||X - X^|| / ||X|| with X^ = core ×_1 U_1 ... ×_d U_d rebuilt densely, a slab of
// mode 0's rows at a time (the slab of rows [lo, hi) takes U_1's rows [lo, hi)), so
// that memory stays a slab rather than twice the tensor.
template <typename T>
double reconstructed_relative_error(const DenseView<T>& x, const TuckerModel<T>& model, double norm2,
                                    const Spread& spread) {
  const int64_t rows = x.shape[0];
  const int64_t inner = rows > 0 ? modes::element_count(x.shape) / rows : 0;
  const int64_t step = std::max<int64_t>(1, kSlabElements / std::max<int64_t>(inner, 1));
  // Mode 0's factor as this process applies it: its rows of the cut mode.
  const int64_t first_row = spread.comm && spread.mode == 0 ? spread.lo : 0;
  double squares = 0;
  for (int64_t lo = 0; lo < rows && inner > 0; lo += step) {
    const int64_t hi = std::min(rows, lo + step);
    std::vector<int64_t> shape = model.ranks;
    std::vector<T> current = model.core;
    for (size_t n = 0; n < shape.size(); ++n) {
      const int64_t extent = n == 0 ? hi - lo : x.shape[n];
      const T* factor = model.factors[n].data();
      if (n == 0) factor += (first_row + lo) * model.ranks[0];
      if (spread.comm && n == spread.mode && n != 0) factor += spread.lo * model.ranks[n];
      std::vector<T> next(static_cast<size_t>(modes::element_count(shape) / shape[n] * extent), T(0));
      if (!next.empty()) modes::mode_product(current.data(), shape, n, factor, Op::kNoTrans, extent, next.data());
      shape[n] = extent;
      current = std::move(next);
    }
    const T* slab = x.data + lo * inner;
    for (size_t i = 0; i < current.size(); ++i) current[i] = slab[i] - current[i];
    squares += modes::sum_squares(current.data(), static_cast<int64_t>(current.size()));
  }
  return std::sqrt(sum_over(spread, squares) / norm2);
}

template <typename T>
double relative_error(double norm2, const std::vector<T>& core) {
  if (norm2 == 0) return 0;
  const double core2 = modes::sum_squares(core.data(), static_cast<int64_t>(core.size()));
  return std::sqrt(std::max(0.0, norm2 - core2) / norm2);
}

// The model's relative error: from the norms, or from a reconstruction when it is too
// small for them (kSmallSquaredError).
template <typename T>
double measured_relative_error(const DenseView<T>& x, const TuckerModel<T>& model, double norm2, const Spread& spread) {
  const double error = relative_error(norm2, model.core);
  if (error * error < kSmallSquaredError && norm2 > 0) return reconstructed_relative_error(x, model, norm2, spread);
  return error;
}

// One HOOI sweep: each mode's factor becomes the leading eigenvectors of the Gram matrix
// of X projected on all other factors; the last mode's projection gives the core.
template <typename T>
void hooi_sweep(const DenseView<T>& x, const std::vector<size_t>& order, TuckerModel<T>& next, const Spread& spread) {
  for (size_t n : order) {
    std::vector<int64_t> shape;
    std::vector<T> partial = project_all_but(x, next, n, order, shape, spread);
    double known_norm2 = 0;  // not needed here
    const ModeSpectrum<T> spectrum = mode_spectrum(partial.data(), shape, n, Spread{}, known_norm2);
    next.factors[n] = mode_basis(spectrum, partial.data(), shape, n, next.ranks[n]);
    if (n == order.back()) project_mode(partial.data(), shape, n, next.factors[n], next.ranks[n], next.core);
  }
}

template <typename T>
TuckerResult tucker_impl(const DenseView<T>& x, const TuckerOptions& options, const Spread& spread = {}) {
  const Clock::time_point start = Clock::now();
  // The mode products split their panels over OpenMP; the calls left are small.
  linalg::SerialBlas serial_blas;
  const std::vector<int64_t>& whole = spread.comm ? spread.shape : x.shape;
  modes::validate_dense_shape(whole, "tucker");
  tucker_rules::validate_options(whole, options);
  double norm2 = initial_squared_norm(x, spread);
  // The rank rule trusts the Gram eigenvalues, known to about eps ||X||^2: for a
  // tolerance near sqrt(eps) the discarded mass can exceed its budget. The measured error
  // decides (sthosvd_within_tol).
  double error = 0;
  TuckerModel<T> model = tucker_rules::sthosvd_within_tol<T>(
      options, whole, [&](const TuckerOptions& o, double tol) { return sthosvd(x, o, tol, norm2, spread); },
      [&](const TuckerModel<T>& m) { return measured_relative_error(x, m, norm2, spread); }, error);
  int iterations = 0;
  if (options.method == TuckerMethod::kHooi) {
    const std::vector<size_t> order = projection_order(whole, model.ranks);
    iterations = tucker_rules::hooi_sweeps(options, norm2, start, model,
                                           [&](TuckerModel<T>& next) { hooi_sweep(x, order, next, spread); });
    error = measured_relative_error(x, model, norm2, spread);
  }
  return tucker_rules::to_result(std::move(model), error, iterations, start);
}

template <typename T>
TuckerResult tucker_spread(const DenseView<T>& mine, const std::vector<int64_t>& shape, dist::Comm& comm,
                           const TuckerOptions& options) {
  Spread spread{&comm, tucker_cut_mode(shape, options), 0, 0, shape};
  if (mine.shape.size() != shape.size()) throw usage_error("tucker: the slab's order differs from the tensor's");
  std::tie(spread.lo, spread.hi) = slab_rows(shape[spread.mode], comm.rank(), comm.size());
  for (size_t n = 0; n < shape.size(); ++n)
    if (mine.shape[n] != (n == spread.mode ? spread.hi - spread.lo : shape[n]))
      throw usage_error("tucker: this process's slab is not its rows of mode " + std::to_string(spread.mode));
  TuckerOptions o = options;
  if (comm.rank() != 0) {
    o.on_iteration = {};
    o.on_mode = {};
  }
  return tucker_impl(mine, o, spread);
}

}  // namespace

namespace tucker_rules {

double core_relative_error(double norm2, const std::vector<double>& core) { return relative_error(norm2, core); }
double core_relative_error(double norm2, const std::vector<float>& core) { return relative_error(norm2, core); }

double measured_relative_error(const DenseView<double>& x, const Model<double>& model, double norm2) {
  return decomp::measured_relative_error(x, model, norm2, Spread{});
}
double measured_relative_error(const DenseView<float>& x, const Model<float>& model, double norm2) {
  return decomp::measured_relative_error(x, model, norm2, Spread{});
}

}  // namespace tucker_rules

TuckerResult tucker(const DenseView<double>& x, const TuckerOptions& options) { return tucker_impl(x, options); }
TuckerResult tucker(const DenseView<float>& x, const TuckerOptions& options) { return tucker_impl(x, options); }

size_t tucker_cut_mode(const std::vector<int64_t>& shape, const TuckerOptions& options) {
  return projection_order(shape, options.ranks).back();
}

std::pair<int64_t, int64_t> slab_rows(int64_t extent, int process, int processes) {
  return {extent * process / processes, extent * (process + 1) / processes};
}

TuckerResult tucker(const DenseView<double>& mine, const std::vector<int64_t>& shape, dist::Comm& comm,
                    const TuckerOptions& options) {
  return tucker_spread(mine, shape, comm, options);
}
TuckerResult tucker(const DenseView<float>& mine, const std::vector<int64_t>& shape, dist::Comm& comm,
                    const TuckerOptions& options) {
  return tucker_spread(mine, shape, comm, options);
}

}  // namespace tk::decomp
