// Every scheme: the optimised path gives the reference's bytes and values, bits per
// weight match the stored bytes, padding is stated, results do not depend on the
// thread count, and the round trip stays within the scheme's error floor.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/quant/kquant_math.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/scheme.h"

namespace tk::quant {
namespace {

struct Case {
  std::string scheme;
  QuantOptions options;
  double min_sqnr_db;  // on N(0, 1) data
  std::string label;
};

QuantOptions opts(Granularity g = Granularity::kDefault, bool symmetric = true, DType scale = DType::kF16,
                  int64_t group = 0) {
  QuantOptions o;
  o.granularity = g;
  o.symmetric = symmetric;
  o.scale_dtype = scale;
  o.group_size = group;
  return o;
}

std::vector<Case> all_cases() {
  std::vector<Case> c;
  // Floors sit a little under what these schemes reach on Gaussian data.
  const double int_floor[9] = {0, 0, 3.5, 9, 15, 21, 27, 33, 39};
  for (int b = 2; b <= 8; ++b) {
    const std::string s = "int" + std::to_string(b);
    c.push_back({s, opts(), int_floor[b], s});
    c.push_back({s, opts(Granularity::kGroup, false, DType::kBF16, 64), int_floor[b], s + " asym bf16 g64"});
  }
  c.push_back({"int4", opts(Granularity::kChannel, true, DType::kF32), 12, "int4 channel"});
  c.push_back({"int4", opts(Granularity::kTensor, false, DType::kF32), 9, "int4 tensor asym"});
  QuantOptions fast = opts();
  fast.fast = true;
  c.push_back({"int4", fast, 17, "int4 fast"});
  const std::pair<const char*, double> k[] = {{"q2k", 8},  {"q3k", 13}, {"q4k", 19},
                                              {"q5k", 25}, {"q6k", 31}, {"q8k", 42}};
  for (auto [s, f] : k) c.push_back({s, opts(), f, s});
  QuantOptions kfast = opts();
  kfast.fast = true;
  c.push_back({"q4k", kfast, 18, "q4k fast"});
  c.push_back({"nf4", opts(), 19, "nf4"});
  QuantOptions dq = opts();
  dq.double_quant = true;
  c.push_back({"nf4", dq, 19, "nf4 double quant"});
  c.push_back({"iq4nl", opts(), 19, "iq4nl"});
  c.push_back({"iq4xs", opts(), 19, "iq4xs"});
  c.push_back({"iq4xs", kfast, 18, "iq4xs fast"});
  c.push_back({"fp8_e4m3", opts(), 30, "fp8_e4m3"});
  c.push_back({"fp8_e5m2", opts(Granularity::kChannel), 24, "fp8_e5m2 channel"});
  const std::pair<const char*, double> mx[] = {{"mxfp8_e4m3", 30}, {"mxfp8_e5m2", 24}, {"mxfp6_e2m3", 23},
                                               {"mxfp6_e3m2", 19}, {"mxfp4", 15},      {"mxint8", 36}};
  for (auto [s, f] : mx) {
    for (ScaleRule r : {ScaleRule::kFloor, ScaleRule::kCeil, ScaleRule::kSearch}) {
      QuantOptions o = opts();
      o.scale_rule = r;
      c.push_back({s, o, f, std::string(s) + " rule " + std::to_string(static_cast<int>(r))});
    }
  }
  c.push_back({"nvfp4", opts(), 17, "nvfp4"});
  return c;
}

void expect_same_quantized(const Quantized& a, const Quantized& b, const std::string& label) {
  EXPECT_EQ(a.scheme, b.scheme) << label;
  EXPECT_EQ(a.params, b.params) << label;
  ASSERT_EQ(a.parts.size(), b.parts.size()) << label;
  for (const auto& [name, t] : a.parts) {
    const auto it = b.parts.find(name);
    ASSERT_NE(it, b.parts.end()) << label << " part " << name;
    EXPECT_EQ(t.dtype(), it->second.dtype()) << label << " part " << name;
    EXPECT_EQ(t.shape(), it->second.shape()) << label << " part " << name;
    ASSERT_EQ(t.nbytes(), it->second.nbytes()) << label << " part " << name;
    EXPECT_EQ(std::memcmp(t.data(), it->second.data(), t.nbytes()), 0) << label << " part " << name;
  }
}

// The optimised path against the reference under the three option variants the searches
// branch on: plain, --fast, and per-column importance.
void expect_variants_equal_reference(const Scheme& s, const std::vector<float>& x, const Shape& shape,
                                     const std::vector<float>& importance, const std::string& label) {
  for (int variant = 0; variant < 3; ++variant) {
    QuantOptions o;
    o.fast = variant == 1;
    o.importance = variant == 2 ? importance.data() : nullptr;
    QuantOptions ref = o;
    ref.reference = true;
    expect_same_quantized(s.quantize(x.data(), shape, o), s.quantize(x.data(), shape, ref),
                          label + " variant " + std::to_string(variant));
  }
}

// Rows of 300 values: a tail of 300 % 256, 300 % 32, 300 % 16 ... for every scheme.
const Shape kShape{5, 300};

TEST(QuantSchemes, OptimisedEqualsReference) {
  const auto x = test::normal_floats(1500, 1);
  for (const Case& c : all_cases()) {
    const auto s = make_scheme(c.scheme);
    QuantOptions ref = c.options;
    ref.reference = true;
    const Quantized qo = s->quantize(x.data(), kShape, c.options);
    const Quantized qr = s->quantize(x.data(), kShape, ref);
    expect_same_quantized(qo, qr, c.label);
    std::vector<float> yo(x.size()), yr(x.size());
    s->dequantize(qo, yo.data());
    s->dequantize_reference(qo, yr.data());
    EXPECT_EQ(std::memcmp(yo.data(), yr.data(), yo.size() * sizeof(float)), 0) << c.label;
  }
}

TEST(QuantSchemes, RoundTripWithinErrorFloor) {
  const auto x = test::normal_floats(1500, 2);
  for (const Case& c : all_cases()) {
    const auto s = make_scheme(c.scheme);
    const Quantized q = s->quantize(x.data(), kShape, c.options);
    std::vector<float> y(x.size());
    s->dequantize(q, y.data());
    const ErrorStats e = measure_error(x.data(), y.data(), static_cast<int64_t>(x.size()), kShape[1], nullptr);
    EXPECT_GE(e.sqnr_db, c.min_sqnr_db) << c.label;
    EXPECT_LT(e.sqnr_db, c.min_sqnr_db + 12) << c.label << ": floor too loose to mean anything";
  }
}

TEST(QuantSchemes, BitsPerWeightMatchStoredBytes) {
  const auto x = test::normal_floats(1500, 3);
  for (const Case& c : all_cases()) {
    const auto s = make_scheme(c.scheme);
    const Quantized q = s->quantize(x.data(), kShape, c.options);
    const double stored = static_cast<double>(q.stored_bytes()) * 8.0 / static_cast<double>(x.size());
    EXPECT_DOUBLE_EQ(s->bits_per_weight(kShape[0], kShape[1], c.options), stored) << c.label;
  }
}

TEST(QuantSchemes, SameBytesForAnyThreadCount) {
  const auto x = test::normal_floats(1500, 4);
  const int saved = omp_get_max_threads();
  for (const Case& c : all_cases()) {
    const auto s = make_scheme(c.scheme);
    omp_set_num_threads(1);
    const Quantized one = s->quantize(x.data(), kShape, c.options);
    omp_set_num_threads(3);
    const Quantized three = s->quantize(x.data(), kShape, c.options);
    expect_same_quantized(one, three, c.label);
  }
  omp_set_num_threads(saved);
}

// The K-quants' reference (kquant_math.h, one sub-block at a time: what the GPU runs)
// against the optimised path (eight sub-blocks in lanes) on the cases that decide
// scales: all-zero, constant, subnormal, all-negative and all-positive sub-blocks, an
// outlier, a padded row, error weights, and --fast.
TEST(QuantSchemes, KQuantReferenceEqualsOptimisedOnEdgeCases) {
  const int64_t rows = 6, cols = 600;
  auto x = test::normal_floats(static_cast<size_t>(rows * cols), 41);
  for (int64_t c = 0; c < 32; ++c) {
    x[static_cast<size_t>(c)] = 0.0f;                      // row 0: zero sub-blocks
    x[static_cast<size_t>(cols + c)] = 0.25f;              // row 1: constant
    x[static_cast<size_t>(2 * cols + c)] = 1.0e-41f;       // row 2: subnormal
    x[static_cast<size_t>(3 * cols + c)] = -std::fabs(x[static_cast<size_t>(3 * cols + c)]);  // all negative
    x[static_cast<size_t>(4 * cols + c)] = std::fabs(x[static_cast<size_t>(4 * cols + c)]);   // all positive
  }
  for (int64_t c = 0; c < 256; ++c) x[static_cast<size_t>(5 * cols + c)] = 0.0f;  // a zero super-block
  x[static_cast<size_t>(5 * cols + 300)] = 40.0f;                                  // an outlier
  std::vector<float> importance(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) importance[static_cast<size_t>(c)] = 0.2f + static_cast<float>(c % 9) / 4.0f;
  for (const char* name : {"q2k", "q3k", "q4k", "q5k", "q6k", "q8k"}) {
    expect_variants_equal_reference(*make_scheme(name), x, Shape{rows, cols}, importance, name);
  }
}

// f16_value and round_f16 (kquant_math.h, for the GPU) against the library's f16.
TEST(QuantSchemes, F16HelpersEqualTheLibrary) {
  for (uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // NaN
    const float want = f16_to_f32(static_cast<uint16_t>(h)), got = detail::kquant::f16_value(h);
    ASSERT_EQ(std::memcmp(&want, &got, sizeof(float)), 0) << std::hex << h;
  }
  for (const float v : {0.0f, -0.0f, 1.0e-9f, 3.3e-5f, 0.1f, -2.5f, 65504.0f, 65520.0f, 1.0e6f, -1.0e6f}) {
    EXPECT_EQ(detail::kquant::round_f16(v), f16_to_f32(detail::scale_to_f16(v))) << v;
  }
  // fmax_hd: the larger, the first of equal values (the sign of a stored zero dmin), and
  // NaN left out.
  const auto bits = [](float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
  };
  EXPECT_EQ(bits(detail::kquant::fmax_hd(0.0f, -0.0f)), 0x00000000u);
  EXPECT_EQ(bits(detail::kquant::fmax_hd(-0.0f, 0.0f)), 0x80000000u);
  EXPECT_EQ(detail::kquant::fmax_hd(1.0f, 2.0f), 2.0f);
  EXPECT_EQ(detail::kquant::fmax_hd(NAN, 2.0f), 2.0f);
  EXPECT_EQ(detail::kquant::fmax_hd(2.0f, NAN), 2.0f);
}

TEST(QuantSchemes, PaddingIsStatedAndZeroed) {
  const auto x = test::normal_floats(1500, 5);
  const auto s = make_scheme("int4");
  const Quantized q = s->quantize(x.data(), kShape, opts(Granularity::kGroup, true, DType::kF16, 64));
  EXPECT_EQ(q.params.at("padded_cols"), "320");
  EXPECT_EQ(q.params.at("group_size"), "64");
  EXPECT_EQ(q.parts.at("codes").shape(), (Shape{5, 160}));
  const Quantized k = make_scheme("q4k")->quantize(x.data(), kShape, QuantOptions{});
  EXPECT_EQ(k.params.at("padded_cols"), "512");
  // A 1-D tensor is one row; a 0-rank tensor one value.
  const float one = 0.5f;
  const auto nf4 = make_scheme("nf4");
  const Quantized q0 = nf4->quantize(&one, Shape{}, QuantOptions{});
  float back = 0;
  nf4->dequantize(q0, &back);
  EXPECT_EQ(back, 0.5f);
}

TEST(QuantSchemes, HugeValuesSaturateTheScaleInsteadOfOverflowing) {
  auto x = test::normal_floats(1500, 9);
  for (auto& v : x) v *= 1e6f;  // scales of ~1e5 are beyond f16
  for (const char* name : {"int4", "q4k", "q3k", "nf4", "iq4xs", "fp8_e4m3", "mxfp4", "nvfp4"}) {
    const auto s = make_scheme(name);
    std::vector<float> y(x.size());
    s->dequantize(s->quantize(x.data(), kShape, QuantOptions{}), y.data());
    for (float v : y) ASSERT_TRUE(std::isfinite(v)) << name;
  }
}

TEST(QuantSchemes, ImportanceShiftsErrorToUnweightedColumns) {
  const auto x = test::normal_floats(1500, 6);
  std::vector<float> w(300, 1.0f);
  for (int c = 0; c < 16; ++c) w[c] = 100.0f;
  QuantOptions o;
  o.importance = w.data();
  const auto s = make_scheme("q3k");
  std::vector<float> y_plain(x.size()), y_weighted(x.size());
  s->dequantize(s->quantize(x.data(), kShape, QuantOptions{}), y_plain.data());
  s->dequantize(s->quantize(x.data(), kShape, o), y_weighted.data());
  const ErrorStats plain = measure_error(x.data(), y_plain.data(), 1500, 300, w.data());
  const ErrorStats weighted = measure_error(x.data(), y_weighted.data(), 1500, 300, w.data());
  EXPECT_LT(weighted.weighted_sse, plain.weighted_sse);
}

TEST(QuantSchemes, UnknownAndMalformedSpecsAreUsageErrors) {
  for (const char* bad : {"int9", "int1", "int", "q7k", "mxfp5", "nf3", ""}) {
    EXPECT_EQ(test::kind_of([&] { make_scheme(bad); }), ErrorKind::kUsage) << bad;
  }
  const auto x = test::normal_floats(1500, 7);
  EXPECT_EQ(test::kind_of([&] { make_scheme("int4")->quantize(x.data(), kShape, opts(Granularity::kGroup, true, DType::kF16, 12)); }),
            ErrorKind::kUsage);
  EXPECT_EQ(test::kind_of([&] { make_scheme("mxfp4")->quantize(x.data(), kShape, opts(Granularity::kGroup, true, DType::kF16, 64)); }),
            ErrorKind::kUsage);
}

TEST(QuantSchemes, InconsistentPartsAreInvalidInput) {
  const auto x = test::normal_floats(1500, 8);
  std::vector<float> y(x.size());
  for (const char* name : {"int4", "q4k", "nf4", "iq4xs", "fp8_e4m3", "mxfp4", "nvfp4"}) {
    const auto s = make_scheme(name);
    const Quantized good = s->quantize(x.data(), kShape, QuantOptions{});
    Quantized missing = good;
    missing.parts.erase(missing.parts.begin());
    EXPECT_EQ(test::kind_of([&] { s->dequantize(missing, y.data()); }), ErrorKind::kInvalidInput) << name;
    Quantized reshaped = good;
    reshaped.shape = Shape{5, 600};
    EXPECT_EQ(test::kind_of([&] { s->dequantize(reshaped, y.data()); }), ErrorKind::kInvalidInput) << name;
    Quantized no_params = good;
    no_params.params.clear();
    if (!good.params.empty()) {
      EXPECT_EQ(test::kind_of([&] { s->dequantize(no_params, y.data()); }), ErrorKind::kInvalidInput) << name;
    }
  }
}

TEST(QuantSchemes, MeasureError) {
  const float x[4] = {1, -1, 2, 0};
  const float y[4] = {1, -1, 1, 0};
  const ErrorStats e = measure_error(x, y, 4, 2, nullptr);
  EXPECT_NEAR(e.sqnr_db, 10 * std::log10(6.0), 1e-12);
  EXPECT_NEAR(e.rel_rmse, std::sqrt(1.0 / 6.0), 1e-12);
  EXPECT_EQ(e.max_abs, 1.0);
  const float w[2] = {3, 5};
  EXPECT_EQ(measure_error(x, y, 4, 2, w).weighted_sse, 3.0);
  EXPECT_TRUE(std::isinf(measure_error(x, x, 4, 2, nullptr).sqnr_db));
}

// Row sums, clipping per block: a value is clipped when its magnitude exceeds its block's
// largest reconstructed magnitude by more than 0.1%.
TEST(QuantSchemes, RowErrorsCountClippingPerBlock) {
  const float x[8] = {1, 2, 3, 10, -2.001f, 0, 5, -5.01f};
  const float y[8] = {1, 2, 3, 4, -2, 0, 5, 5};
  const std::vector<detail::RowSums> rows = row_errors(x, y, 2, 4, nullptr, 2);
  EXPECT_EQ(rows[0].clipped, 1u);  // 10 against 4
  EXPECT_EQ(rows[1].clipped, 1u);  // -5.01 against 5 (-2.001 is within 0.1% of 2)
  EXPECT_EQ(row_errors(x, y, 2, 4, nullptr, 0)[0].clipped, 0u);  // not counted
  const ErrorStats e = error_stats(rows, 8);
  EXPECT_EQ(e.clipped_share, 0.25);
  EXPECT_NEAR(e.max_abs, 10.01, 1e-5);  // -5.01 against 5
  double signal = 0;
  for (float v : x) signal += static_cast<double>(v) * v;
  EXPECT_NEAR(e.signal, signal, 1e-9);
}

// The rows' sums in lanes: the dispatched path (AVX2 where the processor has it) gives the
// bits of the scalar reference compiled here, for rows with and without a tail of fewer
// than eight values, weighted or not; and the lanes add up to the plain sum.
TEST(QuantSchemes, RowErrorsEveryPathTheSameBits) {
  std::mt19937 rng(11);
  std::normal_distribution<float> n(0, 1);
  for (int64_t cols : {1, 7, 8, 13, 64, 1003}) {
    const int64_t rows = 5;
    std::vector<float> x(rows * cols), y(rows * cols), w(cols);
    for (float& v : x) v = n(rng);
    for (size_t i = 0; i < y.size(); ++i) y[i] = x[i] + 0.01f * n(rng);
    for (float& v : w) v = std::fabs(n(rng));
    for (const float* weights : {static_cast<const float*>(nullptr), static_cast<const float*>(w.data())}) {
      const std::vector<detail::RowSums> got = row_errors(x.data(), y.data(), rows, cols, weights, 4);
      for (int64_t r = 0; r < rows; ++r) {
        const detail::RowSums want = detail::row_sums(x.data() + r * cols, y.data() + r * cols, cols, weights, 4);
        const detail::RowSums& g = got[static_cast<size_t>(r)];
        EXPECT_TRUE(g.signal == want.signal && g.noise == want.noise && g.weighted == want.weighted &&
                    g.max_abs == want.max_abs && g.clipped == want.clipped)
            << cols << " cols, row " << r;
        double noise = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const double d = static_cast<double>(x[r * cols + c]) - y[r * cols + c];
          noise += d * d;
        }
        EXPECT_NEAR(g.noise, noise, 1e-12 * noise);
      }
    }
  }
}

// iq4nl's scales eight blocks at a time in lanes: the reference's bytes on rows of 0 to
// 21 blocks (a part of eight, a tail, both), with and without importance, --fast, a zero
// block, an outlier and values of every sign.
TEST(QuantSchemes, Iq4nlLanesEqualReference) {
  const auto s = make_scheme("iq4nl");
  for (int64_t blocks : {1, 7, 8, 9, 16, 21}) {
    const int64_t rows = 3, cols = blocks * 32;
    auto x = test::normal_floats(static_cast<size_t>(rows * cols), 40 + static_cast<uint64_t>(blocks));
    for (int64_t c = 0; c < 32; ++c) x[static_cast<size_t>(cols + c)] = 0.0f;  // row 1, block 0
    x[static_cast<size_t>(2 * cols + cols / 2)] = -25.0f;
    std::vector<float> importance(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c) importance[static_cast<size_t>(c)] = 0.1f + static_cast<float>(c % 7) / 3.0f;
    expect_variants_equal_reference(*s, x, Shape{rows, cols}, importance, "iq4nl " + std::to_string(blocks) + " blocks");
  }
}

}  // namespace
}  // namespace tk::quant
