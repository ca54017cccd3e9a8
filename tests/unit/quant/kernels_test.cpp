// The optimised kernels give the scalar reference's results bit for bit: the batched
// trial sums (8 candidate scales per vector) over short and long groups, candidate
// counts that do and do not fill a vector, unit and general weights; and the decoders
// (bit unpacking, affine dequantization, k-quant sub-block scales) for every code width
// 2..8, groups of 8 to 264, streams whose last pieces end exactly at the buffer's end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
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

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// `bytes` copied to the end of a heap block, so that a read past them is one past the
// allocation (an address sanitizer build reports it).
std::unique_ptr<uint8_t[]> at_block_end(const std::vector<uint8_t>& bytes) {
  auto block = std::make_unique<uint8_t[]>(bytes.size());
  std::memcpy(block.get(), bytes.data(), bytes.size());
  return block;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(QuantKernels, UnpackBitsEqualsReference) {
  for (int bits = 1; bits <= 8; ++bits) {
    for (const int64_t n : {8, 16, 24, 256, 264, 4096}) {
      const auto packed = random_bytes(static_cast<size_t>(n / 8 * bits), static_cast<uint64_t>(bits * 1000 + n));
      const auto in = at_block_end(packed);
      std::vector<uint8_t> opt(static_cast<size_t>(n)), ref(opt.size());
      unpack_bits(in.get(), n, bits, opt.data(), false);
      unpack_bits(in.get(), n, bits, ref.data(), true);
      EXPECT_EQ(opt, ref) << "bits " << bits << " n " << n;
    }
  }
}

TEST(QuantKernels, AffineDecodeEqualsReference) {
  for (int bits = 2; bits <= 8; ++bits) {
    for (const int64_t group : {8, 16, 24, 32, 64, 264}) {
      for (const int64_t groups : {1, 2, 3, 17}) {
        const int64_t n = group * groups;
        const auto packed = random_bytes(static_cast<size_t>(n / 8 * bits), static_cast<uint64_t>(bits * 7 + n));
        const auto in = at_block_end(packed);
        const auto d = normal(static_cast<size_t>(groups), static_cast<uint64_t>(n), 0.0f, 0.01f);
        const auto m = normal(static_cast<size_t>(groups), static_cast<uint64_t>(n + 1), 0.0f, 0.05f);
        for (const int offset : {0, 1 << (bits - 1)}) {
          for (const float* mins : {static_cast<const float*>(nullptr), m.data()}) {
            std::vector<float> ref(static_cast<size_t>(n));
            decode_packed_affine(in.get(), n, bits, offset, group, d.data(), mins, ref.data(), false, true);
            for (const bool stream : {false, true}) {
              std::vector<float> opt(ref.size());
              decode_packed_affine(in.get(), n, bits, offset, group, d.data(), mins, opt.data(), stream, false);
              EXPECT_TRUE(same_bits(opt, ref)) << "bits " << bits << " group " << group << " n " << n << " offset "
                                               << offset << (mins ? " with mins" : "") << (stream ? " streaming" : "");
            }
          }
        }
      }
    }
  }
}

TEST(QuantKernels, AffineDecodeValues) {
  // Codes 0..3 at 2 bits (0b11100100 = 0, 1, 2, 3 LSB first), symmetric offset 2:
  // (code - 2) * d + m, with -0 from a zero code and a negative scale turned into +0.
  const std::vector<uint8_t> packed = {0xe4, 0xe4};
  const float d[] = {-0.5f}, m[] = {0.25f};
  std::vector<float> y(8);
  for (const bool reference : {false, true}) {
    decode_packed_affine(packed.data(), 8, 2, 2, 8, d, nullptr, y.data(), false, reference);
    EXPECT_EQ(y, (std::vector<float>{1.0f, 0.5f, 0.0f, -0.5f, 1.0f, 0.5f, 0.0f, -0.5f}));
    EXPECT_FALSE(std::signbit(y[2]));
    decode_packed_affine(packed.data(), 8, 2, 0, 8, d, m, y.data(), false, reference);
    EXPECT_EQ(y, (std::vector<float>{0.25f, -0.25f, -0.75f, -1.25f, 0.25f, -0.25f, -0.75f, -1.25f}));
  }
}

TEST(QuantKernels, SubScaleExpansionEqualsReference) {
  for (const int subs : {8, 16}) {
    for (const int64_t supers : {1, 5, 16}) {
      const auto q = random_bytes(static_cast<size_t>(supers * subs), static_cast<uint64_t>(subs + supers));
      const auto d = normal(static_cast<size_t>(supers), 3, 0.0f, 0.001f);
      for (const int bias : {0, 32, 128}) {
        for (const bool negate : {false, true}) {
          std::vector<float> opt(q.size()), ref(q.size());
          expand_sub_scales(q.data(), supers, subs, bias, d.data(), negate, opt.data(), false);
          expand_sub_scales(q.data(), supers, subs, bias, d.data(), negate, ref.data(), true);
          EXPECT_TRUE(same_bits(opt, ref)) << "subs " << subs << " supers " << supers << " bias " << bias;
          const float expect = d[0] * static_cast<float>(static_cast<int>(q[1]) - bias);
          EXPECT_EQ(ref[1], negate ? -expect : expect);
        }
      }
    }
  }
}

}  // namespace
