// Seeded synthetic tensors for benchmarks that must run anywhere: the same seed, shape
// and distribution give the same values on every machine (no std:: distributions, whose
// output differs between standard libraries).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/tensor.h"

namespace tk::bench {

enum class Distribution {
  kGaussian,  // N(0, 1)
  kStudentT,  // Student's t with 3 degrees of freedom: heavy tails, like outlier weights
  kLowRank,   // sum of kLowRankTerms random rank-one terms (CP form) plus 1% Gaussian noise
};

inline constexpr int kLowRankTerms = 8;
inline constexpr double kLowRankNoise = 0.01;  // noise norm / signal norm

// "gaussian", "student-t", "lowrank" and back; parsing throws kUsage listing the names.
const char* distribution_name(Distribution d);
Distribution distribution_parse(std::string_view text);
std::vector<std::string> distribution_names();

// An F32 tensor of `shape` drawn from `d` with `seed`. Throws kUsage for an empty shape
// or a zero dimension.
Tensor synthetic_tensor(Distribution d, const Shape& shape, uint64_t seed);

}  // namespace tk::bench
