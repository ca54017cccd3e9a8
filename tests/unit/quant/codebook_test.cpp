// kmeans:BITS and vq:DIM:BITS: fast paths equal their references, error bounds,
// determinism across thread counts, outliers, padding and the checks of dequantize().
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>

#include "test_util.h"
#include "tk/quant/codebook.h"
#include "tk/quant/codebook_internal.h"

namespace tk::quant {
namespace {

double sqnr_db(const std::vector<float>& x, const std::vector<float>& y) {
  double s = 0, e = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    s += double(x[i]) * x[i];
    e += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  }
  return 10 * std::log10(s / e);
}

std::vector<float> round_trip(const Scheme& scheme, const std::vector<float>& x, const Shape& shape,
                              const QuantOptions& options, Quantized* out = nullptr) {
  Quantized q = scheme.quantize(x.data(), shape, options);
  std::vector<float> y(x.size());
  scheme.dequantize(q, y.data());
  if (out) *out = q;
  return y;
}

bool same_parts(const Quantized& a, const Quantized& b) {
  if (a.parts.size() != b.parts.size() || a.params != b.params) return false;
  for (const auto& [k, t] : a.parts) {
    auto it = b.parts.find(k);
    if (it == b.parts.end() || it->second.nbytes() != t.nbytes()) return false;
    if (std::memcmp(it->second.data(), t.data(), t.nbytes()) != 0) return false;
  }
  return true;
}

TEST(Codebook, NearestSortedEqualsReferenceIncludingTies) {
  std::vector<float> levels = {-2.0f, -0.5f, -0.5f, 0.25f, 1.0f, 3.0f};
  std::vector<double> mid = codebook_midpoints(levels.data(), 6);
  std::vector<float> probes = {-5, -2, -1.25f, -0.5f, -0.125f, 0.625f, 2.0f, 7, 0.25f};
  for (float x : test::normal_floats(2000, 1, 0.0f, 2.0f)) probes.push_back(x);
  for (float x : probes) {
    EXPECT_EQ(codebook_nearest_sorted(levels.data(), mid.data(), 6, x), codebook_nearest_reference(levels.data(), 6, x)) << x;
  }
  // On a midpoint the lower level wins.
  EXPECT_EQ(codebook_nearest_sorted(levels.data(), mid.data(), 6, -1.25f), 0);
}

TEST(Codebook, DecodeFastEqualsReferenceForEveryWidthAndOffset) {
  for (int bits = 1; bits <= 8; ++bits) {
    std::mt19937 rng(bits);
    std::vector<uint16_t> codes(5000);
    for (auto& c : codes) c = static_cast<uint16_t>(rng() & ((1u << bits) - 1));
    std::vector<uint8_t> packed = codebook_pack(codes, bits);
    std::vector<float> levels(1 << bits);
    for (size_t j = 0; j < levels.size(); ++j) levels[j] = 0.5f * j - 3;
    for (uint64_t first : {0, 1, 3, 7, 8, 13}) {
      for (uint64_t count : {0, 1, 5, 17, 4096, 4987}) {
        if (first + count > codes.size()) continue;
        std::vector<float> ref(count), fast(count);
        codebook_decode_reference(packed.data(), packed.size(), bits, first, count, levels.data(), ref.data());
        codebook_decode(packed.data(), packed.size(), bits, first, count, levels.data(), fast.data());
        ASSERT_EQ(ref, fast) << bits << " bits, first " << first << ", count " << count;
        for (uint64_t i = 0; i < count; ++i) ASSERT_EQ(ref[i], levels[codes[first + i]]);
      }
    }
  }
}

TEST(Kmeans, GaussianErrorNearLloydMax) {
  // Lloyd-Max optimum for a Gaussian: 9.30 dB at 2 bits, 14.62 at 3, 20.22 at 4.
  std::vector<float> x = test::normal_floats(256 * 1024, 2, 0.0f, 0.02f);
  const double floor_db[] = {0, 0, 9.2, 14.5, 20.1};
  for (int bits = 2; bits <= 4; ++bits) {
    auto scheme = make_codebook_scheme("kmeans:" + std::to_string(bits));
    QuantOptions o;
    o.granularity = Granularity::kTensor;
    Quantized q;
    std::vector<float> y = round_trip(*scheme, x, {256, 1024}, o, &q);
    EXPECT_GT(sqnr_db(x, y), floor_db[bits]) << bits;
    EXPECT_NEAR(q.stored_bytes() * 8.0, scheme->bits_per_weight(256, 1024, o) * x.size(), 1e-6);
  }
}

TEST(Kmeans, ReferencePathsGiveTheSameBytesAndValues) {
  std::vector<float> x = test::normal_floats(33 * 70, 11);
  for (const char* spec : {"kmeans:1", "kmeans:3", "kmeans:4", "kmeans:7"}) {
    auto scheme = make_codebook_scheme(spec);
    QuantOptions fast, ref;
    fast.group_size = ref.group_size = 16;
    ref.reference = true;
    Quantized a = scheme->quantize(x.data(), {33, 70}, fast);
    Quantized b = scheme->quantize(x.data(), {33, 70}, ref);
    EXPECT_TRUE(same_parts(a, b)) << spec;
    std::vector<float> ya(x.size()), yb(x.size());
    scheme->dequantize(a, ya.data());
    scheme->dequantize_reference(a, yb.data());
    EXPECT_EQ(ya, yb) << spec;
  }
}

TEST(Kmeans, SameBytesForAnyThreadCount) {
  std::vector<float> x = test::normal_floats(64 * 1000, 3);
  auto scheme = make_codebook_scheme("kmeans:3");
  QuantOptions o;
  o.granularity = Granularity::kChannel;
  o.seed = 7;
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  Quantized one = scheme->quantize(x.data(), {64, 1000}, o);
  omp_set_num_threads(4);
  Quantized four = scheme->quantize(x.data(), {64, 1000}, o);
  omp_set_num_threads(saved);
  EXPECT_TRUE(same_parts(one, four));
}

TEST(Kmeans, OutliersAreKeptInF16) {
  std::vector<float> x = test::normal_floats(100 * 64, 4);
  x[17] = 40.0f;
  x[5000] = -25.5f;
  auto scheme = make_codebook_scheme("kmeans:2");
  QuantOptions o;
  o.outlier_fraction = 0.001;  // 6 of 6400
  Quantized q;
  std::vector<float> y = round_trip(*scheme, x, {100, 64}, o, &q);
  EXPECT_EQ(q.params.at("outliers"), "6");
  EXPECT_EQ(y[17], 40.0f);
  EXPECT_EQ(y[5000], -25.5f);
  EXPECT_NEAR(q.stored_bytes() * 8.0, scheme->bits_per_weight(100, 64, o) * x.size(), 1e-6);
}

TEST(Kmeans, GroupsPadRowsAndRoundTrip) {
  std::vector<float> x = test::normal_floats(5 * 100, 5);
  auto scheme = make_codebook_scheme("kmeans:4");
  QuantOptions o;
  o.group_size = 32;
  Quantized q;
  std::vector<float> y = round_trip(*scheme, x, {5, 100}, o, &q);
  EXPECT_EQ(q.params.at("granularity"), "group");
  EXPECT_EQ(q.params.at("padded_cols"), "128");
  EXPECT_EQ(q.parts.at("codebook").shape(), (Shape{20, 16}));
  EXPECT_GT(sqnr_db(x, y), 22.0);
}

TEST(Kmeans, FewDistinctValuesAreExact) {
  std::vector<float> x = {1, 2, 3, 1, 2, 3, 1, 2};
  auto scheme = make_codebook_scheme("kmeans:2");
  std::vector<float> y = round_trip(*scheme, x, {8}, {});
  EXPECT_EQ(x, y);
}

TEST(Kmeans, ImportanceLowersTheWeightedError) {
  // Column 3 is four times wider than the others and carries nearly all the weight.
  std::vector<float> x = test::normal_floats(512 * 16, 6);
  for (size_t i = 3; i < x.size(); i += 16) x[i] *= 4;
  std::vector<float> w(16, 0.01f);
  w[3] = 100.0f;
  auto scheme = make_codebook_scheme("kmeans:2");
  QuantOptions plain, weighted;
  plain.granularity = weighted.granularity = Granularity::kTensor;
  weighted.importance = w.data();
  auto werr = [&](const std::vector<float>& y) {
    double e = 0;
    for (size_t i = 0; i < x.size(); ++i) e += w[i % 16] * (x[i] - y[i]) * (x[i] - y[i]);
    return e;
  };
  EXPECT_LT(werr(round_trip(*scheme, x, {512, 16}, weighted)), 0.9 * werr(round_trip(*scheme, x, {512, 16}, plain)));
}

TEST(Kmeans, DequantizeRejectsMissingAndWrongParts) {
  std::vector<float> x = test::normal_floats(64, 7);
  auto scheme = make_codebook_scheme("kmeans:3");
  Quantized q = scheme->quantize(x.data(), {8, 8}, {});
  std::vector<float> y(64);
  Quantized missing = q;
  missing.parts.erase("codebook");
  EXPECT_EQ(test::kind_of([&] { scheme->dequantize(missing, y.data()); }), ErrorKind::kInvalidInput);
  Quantized short_codes = q;
  short_codes.parts["codes"] = cbdetail::make_u8({1, 2});
  EXPECT_EQ(test::kind_of([&] { scheme->dequantize(short_codes, y.data()); }), ErrorKind::kInvalidInput);
  Quantized bad_param = q;
  bad_param.params["padded_cols"] = "9";
  EXPECT_EQ(test::kind_of([&] { scheme->dequantize(bad_param, y.data()); }), ErrorKind::kInvalidInput);
}

TEST(CodebookSpec, ParsesAndRejects) {
  EXPECT_EQ(make_codebook_scheme("int4"), nullptr);
  EXPECT_EQ(make_codebook_scheme("kmeans:5")->name(), "kmeans:5");
  EXPECT_EQ(make_codebook_scheme("vq:4:8")->name(), "vq:4:8");
  for (const char* bad : {"kmeans", "kmeans:0", "kmeans:9", "kmeans:x", "vq:4", "vq:0:8", "vq:4:15", "kmeans:3:1"}) {
    EXPECT_EQ(test::kind_of([&] { make_codebook_scheme(bad); }), ErrorKind::kUsage) << bad;
  }
}

TEST(Vq, GaussianBeatsScalarAtTheSameRate) {
  // 2 bits per weight: vq:4:8 must beat the scalar Lloyd-Max 9.30 dB.
  std::vector<float> x = test::normal_floats(128 * 512, 8, 0.0f, 0.02f);
  auto scheme = make_codebook_scheme("vq:4:8");
  QuantOptions o;
  Quantized q;
  std::vector<float> y = round_trip(*scheme, x, {128, 512}, o, &q);
  EXPECT_GT(sqnr_db(x, y), 9.4);
  EXPECT_NEAR(q.stored_bytes() * 8.0, scheme->bits_per_weight(128, 512, o) * x.size(), 1e-6);
}

TEST(Vq, SameBytesForAnyThreadCountAndPadsRows) {
  std::vector<float> x = test::normal_floats(40 * 30, 9);
  auto scheme = make_codebook_scheme("vq:4:6");
  QuantOptions o;
  o.seed = 3;
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  Quantized one = scheme->quantize(x.data(), {40, 30}, o);
  omp_set_num_threads(3);
  Quantized three = scheme->quantize(x.data(), {40, 30}, o);
  omp_set_num_threads(saved);
  EXPECT_TRUE(same_parts(one, three));
  EXPECT_EQ(one.params.at("padded_cols"), "32");
  std::vector<float> y(x.size());
  scheme->dequantize(one, y.data());
  EXPECT_GT(sqnr_db(x, y), 8.0);
}

}  // namespace
}  // namespace tk::quant
