// tensor_stats / tensor_diff against a plain scalar reference (one element at a time,
// long double sums, two-pass variance) on every dtype, with NaN, Inf and zeros mixed in.
#include "tk/core/stats.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/core/error.h"

namespace tk {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Relative tolerances of the fast path against the long double reference.
constexpr double kMeanTol = 1e-12;
constexpr double kStdTol = 1e-10;
// Longer than one parallel chunk (65536 elements) and not a multiple of any block size.
constexpr uint64_t kLongCount = 3 * 65536 + 1236;

// Element `i` of a packed array as a double, decoded one element at a time with the
// scalar conversions (C64: the real part).
double ref_element(DType dtype, const uint8_t* p, uint64_t i) {
  auto load = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (dtype) {
    case DType::kBool: return p[i] ? 1.0 : 0.0;
    case DType::kU8: return p[i];
    case DType::kI8: return static_cast<int8_t>(p[i]);
    case DType::kU16: return load(uint16_t{});
    case DType::kI16: return load(int16_t{});
    case DType::kU32: return load(uint32_t{});
    case DType::kI32: return load(int32_t{});
    case DType::kU64: return static_cast<double>(load(uint64_t{}));
    case DType::kI64: return static_cast<double>(load(int64_t{}));
    case DType::kF16: return f16_to_f32(load(uint16_t{}));
    case DType::kBF16: return bf16_to_f32(load(uint16_t{}));
    case DType::kF32: return load(float{});
    case DType::kF64: return load(double{});
    case DType::kC64: {
      float re;
      std::memcpy(&re, p + i * 8, 4);
      return re;
    }
    case DType::kF8E4M3: case DType::kF8E5M2: case DType::kF8E8M0:
    case DType::kF8E4M3FNUZ: case DType::kF8E5M2FNUZ:
      return minifloat_to_f32(dtype, p[i]);
    case DType::kF4: case DType::kF6E2M3: case DType::kF6E3M2: {
      const uint64_t w = static_cast<uint64_t>(dtype_bits(dtype));
      uint32_t code = 0;
      for (uint64_t b = 0; b < w; ++b) {
        uint64_t bit = i * w + b;
        code |= ((p[bit / 8] >> (bit % 8)) & 1u) << b;
      }
      return minifloat_to_f32(dtype, static_cast<uint8_t>(code));
    }
    default: ADD_FAILURE() << "unhandled dtype"; return 0;
  }
}

std::vector<double> ref_values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (uint64_t i = 0; i < t.numel(); ++i) v[i] = ref_element(t.dtype(), t.data(), i);
  return v;
}

TensorStats ref_stats(const std::vector<double>& v) {
  TensorStats s;
  s.count = v.size();
  long double sum = 0;
  double mn = kInf, mx = -kInf, amax = 0;
  for (double x : v) {
    if (std::isnan(x)) { ++s.nans; continue; }
    if (std::isinf(x)) { ++s.infs; continue; }
    ++s.finite;
    if (x == 0) ++s.zeros;
    sum += x;
    mn = std::min(mn, x), mx = std::max(mx, x), amax = std::max(amax, std::fabs(x));
  }
  if (s.finite == 0) {
    s.min = s.max = s.mean = s.std = s.absmax = kNaN;
    return s;
  }
  long double mean = sum / s.finite, m2 = 0;
  for (double x : v)
    if (std::isfinite(x)) m2 += (x - mean) * (x - mean);
  s.min = mn, s.max = mx, s.absmax = amax;
  s.mean = static_cast<double>(mean);
  s.std = static_cast<double>(std::sqrt(m2 / s.finite));
  return s;
}

TensorDiff ref_diff(const std::vector<double>& a, const std::vector<double>& b) {
  TensorDiff d;
  d.count = a.size();
  long double norm2 = 0, err2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double x = a[i], y = b[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::isfinite(x) && std::isfinite(y)) {
      if (x != y) ++d.mismatches;
      d.max_abs_error = std::max(d.max_abs_error, std::fabs(x - y));
      norm2 += static_cast<long double>(x) * x;
      err2 += static_cast<long double>(x - y) * (x - y);
    } else if (!(x == y)) {
      ++d.mismatches, ++d.nan_mismatches;
    }
  }
  d.rel_error = err2 == 0 ? 0.0 : static_cast<double>(std::sqrt(err2 / norm2));
  d.sqnr_db = err2 == 0 ? kInf : static_cast<double>(10 * std::log10(norm2 / err2));
  return d;
}

void expect_near_rel(double got, double want, double tol, const char* what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": " << got;
  } else if (std::isinf(want) || want == 0) {
    EXPECT_EQ(got, want) << what;
  } else {
    EXPECT_NEAR(got, want, tol * std::fabs(want)) << what;
  }
}

void expect_stats(const TensorStats& got, const TensorStats& want) {
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.finite, want.finite);
  EXPECT_EQ(got.zeros, want.zeros);
  EXPECT_EQ(got.nans, want.nans);
  EXPECT_EQ(got.infs, want.infs);
  expect_near_rel(got.min, want.min, 0, "min");  // exact
  expect_near_rel(got.max, want.max, 0, "max");
  expect_near_rel(got.absmax, want.absmax, 0, "absmax");
  expect_near_rel(got.mean, want.mean, kMeanTol, "mean");
  expect_near_rel(got.std, want.std, kStdTol, "std");
}

// Random bit patterns, except for F64, whose random patterns reach 1e308 where sums of
// squares overflow in any double accumulation: Gaussian values with specials instead.
Tensor random_tensor(DType dtype, uint64_t count, uint64_t seed);

Tensor random_bytes_tensor(DType dtype, uint64_t count, uint64_t seed) {
  Tensor t = Tensor::empty(dtype, {static_cast<int64_t>(count)});
  std::mt19937_64 rng(seed);
  uint8_t* p = t.mutable_data();
  for (uint64_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(rng());
  return t;
}

template <typename T>
std::vector<T> noisy_values(uint64_t count, double mean, double stddev, uint64_t seed);

template <typename T>
Tensor tensor_of(DType dtype, const std::vector<T>& values, Shape shape = {}) {
  if (shape.empty() && values.size() != 1) shape = {static_cast<int64_t>(values.size())};
  Tensor t = Tensor::empty(dtype, shape);
  if (!values.empty()) std::memcpy(t.mutable_data(), values.data(), values.size() * sizeof(T));
  return t;
}

// Gaussian data with NaN, +-Inf and zeros sprinkled in.
template <typename T>
std::vector<T> noisy_values(uint64_t count, double mean, double stddev, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(mean, stddev);
  std::uniform_int_distribution<int> pick(0, 99);
  std::vector<T> v(count);
  for (auto& x : v) {
    int k = pick(rng);
    x = k == 0 ? std::numeric_limits<T>::quiet_NaN()
        : k == 1 ? std::numeric_limits<T>::infinity()
        : k == 2 ? -std::numeric_limits<T>::infinity()
        : k < 6 ? T(0)
                : static_cast<T>(normal(rng));
  }
  return v;
}

Tensor random_tensor(DType dtype, uint64_t count, uint64_t seed) {
  if (dtype == DType::kF64) return tensor_of(dtype, noisy_values<double>(count, 1.0, 10.0, seed));
  return random_bytes_tensor(dtype, count, seed);
}

TEST(TensorStats, F32MatchesReferenceWithSpecialValues) {
  Tensor t = tensor_of(DType::kF32, noisy_values<float>(kLongCount, 0.5, 2.0, 1));
  TensorStats s = tensor_stats(t);
  expect_stats(s, ref_stats(ref_values(t)));
  EXPECT_GT(s.nans, 0u);
  EXPECT_GT(s.infs, 0u);
  EXPECT_GT(s.zeros, 0u);
}

TEST(TensorStats, F64MatchesReferenceWithSpecialValues) {
  Tensor t = tensor_of(DType::kF64, noisy_values<double>(kLongCount, -3.0, 0.25, 2));
  expect_stats(tensor_stats(t), ref_stats(ref_values(t)));
}

// sum(x^2) - n mean^2 would lose every digit here; per-block two-pass plus Chan's merge
// must not.
TEST(TensorStats, LargeMeanSmallVarianceF64) {
  std::vector<double> v(kLongCount);
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(1e9, 1.0);
  for (auto& x : v) x = normal(rng);
  TensorStats s = tensor_stats(tensor_of(DType::kF64, v));
  TensorStats want = ref_stats(v);
  EXPECT_NEAR(s.mean, want.mean, 1e-15 * want.mean);
  EXPECT_NEAR(s.std, want.std, kStdTol * want.std);
  EXPECT_NEAR(s.std, 1.0, 0.01);
}

TEST(TensorStats, LargeMeanSmallVarianceF32) {
  std::vector<float> v(kLongCount);
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<float> uniform(1e4f - 0.5f, 1e4f + 0.5f);
  for (auto& x : v) x = uniform(rng);
  Tensor t = tensor_of(DType::kF32, v);
  TensorStats s = tensor_stats(t);
  TensorStats want = ref_stats(ref_values(t));
  EXPECT_NEAR(s.std, want.std, 1e-9 * want.std);
  EXPECT_NEAR(s.std, 1.0 / std::sqrt(12.0), 0.01);
}

TEST(TensorStats, EmptyTensorHasNoFiniteValues) {
  TensorStats s = tensor_stats(Tensor::empty(DType::kF32, {0, 3}));
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.finite, 0u);
  EXPECT_TRUE(std::isnan(s.min) && std::isnan(s.max) && std::isnan(s.mean) &&
              std::isnan(s.std) && std::isnan(s.absmax));
}

TEST(TensorStats, ZeroRankTensorIsOneElement) {
  TensorStats s = tensor_stats(tensor_of(DType::kBF16, std::vector<uint16_t>{f32_to_bf16(-2.5f)}, {}));
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.finite, 1u);
  EXPECT_EQ(s.min, -2.5);
  EXPECT_EQ(s.max, -2.5);
  EXPECT_EQ(s.absmax, 2.5);
  EXPECT_EQ(s.mean, -2.5);
  EXPECT_EQ(s.std, 0.0);
}

TEST(TensorStats, OnlyNonFiniteValues) {
  float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  TensorStats s = tensor_stats(tensor_of(DType::kF32, std::vector<float>{nan, inf, -inf, nan}));
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.nans, 2u);
  EXPECT_EQ(s.infs, 2u);
  EXPECT_EQ(s.finite, 0u);
  EXPECT_TRUE(std::isnan(s.mean) && std::isnan(s.min) && std::isnan(s.absmax));
}

TEST(TensorStats, NegativeZeroCountsAsZero) {
  TensorStats s = tensor_stats(tensor_of(DType::kF32, std::vector<float>{-0.0f, 0.0f, 1.0f}));
  EXPECT_EQ(s.zeros, 2u);
  EXPECT_EQ(s.min, 0.0);
  EXPECT_EQ(s.max, 1.0);
}

// Random bit patterns: every code of the small float types, NaNs and Infs included.
TEST(TensorStats, EveryDTypeMatchesReference) {
  for (int d = 0; d < static_cast<int>(DType::kCount); ++d) {
    DType dtype = static_cast<DType>(d);
    SCOPED_TRACE(dtype_name(dtype));
    Tensor t = random_tensor(dtype, kLongCount, 100 + d);  // kLongCount % 4 == 0
    expect_stats(tensor_stats(t), ref_stats(ref_values(t)));
  }
}

TEST(TensorStats, ResultDoesNotDependOnThreadCount) {
  Tensor t = tensor_of(DType::kF32, noisy_values<float>(20 * 65536 + 7, 1.0, 3.0, 5));
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  TensorStats one = tensor_stats(t);
  omp_set_num_threads(3);
  TensorStats three = tensor_stats(t);
  omp_set_num_threads(saved);
  EXPECT_EQ(std::memcmp(&one.mean, &three.mean, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&one.std, &three.std, sizeof(double)), 0);
  EXPECT_EQ(one.nans, three.nans);
}

// A tensor fed in pieces of whole chunks gives the bits tensor_stats gives for it whole,
// for every dtype (sub-byte ones included: a piece starts on a byte).
TEST(StatsStream, PiecesGiveTheSameBitsAsTheWhole) {
  const uint64_t piece = StatsStream::piece_elements();
  for (int d = 0; d < static_cast<int>(DType::kCount); ++d) {
    DType dtype = static_cast<DType>(d);
    SCOPED_TRACE(dtype_name(dtype));
    Tensor t = random_tensor(dtype, 3 * piece + 12, 200 + d);
    const TensorStats whole = tensor_stats(t);
    StatsStream stream(dtype, t.numel());
    for (uint64_t first = 0; first < t.numel(); first += piece) {
      const uint64_t n = std::min(piece, t.numel() - first);
      stream.add(t.data() + dtype_storage_bytes(dtype, first), n);
    }
    const TensorStats got = stream.finish();
    EXPECT_EQ(std::memcmp(&got.mean, &whole.mean, sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(&got.std, &whole.std, sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(&got.min, &whole.min, sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(&got.max, &whole.max, sizeof(double)), 0);
    EXPECT_EQ(got.finite, whole.finite);
    EXPECT_EQ(got.nans, whole.nans);
    EXPECT_EQ(got.zeros, whole.zeros);
  }
}

TEST(StatsStream, RefusesPiecesOfTheWrongSize) {
  StatsStream stream(DType::kF32, 3 * StatsStream::piece_elements());
  std::vector<float> x(StatsStream::piece_elements(), 1.0f);
  stream.add(x.data(), 5);  // a short piece must be the last
  EXPECT_THROW(stream.add(x.data(), 5), Error);
  EXPECT_THROW(stream.finish(), Error);
}

TEST(TensorDiff, DifferentShapesComputeNothing) {
  TensorDiff d = tensor_diff(Tensor::zeros(DType::kF32, {2, 3}), Tensor::zeros(DType::kF32, {3, 2}));
  EXPECT_TRUE(d.same_dtype);
  EXPECT_FALSE(d.same_shape);
  EXPECT_FALSE(d.bit_equal);
  EXPECT_EQ(d.count, 0u);
}

TEST(TensorDiff, BitEqualTensors) {
  Tensor a = tensor_of(DType::kF32, noisy_values<float>(kLongCount, 0, 1, 6));
  TensorDiff d = tensor_diff(a, a.clone());
  EXPECT_TRUE(d.same_dtype && d.same_shape && d.bit_equal);
  EXPECT_EQ(d.count, kLongCount);
  EXPECT_EQ(d.mismatches, 0u);
  EXPECT_EQ(d.nan_mismatches, 0u);
  EXPECT_EQ(d.max_abs_error, 0.0);
  EXPECT_EQ(d.rel_error, 0.0);
  EXPECT_EQ(d.sqnr_db, kInf);
}

TEST(TensorDiff, EqualValuesWithDifferentBits) {
  float qnan = std::nanf(""), other_nan;
  uint32_t bits = 0x7fc00123u;
  std::memcpy(&other_nan, &bits, 4);
  TensorDiff d = tensor_diff(tensor_of(DType::kF32, std::vector<float>{0.0f, qnan, 2.0f}),
                             tensor_of(DType::kF32, std::vector<float>{-0.0f, other_nan, 2.0f}));
  EXPECT_FALSE(d.bit_equal);
  EXPECT_EQ(d.mismatches, 0u);
  EXPECT_EQ(d.nan_mismatches, 0u);
  EXPECT_EQ(d.rel_error, 0.0);
  EXPECT_EQ(d.sqnr_db, kInf);
}

TEST(TensorDiff, NonFiniteMismatches) {
  float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  TensorDiff d = tensor_diff(tensor_of(DType::kF32, std::vector<float>{nan, 1, inf, inf, 3, -inf}),
                             tensor_of(DType::kF32, std::vector<float>{1, nan, -inf, inf, 5, 0}));
  EXPECT_EQ(d.mismatches, 5u);
  EXPECT_EQ(d.nan_mismatches, 4u);
  EXPECT_EQ(d.max_abs_error, 2.0);  // only the finite pair 3 vs 5
  EXPECT_DOUBLE_EQ(d.rel_error, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(d.sqnr_db, 10 * std::log10(9.0 / 4.0));
}

TEST(TensorDiff, ZeroReferenceGivesInfiniteRelativeError) {
  TensorDiff d = tensor_diff(tensor_of(DType::kF64, std::vector<double>{0, 0}),
                             tensor_of(DType::kF64, std::vector<double>{0, 1e-3}));
  EXPECT_EQ(d.mismatches, 1u);
  EXPECT_EQ(d.rel_error, kInf);
  EXPECT_EQ(d.sqnr_db, -kInf);
}

void expect_diff(const TensorDiff& got, const TensorDiff& want) {
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.mismatches, want.mismatches);
  EXPECT_EQ(got.nan_mismatches, want.nan_mismatches);
  EXPECT_EQ(got.max_abs_error, want.max_abs_error);
  expect_near_rel(got.rel_error, want.rel_error, 1e-10, "rel_error");
  expect_near_rel(got.sqnr_db, want.sqnr_db, 1e-10, "sqnr_db");
}

TEST(TensorDiff, F32MatchesReference) {
  std::vector<float> a = noisy_values<float>(kLongCount, 0.0, 1.0, 7);
  std::vector<float> b = a;
  std::mt19937_64 rng(8);
  std::normal_distribution<float> noise(0.0f, 1e-3f);
  for (size_t i = 0; i < b.size(); ++i) {
    if (i % 3 == 0) b[i] += noise(rng);
    if (i % 1001 == 0) b[i] = std::nanf("");
    if (i % 1003 == 0) b[i] = -std::numeric_limits<float>::infinity();
  }
  Tensor ta = tensor_of(DType::kF32, a), tb = tensor_of(DType::kF32, b);
  TensorDiff d = tensor_diff(ta, tb);
  EXPECT_TRUE(d.same_dtype && !d.bit_equal);
  expect_diff(d, ref_diff(ref_values(ta), ref_values(tb)));
  EXPECT_GT(d.nan_mismatches, 0u);
}

TEST(TensorDiff, MixedDTypesCompareByValue) {
  std::vector<float> a = noisy_values<float>(kLongCount, 0.0, 1.0, 9);
  std::vector<uint16_t> b(a.size());
  for (size_t i = 0; i < a.size(); ++i) b[i] = f32_to_bf16(a[i]);
  Tensor ta = tensor_of(DType::kF32, a), tb = tensor_of(DType::kBF16, b);
  TensorDiff d = tensor_diff(ta, tb);
  EXPECT_FALSE(d.same_dtype);
  EXPECT_TRUE(d.same_shape);
  expect_diff(d, ref_diff(ref_values(ta), ref_values(tb)));
  EXPECT_GT(d.sqnr_db, 40.0);  // bf16 rounding: about 8 bits of precision
  EXPECT_LT(d.sqnr_db, 60.0);

  std::vector<int32_t> ints = {1 << 30, -7, 0, 123456789};
  std::vector<double> doubles = {1 << 30, -7.5, 0, 123456789};
  TensorDiff e = tensor_diff(tensor_of(DType::kI32, ints), tensor_of(DType::kF64, doubles));
  EXPECT_EQ(e.mismatches, 1u);
  EXPECT_EQ(e.max_abs_error, 0.5);
}

// Every dtype against its values held as F64 (the double path) and, where f32 holds them
// exactly, as F32 (the float path): equal values everywhere, NaN == NaN.
TEST(TensorDiff, EveryDTypeAgainstItsWidenedValues) {
  for (int d = 0; d < static_cast<int>(DType::kCount); ++d) {
    DType dtype = static_cast<DType>(d);
    SCOPED_TRACE(dtype_name(dtype));
    Tensor t = random_tensor(dtype, kLongCount, 200 + d);
    std::vector<double> values = ref_values(t);
    TensorDiff as_f64 = tensor_diff(t, tensor_of(DType::kF64, values));
    EXPECT_EQ(as_f64.mismatches, 0u);
    EXPECT_EQ(as_f64.nan_mismatches, 0u);
    std::vector<double> perturbed = values;
    double& v = perturbed[kLongCount / 2];
    v = std::isfinite(v) ? v + std::fabs(v) * 1e-3 + 1 : 0.5;
    expect_diff(tensor_diff(t, tensor_of(DType::kF64, perturbed)), ref_diff(values, perturbed));
    bool f32_exact = dtype != DType::kU32 && dtype != DType::kI32 && dtype != DType::kU64 &&
                     dtype != DType::kI64 && dtype != DType::kF64;
    if (f32_exact) {
      std::vector<float> floats(values.begin(), values.end());
      EXPECT_EQ(tensor_diff(tensor_of(DType::kF32, floats), t).mismatches, 0u);
    }
  }
}

}  // namespace
}  // namespace tk
