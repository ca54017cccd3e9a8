#include "tk/bench/synthetic.h"

#include <cmath>
#include <numbers>

#include "tk/core/error.h"

namespace tk::bench {
namespace {

// splitmix64: a small generator with a fixed, documented output sequence.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): never 0, so log() below is finite.
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal by Box-Muller (one of the pair; simplicity over speed).
  double normal() {
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * std::numbers::pi * uniform());
  }

 private:
  uint64_t state_;
};

void fill_gaussian(float* out, uint64_t n, Rng& rng) {
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<float>(rng.normal());
}

void fill_student_t(float* out, uint64_t n, Rng& rng) {
  constexpr int kNu = 3;
  for (uint64_t i = 0; i < n; ++i) {
    double z = rng.normal(), chi2 = 0;
    for (int k = 0; k < kNu; ++k) {
      double g = rng.normal();
      chi2 += g * g;
    }
    out[i] = static_cast<float>(z / std::sqrt(chi2 / kNu));
  }
}

// Sum of rank-one terms a_1 o a_2 o ... o a_d with Gaussian factors, then Gaussian noise
// scaled to kLowRankNoise of the signal's norm.
void fill_low_rank(float* out, const Shape& shape, Rng& rng) {
  uint64_t n = shape_numel(shape);
  std::vector<std::vector<double>> factors;  // per mode: dim x terms
  for (int64_t dim : shape) {
    std::vector<double> f(static_cast<size_t>(dim) * kLowRankTerms);
    for (double& v : f) v = rng.normal();
    factors.push_back(std::move(f));
  }
  std::vector<double> signal(n, 0.0);
  std::vector<int64_t> index(shape.size(), 0);
  double signal_sq = 0;
  for (uint64_t i = 0; i < n; ++i) {
    double v = 0;
    for (int r = 0; r < kLowRankTerms; ++r) {
      double p = 1;
      for (size_t m = 0; m < shape.size(); ++m) p *= factors[m][static_cast<size_t>(index[m]) * kLowRankTerms + r];
      v += p;
    }
    signal[i] = v;
    signal_sq += v * v;
    for (size_t m = shape.size(); m-- > 0;) {  // next row-major index
      if (++index[m] < shape[m]) break;
      index[m] = 0;
    }
  }
  double noise_scale = kLowRankNoise * std::sqrt(signal_sq / static_cast<double>(n));
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<float>(signal[i] + noise_scale * rng.normal());
}

}  // namespace

const char* distribution_name(Distribution d) {
  switch (d) {
    case Distribution::kGaussian: return "gaussian";
    case Distribution::kStudentT: return "student-t";
    case Distribution::kLowRank: return "lowrank";
  }
  return "?";
}

std::vector<std::string> distribution_names() { return {"gaussian", "student-t", "lowrank"}; }

Distribution distribution_parse(std::string_view text) {
  for (Distribution d : {Distribution::kGaussian, Distribution::kStudentT, Distribution::kLowRank})
    if (text == distribution_name(d)) return d;
  throw usage_error("unknown distribution '" + std::string(text) + "' (valid: gaussian, student-t, lowrank)");
}

Tensor synthetic_tensor(Distribution d, const Shape& shape, uint64_t seed) {
  if (shape.empty()) throw usage_error("a synthetic tensor needs at least one dimension");
  for (int64_t dim : shape)
    if (dim <= 0) throw usage_error("synthetic shape " + shape_to_string(shape) + " has a dimension below 1");
  Tensor t = Tensor::empty(DType::kF32, shape);
  float* out = t.mutable_data_as<float>();
  // Different distributions with the same seed draw different streams.
  Rng rng(seed * 3 + static_cast<uint64_t>(d));
  switch (d) {
    case Distribution::kGaussian: fill_gaussian(out, t.numel(), rng); break;
    case Distribution::kStudentT: fill_student_t(out, t.numel(), rng); break;
    case Distribution::kLowRank: fill_low_rank(out, shape, rng); break;
  }
  return t;
}

}  // namespace tk::bench
