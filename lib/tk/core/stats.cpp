#include "tk/core/stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/core/error.h"

namespace tk {
namespace {

// Elements scanned twice (sums, then squared deviations) while they are in L1, and the
// unit of widening for non-native dtypes.
constexpr uint64_t kBlock = 4096;
// Unit of parallel work and of the merge: chunk results land in fixed slots and are
// merged in order, so the result does not depend on the number of threads. Chunks are
// handed out dynamically so that a thread descheduled on a busy machine does not hold
// back a share of the work.
constexpr uint64_t kChunk = 16 * kBlock;
// Smaller tensors are scanned by the calling thread: waking a team costs more than it
// saves on them, and far more on a machine where threads get descheduled.
constexpr uint64_t kMinParallelChunks = 4;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// How the elements of a dtype reach a scan kernel.
enum class Access { kF32InPlace, kF64InPlace, kViaF32, kViaF64 };

Access access_of(DType dtype) {
  switch (dtype) {
    case DType::kF32: return Access::kF32InPlace;
    case DType::kF64: return Access::kF64InPlace;
    // Wider integers do not fit a float's 24-bit significand.
    case DType::kU32: case DType::kI32: case DType::kU64: case DType::kI64:
      return Access::kViaF64;
    default: return Access::kViaF32;  // every other type is exact in f32
  }
}

bool uses_f32(Access access) { return access == Access::kF32InPlace || access == Access::kViaF32; }

// Elements [first, first + n) of the array `data` of `dtype` as T: a pointer into it
// when T is its own type, else widened into `scratch` (at least n elements).
template <typename T>
const T* elements(DType dtype, const void* data, Access access, uint64_t first, uint64_t n, T* scratch) {
  if constexpr (std::is_same_v<T, float>) {
    if (access == Access::kF32InPlace) return static_cast<const float*>(data) + first;
    convert_to_f32(dtype, data, first, n, scratch);
  } else {
    if (access == Access::kF64InPlace) return static_cast<const double*>(data) + first;
    convert_to_f64(dtype, data, first, n, scratch);
  }
  return scratch;
}

template <typename T>
const T* elements(const Tensor& tensor, Access access, uint64_t first, uint64_t n, T* scratch) {
  return elements<T>(tensor.dtype(), tensor.data(), access, first, n, scratch);
}

// ---- 32-byte vectors (GCC/Clang vector extensions) ----
//
// Written with explicit vectors rather than left to the auto-vectoriser, which without
// -ffast-math will neither reorder the floating-point reductions nor if-convert the
// NaN/Inf selects. Element order of every reduction is fixed, so results are
// reproducible.

template <typename T> struct VecTypes;
template <> struct VecTypes<float> {
  typedef float Vec __attribute__((vector_size(32)));
  typedef int32_t Mask __attribute__((vector_size(32)));  // comparison results: 0 or -1
};
template <> struct VecTypes<double> {
  typedef double Vec __attribute__((vector_size(32)));
  typedef int64_t Mask __attribute__((vector_size(32)));
};
template <typename T> using Vec = typename VecTypes<T>::Vec;
template <typename T> using Mask = typename VecTypes<T>::Mask;
using VecD = Vec<double>;
template <typename T> constexpr uint64_t kLanes = 32 / sizeof(T);
template <typename T> constexpr int kHalves = sizeof(double) / sizeof(T);  // VecD per Vec<T>

template <typename T> Vec<T> splat(T value) { return Vec<T>{} + value; }

template <typename T>
Vec<T> load(const T* x) {
  Vec<T> v;
  std::memcpy(&v, x, sizeof(v));
  return v;
}

// The last `count` < kLanes elements; the lanes past them are NaN.
template <typename T>
Vec<T> load_tail(const T* x, uint64_t count) {
  Vec<T> v = splat<T>(std::numeric_limits<T>::quiet_NaN());
  for (uint64_t i = 0; i < count; ++i) v[i] = x[i];
  return v;
}

// Lanes of NaN padding after n elements.
template <typename T> uint64_t padding(uint64_t n) { return (kLanes<T> - n % kLanes<T>) % kLanes<T>; }

// Call body(v) for each group of kLanes elements of x[0, n), the last one padded.
template <typename T, typename Body>
[[gnu::always_inline]] inline void for_each_group(const T* x, uint64_t n, Body&& body) {
  const uint64_t full = n / kLanes<T>;
  for (uint64_t g = 0; g < full; ++g) body(load<T>(x + g * kLanes<T>));
  if (n % kLanes<T>) body(load_tail<T>(x + full * kLanes<T>, n % kLanes<T>));
}

// Same over the pairs (a[i], b[i]).
template <typename T, typename Body>
[[gnu::always_inline]] inline void for_each_group_pair(const T* a, const T* b, uint64_t n, Body&& body) {
  const uint64_t full = n / kLanes<T>;
  for (uint64_t g = 0; g < full; ++g) body(load<T>(a + g * kLanes<T>), load<T>(b + g * kLanes<T>));
  if (n % kLanes<T>)
    body(load_tail<T>(a + full * kLanes<T>, n % kLanes<T>), load_tail<T>(b + full * kLanes<T>, n % kLanes<T>));
}

template <typename V> V vabs(V v) { return v < 0 ? -v : v; }

// Half `h` of a float vector (or the whole double vector) as doubles.
template <typename T>
VecD widen_half(Vec<T> v, int h) {
  if constexpr (sizeof(T) == 8) {
    return v;
  } else {
    return h == 0 ? __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), VecD)
                  : __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), VecD);
  }
}

// Sum over the finite lanes of v - shift, in double.
template <typename T>
VecD widened_sum(Vec<T> v, VecD shift) {
  VecD s = {};
  for (int h = 0; h < kHalves<T>; ++h) {
    VecD x = widen_half<T>(v, h);
    s += (x - x) == 0 ? x - shift : VecD{};
  }
  return s;
}

// Sum over the finite lanes of (v - shift - mean)^2, in double.
template <typename T>
VecD widened_m2(Vec<T> v, VecD shift, VecD mean) {
  VecD s = {};
  for (int h = 0; h < kHalves<T>; ++h) {
    VecD x = widen_half<T>(v, h), d = (x - shift) - mean;
    s += (x - x) == 0 ? d * d : VecD{};
  }
  return s;
}

template <typename V> auto lane_sum(V v) {
  auto s = v[0];
  for (size_t i = 1; i < sizeof(V) / sizeof(v[0]); ++i) s += v[i];
  if constexpr (std::is_integral_v<decltype(s)>) return static_cast<uint64_t>(s);
  else return static_cast<double>(s);
}
template <typename V> double lane_min(V v) {
  auto m = v[0];
  for (size_t i = 1; i < sizeof(V) / sizeof(v[0]); ++i) m = v[i] < m ? v[i] : m;
  return m;
}
template <typename V> double lane_max(V v) {
  auto m = v[0];
  for (size_t i = 1; i < sizeof(V) / sizeof(v[0]); ++i) m = v[i] > m ? v[i] : m;
  return m;
}

// ---- statistics ----

using detail::StatsPartial;

// One block of at most kBlock elements in two passes over 32-byte vectors: counts,
// extrema and the sum, then squared deviations from the block mean while the block is
// still in L1. (v - v == 0) is true exactly for finite v; non-finite lanes are masked
// out by selects, so the loops have no branches.
template <typename T>
[[gnu::noinline]] StatsPartial stats_block(const T* x, uint64_t n, double shift_value) {
  using V = Vec<T>;
  using M = Mask<T>;
  constexpr T kTInf = std::numeric_limits<T>::infinity();
  const VecD shift = splat<double>(shift_value);
  M finite = {}, nans = {}, zeros = {};
  V mn = splat<T>(kTInf), mx = splat<T>(-kTInf);
  VecD sum = {};
  for_each_group(x, n, [&](V v) {
    M is_finite = (v - v) == 0;
    finite -= is_finite;  // a true mask lane is -1
    nans -= v != v;
    zeros -= v == 0;
    V lo = is_finite ? v : kTInf;
    V hi = is_finite ? v : -kTInf;
    mn = lo < mn ? lo : mn;
    mx = hi > mx ? hi : mx;
    sum += widened_sum<T>(v, shift);
  });
  StatsPartial p;
  p.finite = lane_sum(finite);
  p.zeros = lane_sum(zeros);
  p.nans = lane_sum(nans) - padding<T>(n);
  p.infs = n - p.finite - p.nans;
  if (p.finite == 0) return p;
  p.min = lane_min(mn), p.max = lane_max(mx);
  p.absmax = std::max(-p.min, p.max);
  p.mean = lane_sum(sum) / static_cast<double>(p.finite);
  const VecD mean = splat<double>(p.mean);
  VecD m2 = {};
  for_each_group(x, n, [&](V v) { m2 += widened_m2<T>(v, shift, mean); });
  p.m2 = lane_sum(m2);
  return p;
}

// The first finite value among the first min(kBlock, n) elements of `data`, else 0.
template <typename T>
double stats_shift(DType dtype, const void* data, uint64_t n, Access access) {
  const uint64_t len = std::min(kBlock, n);
  std::vector<T> scratch(len);
  const T* x = elements<T>(dtype, data, access, 0, len, scratch.data());
  for (uint64_t i = 0; i < len; ++i)
    if (std::isfinite(x[i])) return static_cast<double>(x[i]);
  return 0;
}

// Statistics of the n elements at `data`, means relative to `shift`, merged into `total`
// a chunk at a time in order (so that a tensor passed in pieces of whole chunks gives
// the same result as passed whole).
template <typename T>
void stats_chunked(DType dtype, const void* data, uint64_t n, Access access, double shift, StatsPartial& total) {
  const uint64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<StatsPartial> slots(chunks);
#pragma omp parallel if (chunks >= kMinParallelChunks)
  {
    std::vector<T> scratch(access == Access::kViaF32 || access == Access::kViaF64 ? kBlock : 0);
#pragma omp for schedule(dynamic, 1)
    for (uint64_t c = 0; c < chunks; ++c) {
      const uint64_t end = std::min(n, (c + 1) * kChunk);
      StatsPartial acc;
      for (uint64_t first = c * kChunk; first < end; first += kBlock) {
        const uint64_t len = std::min(kBlock, end - first);
        acc.merge(stats_block(elements<T>(dtype, data, access, first, len, scratch.data()), len, shift));
      }
      slots[c] = acc;
    }
  }
  for (const StatsPartial& s : slots) total.merge(s);
}

// ---- comparison ----

struct DiffPartial {
  uint64_t mismatches = 0, nan_mismatches = 0;
  double max_abs = 0, norm2 = 0, err2 = 0;

  void merge(const DiffPartial& o) {
    mismatches += o.mismatches;
    nan_mismatches += o.nan_mismatches;
    max_abs = std::max(max_abs, o.max_abs);
    norm2 += o.norm2;
    err2 += o.err2;
  }
};

// One block of at most kBlock element pairs; branch-free like stats_block. NaN padding
// of the last group makes both sides NaN there, which compares equal and adds nothing.
template <typename T>
[[gnu::noinline]] DiffPartial diff_block(const T* a, const T* b, uint64_t n) {
  using V = Vec<T>;
  using M = Mask<T>;
  M mismatches = {}, nan_mismatches = {};
  VecD max_abs = {}, norm2 = {}, err2 = {};
  for_each_group_pair(a, b, n, [&](V x, V y) {
    M both_nan = (x != x) & (y != y);
    M both_finite = ((x - x) == 0) & ((y - y) == 0);
    M differ = (x != y) & ~both_nan;
    mismatches -= differ;
    nan_mismatches -= differ & ~both_finite;
    V xs = both_finite ? x : V{}, ys = both_finite ? y : V{};
    for (int h = 0; h < kHalves<T>; ++h) {
      VecD dx = widen_half<T>(xs, h), d = dx - widen_half<T>(ys, h);
      VecD mag = vabs(d);
      max_abs = mag > max_abs ? mag : max_abs;
      norm2 += dx * dx;
      err2 += d * d;
    }
  });
  DiffPartial p;
  p.mismatches = lane_sum(mismatches);
  p.nan_mismatches = lane_sum(nan_mismatches);
  p.max_abs = lane_max(max_abs), p.norm2 = lane_sum(norm2), p.err2 = lane_sum(err2);
  return p;
}

template <typename T>
DiffPartial diff_chunked(const Tensor& a, Access access_a, const Tensor& b, Access access_b) {
  const uint64_t n = a.numel();
  const uint64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<DiffPartial> slots(chunks);
#pragma omp parallel if (chunks >= kMinParallelChunks)
  {
    std::vector<T> scratch_a(kBlock), scratch_b(kBlock);
#pragma omp for schedule(dynamic, 1)
    for (uint64_t c = 0; c < chunks; ++c) {
      const uint64_t end = std::min(n, (c + 1) * kChunk);
      DiffPartial acc;
      for (uint64_t first = c * kChunk; first < end; first += kBlock) {
        const uint64_t len = std::min(kBlock, end - first);
        acc.merge(diff_block(elements<T>(a, access_a, first, len, scratch_a.data()),
                             elements<T>(b, access_b, first, len, scratch_b.data()), len));
      }
      slots[c] = acc;
    }
  }
  DiffPartial total;
  for (const DiffPartial& s : slots) total.merge(s);
  return total;
}

}  // namespace

namespace detail {

void StatsPartial::merge(const StatsPartial& o) {
  zeros += o.zeros;
  nans += o.nans;
  infs += o.infs;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  absmax = std::max(absmax, o.absmax);
  if (o.finite == 0) return;
  if (finite == 0) {
    finite = o.finite, mean = o.mean, m2 = o.m2;
    return;
  }
  double na = static_cast<double>(finite), nb = static_cast<double>(o.finite);
  double n = na + nb;
  double delta = o.mean - mean;
  mean += delta * (nb / n);
  m2 += o.m2 + delta * delta * (na * nb / n);
  finite += o.finite;
}

}  // namespace detail

TensorStats tensor_stats(const Tensor& tensor) {
  StatsStream stream(tensor.dtype(), tensor.numel());
  stream.add(tensor.data(), tensor.numel());
  return stream.finish();
}

StatsStream::StatsStream(DType dtype, uint64_t numel) : dtype_(dtype), numel_(numel) {}

uint64_t StatsStream::piece_elements() { return kChunk; }

void StatsStream::add(const void* data, uint64_t count) {
  if (count > numel_ - seen_ || (seen_ % kChunk != 0 && count > 0))
    throw internal_error("statistics fed a piece of the wrong size");
  if (count == 0) return;
  const Access access = access_of(dtype_);
  if (uses_f32(access)) {
    if (seen_ == 0) shift_ = stats_shift<float>(dtype_, data, count, access);
    stats_chunked<float>(dtype_, data, count, access, shift_, total_);
  } else {
    if (seen_ == 0) shift_ = stats_shift<double>(dtype_, data, count, access);
    stats_chunked<double>(dtype_, data, count, access, shift_, total_);
  }
  seen_ += count;
}

TensorStats StatsStream::finish() const {
  if (seen_ != numel_) throw internal_error("statistics fed fewer elements than declared");
  const StatsPartial& p = total_;
  TensorStats out;
  out.count = numel_;
  out.finite = p.finite;
  out.zeros = p.zeros;
  out.nans = p.nans;
  out.infs = p.infs;
  if (p.finite == 0) {
    out.min = out.max = out.mean = out.std = out.absmax = kNaN;
    return out;
  }
  out.min = p.min;
  out.max = p.max;
  out.absmax = p.absmax;
  out.mean = shift_ + p.mean;
  out.std = std::sqrt(p.m2 / static_cast<double>(p.finite));
  return out;
}

TensorDiff tensor_diff(const Tensor& a, const Tensor& b) {
  TensorDiff out;
  out.same_dtype = a.dtype() == b.dtype();
  out.same_shape = a.shape() == b.shape();
  if (!out.same_shape) return out;
  out.count = a.numel();
  out.bit_equal = out.same_dtype && a.nbytes() == b.nbytes() &&
                  (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
  if (out.bit_equal) {  // equal values everywhere (NaN == NaN): nothing to scan
    out.sqnr_db = kInf;
    return out;
  }
  Access access_a = access_of(a.dtype()), access_b = access_of(b.dtype());
  DiffPartial p = uses_f32(access_a) && uses_f32(access_b)
                      ? diff_chunked<float>(a, access_a, b, access_b)
                      : diff_chunked<double>(a, access_a, b, access_b);
  out.mismatches = p.mismatches;
  out.nan_mismatches = p.nan_mismatches;
  out.max_abs_error = p.max_abs;
  if (p.err2 == 0) {
    out.rel_error = 0;
    out.sqnr_db = kInf;
  } else {
    out.rel_error = p.norm2 == 0 ? kInf : std::sqrt(p.err2 / p.norm2);
    out.sqnr_db = 10.0 * std::log10(p.norm2 / p.err2);  // -inf when ||a|| = 0
  }
  return out;
}

}  // namespace tk
