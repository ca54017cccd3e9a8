// The batched trial-sum kernels (8 candidate scales per vector) give the scalar
// reference's sums bit for bit: short and long groups (one and several 256-value
// chunks), candidate counts that do and do not fill a vector, unit and general weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tk/quant/quant_internal.h"

namespace {

using namespace tk::quant::detail;

std::vector<float> normal(size_t n, uint64_t seed, float mean, float sigma) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(mean, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

void expect_same(const TrialSums& a, const TrialSums& b, const std::string& label) {
  // Bitwise through ==, with the sign of zero checked as well.
  EXPECT_EQ(a.lx, b.lx) << label;
  EXPECT_EQ(a.l2, b.l2) << label;
  EXPECT_EQ(a.l, b.l) << label;
  EXPECT_EQ(std::signbit(a.lx), std::signbit(b.lx)) << label;
}

TEST(QuantKernels, BatchedTrialsEqualReference) {
  for (const int64_t n : {8, 16, 32, 256, 264, 768}) {
    const auto x = normal(static_cast<size_t>(n), static_cast<uint64_t>(n), 0.0f, 0.02f);
    const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
    const auto w = normal(static_cast<size_t>(n), 7, 1.0f, 0.3f);
    for (const int count : {1, 7, 8, 9, 21, 38}) {
      std::vector<float> iscales(static_cast<size_t>(count)), mins(static_cast<size_t>(count));
      for (int k = 0; k < count; ++k) {
        iscales[k] = (7.0f + 0.1f * static_cast<float>(k)) / 0.05f * (k % 2 == 0 ? 1.0f : -1.0f);
        mins[k] = -0.04f + 0.001f * static_cast<float>(k);
      }
      for (const auto* weights : {&ones, &w}) {
        const std::string label = "n " + std::to_string(n) + " count " + std::to_string(count) +
                                  (weights == &ones ? " unit" : " weighted");
        std::vector<TrialSums> opt(static_cast<size_t>(count)), ref(opt.size());
        trial_symmetric_batch(x.data(), weights->data(), n, iscales.data(), count, -32.0f, 31.0f, opt.data(), false);
        trial_symmetric_batch(x.data(), weights->data(), n, iscales.data(), count, -32.0f, 31.0f, ref.data(), true);
        for (int k = 0; k < count; ++k) expect_same(opt[k], ref[k], "symmetric " + label);
        trial_asymmetric_batch(x.data(), weights->data(), n, iscales.data(), mins.data(), count, 15.0f, opt.data(),
                               false);
        trial_asymmetric_batch(x.data(), weights->data(), n, iscales.data(), mins.data(), count, 15.0f, ref.data(),
                               true);
        for (int k = 0; k < count; ++k) expect_same(opt[k], ref[k], "asymmetric " + label);
      }
    }
  }
}

}  // namespace
