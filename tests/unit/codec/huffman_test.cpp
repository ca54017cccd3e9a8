// The Huffman stream coder and the byte planes: round trips over the shapes of data that
// exercise each path (byte and pair symbols, odd sizes, codes longer than the first
// lookup, the fast loop and the tail), and rejection of damaged streams.
#include "tk/codec/huffman.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "test_util.h"
#include "tk/codec/byte_planes.h"
#include "tk/core/error.h"

namespace tk::codec {
namespace {

using test::kind_of;

// Bytes drawn from a geometric distribution over `values` symbols starting at `first`:
// P(first + i) ~ ratio^i. Small ratios give long codes to the rare symbols.
std::vector<uint8_t> geometric_bytes(size_t n, int values, double ratio, uint8_t first, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> weights(values);
  for (int i = 0; i < values; ++i) weights[i] = std::pow(ratio, i);
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(first + pick(rng));
  return v;
}

// Plan and encode `src`; empty when Huffman coding does not apply.
std::vector<uint8_t> encode(HuffmanEncoder& enc, const std::vector<uint8_t>& src) {
  const size_t bound = enc.plan(src);
  if (bound == SIZE_MAX) return {};
  std::vector<uint8_t> out(bound + kHuffmanSlack);
  const size_t len = enc.encode(src, out.data());
  EXPECT_LE(len, bound);
  out.resize(len);
  return out;
}

void expect_round_trip(HuffmanEncoder& enc, HuffmanDecoder& dec, const std::vector<uint8_t>& src) {
  const std::vector<uint8_t> coded = encode(enc, src);
  ASSERT_FALSE(coded.empty()) << "size " << src.size();
  std::vector<uint8_t> back(src.size());
  dec.decode(coded, back);
  ASSERT_EQ(back, src) << "size " << src.size() << ", width " << int(coded[0]);
}

TEST(Huffman, RoundTripsPairAndByteSymbols) {
  HuffmanEncoder enc;
  HuffmanDecoder dec;
  // Few values (pairs), many values (bytes), sizes around the fast loop's thresholds.
  for (size_t n : {64, 65, 100, 127, 128, 129, 1000, 1001, 4097, 65536, 300001}) {
    expect_round_trip(enc, dec, geometric_bytes(n, 20, 0.6, 110, static_cast<uint32_t>(n)));
    expect_round_trip(enc, dec, geometric_bytes(n, 200, 0.98, 30, static_cast<uint32_t>(n) + 1));
  }
  const std::vector<uint8_t> few = geometric_bytes(100000, 12, 0.7, 100, 7);
  EXPECT_EQ(encode(enc, few)[0], 2) << "a small alphabet is coded in pairs";
  const std::vector<uint8_t> many = geometric_bytes(100000, 250, 0.99, 0, 8);
  EXPECT_EQ(encode(enc, many)[0], 1) << "a large alphabet is coded in bytes";
}

TEST(Huffman, LongCodesGoThroughTheSecondTable) {
  HuffmanEncoder enc;
  HuffmanDecoder dec;
  // Ratio 0.3 over 30 values: the rare values would want codes far beyond 14 bits.
  for (size_t n : {5000, 200001}) {
    const std::vector<uint8_t> src = geometric_bytes(n, 30, 0.3, 0, 11);
    expect_round_trip(enc, dec, src);
  }
  std::vector<uint8_t> src = geometric_bytes(200000, 120, 0.9, 0, 12);
  expect_round_trip(enc, dec, src);
}

TEST(Huffman, OnePairRepeatedAndTwoValues) {
  HuffmanEncoder enc;
  HuffmanDecoder dec;
  std::vector<uint8_t> abab(1000);
  for (size_t i = 0; i < abab.size(); ++i) abab[i] = i % 2 ? 7 : 3;
  expect_round_trip(enc, dec, abab);
  abab.push_back(3);  // odd size: the last byte travels in the header
  expect_round_trip(enc, dec, abab);
  abab.back() = 9;  // ... and may be a value that occurs nowhere else
  expect_round_trip(enc, dec, abab);
  std::vector<uint8_t> two(999, 1);
  two[500] = 2;
  expect_round_trip(enc, dec, two);
}

TEST(Huffman, DoesNotApplyToConstantOrTinyStreams) {
  HuffmanEncoder enc;
  EXPECT_EQ(enc.plan(std::vector<uint8_t>(1000, 9)), SIZE_MAX);
  EXPECT_EQ(enc.stats().distinct, 1u);
  EXPECT_EQ(enc.stats().top_value, 9);
  EXPECT_EQ(enc.plan(geometric_bytes(10, 5, 0.5, 0, 1)), SIZE_MAX);
  EXPECT_EQ(enc.plan({}), SIZE_MAX);
  EXPECT_EQ(enc.stats().distinct, 0u);
}

TEST(Huffman, StatsCountTheMostFrequentByte) {
  HuffmanEncoder enc;
  std::vector<uint8_t> v(1001, 4);
  for (size_t i = 0; i < 300; ++i) v[i * 3] = 5;
  enc.plan(v);
  EXPECT_EQ(enc.stats().distinct, 2u);
  EXPECT_EQ(enc.stats().top_value, 4);
  EXPECT_EQ(enc.stats().top_count, 701u);
}

TEST(Huffman, EncoderStateIsReusable) {
  // The pair histogram is cleared after each plan; a stale count would change the code.
  HuffmanEncoder reused, fresh;
  const std::vector<uint8_t> a = geometric_bytes(50000, 25, 0.7, 90, 1);
  const std::vector<uint8_t> b = geometric_bytes(50001, 25, 0.7, 100, 2);
  encode(reused, a);
  EXPECT_EQ(encode(reused, b), encode(fresh, b));
}

TEST(Huffman, DamagedStreamsThrowInvalidInput) {
  HuffmanEncoder enc;
  HuffmanDecoder dec;
  for (int values : {12, 200}) {
    const std::vector<uint8_t> src = geometric_bytes(3001, values, values < 100 ? 0.5 : 0.98, 0, 5);
    const std::vector<uint8_t> coded = encode(enc, src);
    std::vector<uint8_t> back(src.size());
    for (size_t len = 0; len < coded.size(); ++len) {
      const std::vector<uint8_t> cut(coded.begin(), coded.begin() + len);
      EXPECT_EQ(kind_of([&] { dec.decode(cut, back); }), ErrorKind::kInvalidInput) << "length " << len;
    }
    // A flipped bit either throws or decodes to different bytes (caught by the frame
    // checksum); it never decodes silently to the same bytes, and never reads or writes
    // out of bounds (run under ASan).
    for (size_t bit = 0; bit < 8 * coded.size(); ++bit) {
      std::vector<uint8_t> bad = coded;
      bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      try {
        dec.decode(bad, back);
        EXPECT_NE(back, src) << "bit " << bit;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      }
    }
  }
}

// Random elements of `width` bytes split into planes in `order`, and merged back.
struct SplitCase {
  std::vector<uint8_t> src, planes, back;
  std::vector<uint8_t*> p;
  SplitCase(std::mt19937& rng, int width, size_t count, PlaneOrder order)
      : src(count * width), planes(src.size()), back(src.size()), p(width) {
    for (auto& b : src) b = static_cast<uint8_t>(rng());
    std::vector<const uint8_t*> cp(width);
    for (int s = 0; s < width; ++s) cp[s] = p[s] = planes.data() + s * count;
    split_planes(width, src.data(), count, p.data(), order);
    merge_planes(width, cp.data(), count, back.data(), order);
  }
};

TEST(BytePlanes, SplitMergeRoundTripAndExponentPlane) {
  std::mt19937 rng(3);
  for (int width : {2, 4, 8})
    for (size_t count : {0, 1, 7, 33, 1000}) {
      const SplitCase c(rng, width, count, PlaneOrder::kRegrouped);
      EXPECT_EQ(c.back, c.src) << "width " << width << ", count " << count;
    }
  // bf16 -1.5 = 0xbfc0: exponent 0x7f in plane 0; sign and mantissa 0x40 in plane 1.
  const uint8_t bf16[2] = {0xc0, 0xbf};
  uint8_t e = 0, m = 0;
  uint8_t* p[2] = {&e, &m};
  split_planes(2, bf16, 1, p);
  EXPECT_EQ(e, 0x7f);
  EXPECT_EQ(m, 0xc0);
  // f32 -1.5 = 0xbfc00000: plane 0 is the exponent again.
  const uint8_t f32[4] = {0x00, 0x00, 0xc0, 0xbf};
  uint8_t q[4];
  uint8_t* pq[4] = {q, q + 1, q + 2, q + 3};
  split_planes(4, f32, 1, pq);
  EXPECT_EQ(q[0], 0x7f);
  EXPECT_EQ(q[1], 0xc0);
}

TEST(BytePlanes, PlainBytesAndTheSortedHighPlane) {
  std::mt19937 rng(4);
  for (int width : {2, 4, 8}) {
    for (size_t count : {0, 1, 7, 33, 1000}) {
      const SplitCase c(rng, width, count, PlaneOrder::kBytes);
      for (size_t i = 0; i < count; ++i)  // plane s holds byte width-1-s of each element
        for (int s = 0; s < width; ++s) ASSERT_EQ(c.p[s][i], c.src[i * width + (width - 1 - s)]);
      EXPECT_EQ(c.back, c.src) << "width " << width << ", count " << count;

      std::vector<uint8_t> sorted(count), unsorted(count);
      sort_high_plane(c.p[0], c.p[1], count, sorted.data());
      unsort_high_plane(sorted.data(), c.p[1], count, unsorted.data());
      EXPECT_EQ(std::vector<uint8_t>(c.p[0], c.p[0] + count), unsorted);
    }
  }
  // Clear context first, then set, each group in element order.
  const uint8_t high[6] = {1, 2, 3, 4, 5, 6};
  const uint8_t context[6] = {0x80, 0x00, 0xff, 0x7f, 0x00, 0x80};
  uint8_t sorted[6];
  sort_high_plane(high, context, 6, sorted);
  EXPECT_EQ(std::vector<uint8_t>(sorted, sorted + 6), (std::vector<uint8_t>{2, 4, 5, 1, 3, 6}));
}

TEST(SampledEntropy, SeparatesRandomFromSkewedBytes) {
  std::mt19937 rng(9);
  std::vector<uint8_t> random(1 << 20);
  for (auto& b : random) b = static_cast<uint8_t>(rng());
  EXPECT_GT(sampled_entropy_bits(random), 7.9);
  EXPECT_LT(sampled_entropy_bits(geometric_bytes(1 << 20, 20, 0.6, 100, 1)), 3.5);
  EXPECT_EQ(sampled_entropy_bits(std::vector<uint8_t>(5000, 1)), 0.0);
  EXPECT_EQ(sampled_entropy_bits({}), 0.0);
}

}  // namespace
}  // namespace tk::codec
