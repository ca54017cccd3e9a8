// The optimised kernels give the scalar reference's results bit for bit: the batched
// trial sums (8 candidate scales per vector) over short and long groups, candidate
// counts that do and do not fill a vector, unit and general weights; the lanes kernels
// (8 groups per vector), which give each group's one-group sums, stats and searched
// scales, with all-zero and flat groups among the eight; and the decoders (bit
// unpacking, affine dequantization, k-quant sub-block scales) for every code width
// 2..8, groups of 8 to 264, streams whose last pieces end exactly at the buffer's end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/quant/minifloat_math.h"
#include "tk/quant/quant_internal.h"

namespace {

using namespace tk::quant::detail;
using tk::test::normal_floats;

void expect_same(const TrialSums& a, const TrialSums& b, const std::string& label) {
  // Bitwise through ==, with the sign of zero checked as well.
  EXPECT_EQ(a.lx, b.lx) << label;
  EXPECT_EQ(a.l2, b.l2) << label;
  EXPECT_EQ(a.l, b.l) << label;
  EXPECT_EQ(std::signbit(a.lx), std::signbit(b.lx)) << label;
}

TEST(QuantKernels, BatchedTrialsEqualReference) {
  for (const int64_t n : {8, 16, 32, 256, 264, 768}) {
    const auto x = normal_floats(static_cast<size_t>(n), static_cast<uint64_t>(n), 0.0f, 0.02f);
    const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
    const auto w = normal_floats(static_cast<size_t>(n), 7, 1.0f, 0.3f);
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

// pack8 is what the GPU packs with: the same stream as pack_bits, for every width.
TEST(QuantKernels, Pack8EqualsPackBits) {
  std::mt19937 rng(11);
  for (int bits = 1; bits <= 8; ++bits) {
    std::vector<uint8_t> codes(64);
    for (uint8_t& c : codes) c = static_cast<uint8_t>(rng() & ((1u << bits) - 1));
    std::vector<uint8_t> want(codes.size() * bits / 8), got(want.size());
    pack_bits(codes.data(), static_cast<int64_t>(codes.size()), bits, want.data(), true);
    for (size_t i = 0; i < codes.size(); i += 8) pack8(codes.data() + i, bits, got.data() + i / 8 * bits);
    EXPECT_EQ(got, want) << bits << " bits";
  }
}

// unpack8 is what the GPU decoders unpack with: the codes unpack_bits gives.
TEST(QuantKernels, Unpack8EqualsUnpackBits) {
  std::mt19937 rng(12);
  for (int bits = 1; bits <= 8; ++bits) {
    std::vector<uint8_t> packed(8 * bits);
    for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> want(64), got(64);
    unpack_bits(packed.data(), 64, bits, want.data(), true);
    for (size_t i = 0; i < 64; i += 8) unpack8(packed.data() + i / 8 * bits, bits, got.data() + i);
    EXPECT_EQ(got, want) << bits << " bits";
  }
}

// pow2f and ilogb_finite stand in for std::ldexp and std::ilogb in the float-format
// searches, which the GPU runs too: the same values, subnormals and overflow included.
TEST(QuantKernels, Pow2AndIlogbEqualTheLibrary) {
  for (int k = -170; k <= 140; ++k) {
    const float want = std::ldexp(1.0f, k), got = pow2f(k);
    EXPECT_EQ(std::memcmp(&want, &got, sizeof(float)), 0) << "2^" << k;
  }
  std::mt19937 rng(21);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng()) & 0x7fffffffu;
    if (i % 4 == 0) bits &= 0x007fffffu;  // subnormals
    if (bits == 0 || (bits & 0x7f800000u) == 0x7f800000u) continue;
    float v;
    std::memcpy(&v, &bits, sizeof v);
    EXPECT_EQ(ilogb_finite(v), std::ilogb(v)) << v;
    if (ilogb_finite(v) != std::ilogb(v)) break;
  }
  EXPECT_TRUE(finite(1.0f) && finite(-0.0f) && !finite(INFINITY) && !finite(-INFINITY) && !finite(NAN));
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
        const auto d = normal_floats(static_cast<size_t>(groups), static_cast<uint64_t>(n), 0.0f, 0.01f);
        const auto m = normal_floats(static_cast<size_t>(groups), static_cast<uint64_t>(n + 1), 0.0f, 0.05f);
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
      const auto d = normal_floats(static_cast<size_t>(supers), 3, 0.0f, 0.001f);
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

void expect_same_stats(const GroupStats& a, const GroupStats& b, const std::string& label) {
  EXPECT_EQ(a.sw, b.sw) << label;
  EXPECT_EQ(a.swx, b.swx) << label;
  EXPECT_EQ(a.swx2, b.swx2) << label;
  EXPECT_EQ(a.max, b.max) << label;
  EXPECT_EQ(a.min, b.min) << label;
  EXPECT_EQ(a.amax_signed, b.amax_signed) << label;
  EXPECT_EQ(std::signbit(a.max), std::signbit(b.max)) << label;
  EXPECT_EQ(std::signbit(a.min), std::signbit(b.min)) << label;
}

// Eight groups of n: Gaussian, with group 2 all zero, group 5 flat (one value) and
// group 6 all negative, so that inactive lanes and clamped mins are covered.
std::vector<float> eight_groups(int64_t n, uint64_t seed) {
  auto x = normal_floats(static_cast<size_t>(8 * n), seed, 0.0f, 0.02f);
  for (int64_t i = 0; i < n; ++i) {
    x[2 * n + i] = 0.0f;
    x[5 * n + i] = 0.0125f;
    x[6 * n + i] = -std::fabs(x[6 * n + i]) - 0.001f;
  }
  return x;
}

TEST(QuantKernels, LanesEqualOneGroupKernels) {
  for (const int64_t n : {8, 16, 32, 64, 256}) {
    const auto x = eight_groups(n, static_cast<uint64_t>(n) + 3);
    const auto w = normal_floats(static_cast<size_t>(8 * n), 11, 1.0f, 0.3f);
    const std::vector<float> ones(w.size(), 1.0f);
    std::vector<float> xt(x.size()), wt(w.size());
    to_lanes(x.data(), n, xt.data());
    to_lanes(w.data(), n, wt.data());
    float iscales[kLanes], mins[kLanes];
    for (int g = 0; g < kLanes; ++g) {
      iscales[g] = (31.0f + 0.3f * static_cast<float>(g)) / 0.05f * (g % 3 == 0 ? -1.0f : 1.0f);
      mins[g] = -0.04f + 0.002f * static_cast<float>(g);
    }
    iscales[4] = 0.0f;  // a zero scale gives all-zero codes
    iscales[2] = -iscales[2];  // the all-zero group at a negative scale: -0 codes and products, a zero total
    for (const bool unit : {true, false}) {
      const float* wl = unit ? nullptr : wt.data();
      const std::vector<float>& wg = unit ? ones : w;
      for (const bool reference : {false, true}) {
        const std::string label = "n " + std::to_string(n) + (unit ? " unit" : " weighted") +
                                  (reference ? " reference" : " optimised");
        LaneSums sym, asym;
        GroupStats stats[kLanes];
        trial_symmetric_lanes(xt.data(), wl, n, iscales, -32.0f, 31.0f, sym, reference);
        trial_asymmetric_lanes(xt.data(), wl, n, iscales, mins, 15.0f, asym, reference);
        group_stats_lanes(xt.data(), wl, n, stats, reference);
        float d[kLanes];
        AffineScale a[kLanes];
        search_symmetric_lanes(stats, xt.data(), wl, n, 32, false, reference, 1, d);
        search_asymmetric_lanes(stats, xt.data(), wl, n, 15, true, false, reference, 15, a);
        for (int g = 0; g < kLanes; ++g) {
          const float* xg = x.data() + g * n;
          const float* wgp = wg.data() + g * n;
          const std::string lg = label + " group " + std::to_string(g);
          expect_same(sym.at(g), trial_symmetric(xg, wgp, n, iscales[g], -32.0f, 31.0f, true), "symmetric " + lg);
          expect_same(asym.at(g), trial_asymmetric(xg, wgp, n, iscales[g], mins[g], 15.0f, true), "asymmetric " + lg);
          const GroupStats s = group_stats(xg, wgp, n, true);
          expect_same_stats(stats[g], s, "stats " + lg);
          EXPECT_EQ(d[g], search_symmetric(s, xg, wgp, n, 32, false, true, 1)) << "search " << lg;
          const AffineScale b = search_asymmetric(s, xg, wgp, n, 15, true, false, true, 15);
          EXPECT_EQ(a[g].d, b.d) << "search " << lg;
          EXPECT_EQ(a[g].m, b.m) << "search " << lg;
        }
      }
    }
  }
}

}  // namespace
