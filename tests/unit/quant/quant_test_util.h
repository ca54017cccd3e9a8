// Helpers shared by the quantizers' unit tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "tk/quant/quant_internal.h"
#include "tk/quant/scheme.h"

namespace tk::test {

// x quantized under `s` and restored.
inline std::vector<float> round_trip(const quant::Scheme& s, const std::vector<float>& x, const Shape& shape,
                                     const quant::QuantOptions& o = {}) {
  std::vector<float> y(x.size());
  s.dequantize(s.quantize(x.data(), shape, o), y.data());
  return y;
}

inline double sqnr(const std::vector<float>& x, const std::vector<float>& y, int64_t cols) {
  return quant::measure_error(x.data(), y.data(), static_cast<int64_t>(x.size()), cols, nullptr).sqnr_db;
}

// Heavy-tailed values (Student's t, 4 degrees of freedom, times 0.02), as trained
// weights often are.
inline std::vector<float> heavy_tailed(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::student_t_distribution<float> t(4.0f);
  std::vector<float> x(n);
  for (float& v : x) v = t(rng) * 0.02f;
  return x;
}

}  // namespace tk::test
