// trellis:K[:L]: error on Gaussian data, the AVX2 Viterbi and decoder against the
// scalar reference, thread-count independence, padding, and malformed parts.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/quant/scheme.h"

namespace tk::quant {
namespace {

std::vector<float> gaussian(size_t n, unsigned seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

std::vector<float> decode(const Scheme& s, const Quantized& q, bool reference = false) {
  std::vector<float> y(shape_numel(q.shape));
  if (reference) {
    s.dequantize_reference(q, y.data());
  } else {
    s.dequantize(q, y.data());
  }
  return y;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

void expect_same(const Quantized& a, const Quantized& b, const std::string& label) {
  EXPECT_EQ(a.params, b.params) << label;
  ASSERT_EQ(a.parts.size(), b.parts.size()) << label;
  for (const auto& [name, t] : a.parts) {
    ASSERT_TRUE(b.parts.count(name)) << label << " " << name;
    EXPECT_TRUE(same_bytes(t, b.parts.at(name))) << label << " " << name;
  }
}

double sqnr(const std::vector<float>& x, const std::vector<float>& y) {
  return measure_error(x.data(), y.data(), static_cast<int64_t>(x.size()), 1, nullptr).sqnr_db;
}

TEST(Trellis, GaussianErrorAndStoredBits) {
  const Shape shape{64, 1024};
  const auto x = gaussian(64 * 1024, 1, 0.02f);
  // Expected on i.i.d. Gaussian at 2 bits: about 10.6 dB at L = 8, 11.1 at L = 10 and
  // 11.3 dB at the default L = 12 (scalar Lloyd-Max: 9.30 dB).
  for (const auto& [spec, floor_db] :
       {std::pair{"trellis:2:8", 10.4}, std::pair{"trellis:2:10", 10.9}, std::pair{"trellis:2", 11.0}}) {
    const auto s = make_scheme(spec);
    EXPECT_EQ(s->name(), spec);
    const Quantized q = s->quantize(x.data(), shape, QuantOptions{});
    EXPECT_GT(sqnr(x, decode(*s, q)), floor_db) << spec;
    EXPECT_DOUBLE_EQ(s->bits_per_weight(64, 1024, QuantOptions{}),
                     static_cast<double>(q.stored_bytes()) * 8 / static_cast<double>(x.size()))
        << spec;
  }
}

TEST(Trellis, FastKeepsTheStartingCodebook) {
  const Shape shape{64, 1024};
  const auto x = gaussian(64 * 1024, 8, 0.02f);
  const auto s = make_scheme("trellis:2:8");
  QuantOptions fast;
  fast.fast = true;
  const Quantized q_fast = s->quantize(x.data(), shape, fast);
  const Quantized q = s->quantize(x.data(), shape, QuantOptions{});
  EXPECT_FALSE(same_bytes(q_fast.parts.at("codebook"), q.parts.at("codebook")));
  const double fast_db = sqnr(x, decode(*s, q_fast)), trained_db = sqnr(x, decode(*s, q));
  EXPECT_GT(fast_db, 10.2);
  EXPECT_GT(trained_db, fast_db);
}

TEST(Trellis, OptimisedMatchesReference) {
  struct Case {
    std::string spec;
    Shape shape;
    int64_t group;
    Granularity granularity;
  };
  const std::vector<Case> cases = {
      {"trellis:2:8", {16, 512}, 0, Granularity::kDefault},
      {"trellis:2:10", {5, 300}, 64, Granularity::kGroup},
      {"trellis:2:8", {3, 200}, 24, Granularity::kGroup},  // groups of an odd number of 8s
      {"trellis:2:8", {32, 264}, 24, Granularity::kGroup},  // ... decoded through the pair table
      {"trellis:2", {3, 264}, 0, Granularity::kChannel},
      {"trellis:2:8", {2, 5000}, 0, Granularity::kDefault},  // two trellis segments per row
      {"trellis:2:8", {4, 5000}, 24, Granularity::kGroup},   // ... a group across their boundary
      {"trellis:3:8", {4, 200}, 40, Granularity::kGroup},
      {"trellis:1:6", {4, 200}, 0, Granularity::kDefault},
  };
  std::vector<float> importance(5000);
  for (size_t i = 0; i < importance.size(); ++i) importance[i] = 0.25f + static_cast<float>(i % 7);
  for (const Case& c : cases) {
    for (bool weighted : {false, true}) {
      const std::string label = c.spec + " " + shape_to_string(c.shape) + (weighted ? " weighted" : "");
      const auto x = gaussian(shape_numel(c.shape), 2);
      const auto s = make_scheme(c.spec);
      QuantOptions o;
      o.group_size = c.group;
      o.granularity = c.granularity;
      o.importance = weighted ? importance.data() : nullptr;
      const Quantized fast = s->quantize(x.data(), c.shape, o);
      o.reference = true;
      const Quantized ref = s->quantize(x.data(), c.shape, o);
      expect_same(fast, ref, label);
      const auto y = decode(*s, fast), y_ref = decode(*s, fast, true);
      EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0) << label;
      // The unweighted error: importance moves some of it to the light columns.
      const double floor_db = c.spec == "trellis:1:6" ? 3.0 : weighted ? 7.5 : 9.0;
      EXPECT_GT(sqnr(x, y), floor_db) << label;
    }
  }
}

TEST(Trellis, TableDecodersMatchTheReference) {
  // Both fast decoders, eight weights a step, the last steps of each segment one weight
  // at a time, groups across a segment boundary. Single lookups (L + K > 14, or fewer
  // weights than a quarter of the pair table's entries): windows of up to 7 K + L = 42
  // bits from one 64-bit word. Pair tables: a 32-bit word while 7 K + L <= 32 (up to
  // trellis:3:11), a 64-bit one above (trellis:4).
  struct Case {
    std::string spec;
    Shape shape;
    int64_t group;
  };
  const std::vector<Case> cases = {
      {"trellis:1:14", {2, 264}, 0},   {"trellis:2", {1, 200}, 0},      {"trellis:3:14", {2, 264}, 0},
      {"trellis:4:14", {2, 264}, 0},   {"trellis:3:12", {1, 4500}, 24}, {"trellis:4:11", {1, 4200}, 40},
      {"trellis:1:10", {2, 4500}, 24}, {"trellis:3:9", {3, 4200}, 40},  {"trellis:3:11", {2, 4500}, 24},
      {"trellis:4:8", {3, 4500}, 24},  {"trellis:4", {3, 4200}, 40},
  };
  for (const Case& c : cases) {
    const auto x = gaussian(shape_numel(c.shape), 11);
    const auto s = make_scheme(c.spec);
    QuantOptions o;
    o.fast = true;
    o.group_size = c.group;
    const Quantized q = s->quantize(x.data(), c.shape, o);
    const auto y = decode(*s, q), y_ref = decode(*s, q, true);
    EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0) << c.spec;
    EXPECT_GT(sqnr(x, y), 4.0) << c.spec;
  }
}

TEST(Trellis, FastDecodersConvertEveryHalfFloatLikeTheReference) {
  // The AVX2 decoders convert f16 codebook values themselves (the pair tables of every K
  // up to L + K = 14, with 32- and 64-bit words; the single lookups above that): every
  // bit pattern (subnormals, infinities, NaNs) must come out as the reference's
  // conversion does, whatever the scale dtype. The 16 x 520 rows end in a partial group
  // of 256 (padding), or in a whole group of 40 whose last weights are decoded one at a
  // time (their word would run past the row's bytes).
  for (const auto& [spec, n_states] :
       {std::pair{"trellis:2", 4096u}, std::pair{"trellis:2:10", 1024u}, std::pair{"trellis:3", 2048u},
        std::pair{"trellis:3:10", 1024u}, std::pair{"trellis:4", 1024u}, std::pair{"trellis:1", 4096u},
        std::pair{"trellis:3:12", 4096u}, std::pair{"trellis:4:12", 4096u}}) {
    for (const int64_t group : {0, 40}) {
      for (const DType scale_dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
        const auto x = gaussian(16 * 520, 5);
        const auto s = make_scheme(spec);
        QuantOptions o;
        o.fast = true;
        o.group_size = group;
        o.scale_dtype = scale_dtype;
        Quantized q = s->quantize(x.data(), Shape{16, 520}, o);
        std::vector<float> y_ref(x.size()), y(x.size());
        const uint32_t parts = 65536 / n_states;
        for (uint32_t part = 0; part < parts; ++part) {
          uint16_t* book = q.parts.at("codebook").mutable_data_as<uint16_t>();
          for (uint32_t i = 0; i < n_states; ++i) book[i] = static_cast<uint16_t>(i * parts + (i + part) % parts);
          s->dequantize(q, y.data());
          s->dequantize_reference(q, y_ref.data());
          EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0)
              << spec << " group " << group << " part " << part;
        }
      }
    }
  }
}

TEST(Trellis, CachedPairTableFollowsTheCodebook) {
  // The decoder reuses its pair table while K and the codebook's bytes stay the same:
  // calls that alternate between tensors (different codebooks, both state sizes, and
  // trellis:2 and :3 with the same --fast codebook but tables of other windows) and
  // repeat one tensor must each decode like the reference, bit for bit.
  const auto x = gaussian(32 * 512, 9), x2 = gaussian(32 * 512, 10, 3.0f);
  QuantOptions o;
  o.fast = true;
  std::vector<Quantized> qs;
  std::vector<std::unique_ptr<Scheme>> schemes;
  for (const char* spec : {"trellis:2", "trellis:2:10", "trellis:3:10"}) {
    for (const auto* data : {&x, &x2}) {
      schemes.push_back(make_scheme(spec));
      qs.push_back(schemes.back()->quantize(data->data(), Shape{32, 512}, o));
    }
  }
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < qs.size(); ++i) {
      for (int repeat = 0; repeat < 2; ++repeat) {
        EXPECT_EQ(decode(*schemes[i], qs[i]), decode(*schemes[i], qs[i], true)) << round << " " << i;
      }
    }
  }
}

TEST(Trellis, TensorsOfAnEarlierDefaultDecodeByTheirOwnStateBits) {
  // Until the default L became 11 for K = 3, "trellis:3" wrote L = 12. Such a tensor
  // names the scheme "trellis:3" and records state_bits 12: it decodes by its own L,
  // like the same tensor named trellis:3:12.
  const auto x = gaussian(8 * 512, 12);
  const auto s12 = make_scheme("trellis:3:12");
  QuantOptions o;
  o.fast = true;
  Quantized q = s12->quantize(x.data(), Shape{8, 512}, o);
  const auto y12 = decode(*s12, q);
  q.scheme = "trellis:3";
  const auto now = make_scheme("trellis:3");
  EXPECT_EQ(decode(*now, q), y12);
  EXPECT_EQ(decode(*now, q, true), y12);
}

TEST(Trellis, BytesDoNotDependOnThreads) {
  const Shape shape{24, 768};
  const auto x = gaussian(24 * 768, 3);
  const auto s = make_scheme("trellis:2:10");
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Quantized one = s->quantize(x.data(), shape, QuantOptions{});
  omp_set_num_threads(3);
  const Quantized three = s->quantize(x.data(), shape, QuantOptions{});
  omp_set_num_threads(saved);
  expect_same(one, three, "1 vs 3 threads");
}

TEST(Trellis, PadsRowsToTheGroup) {
  const Shape shape{6, 300};
  const auto x = gaussian(6 * 300, 4);
  const auto s = make_scheme("trellis:2:8");
  const Quantized q = s->quantize(x.data(), shape, QuantOptions{});
  EXPECT_EQ(q.params.at("padded_cols"), "512");
  EXPECT_EQ(q.params.at("group_size"), "256");
  EXPECT_EQ(q.parts.at("scales").shape(), (Shape{6, 2}));
  // 8 - 2 + 2 * 512 bits per row: 129 bytes.
  EXPECT_EQ(q.parts.at("codes").shape(), (Shape{6, 129}));
  EXPECT_GT(sqnr(x, decode(*s, q)), 9.5);
}

TEST(Trellis, ScalarAndEmptyTensors) {
  const auto s = make_scheme("trellis:2:8");
  const float one = 0.5f;
  const Quantized q = s->quantize(&one, Shape{}, QuantOptions{});
  float back = 0;
  s->dequantize(q, &back);
  EXPECT_NEAR(back, one, 0.05f);
  const Quantized empty = s->quantize(nullptr, Shape{0, 5}, QuantOptions{});
  EXPECT_EQ(empty.parts.at("codes").numel(), 0u);
  s->dequantize(empty, nullptr);
}

TEST(Trellis, ZerosStayZeroAndImportanceMovesError) {
  const auto s = make_scheme("trellis:2:8");
  std::vector<float> zeros(4 * 256, 0.0f);
  const auto y0 = decode(*s, s->quantize(zeros.data(), Shape{4, 256}, QuantOptions{}));
  for (float v : y0) ASSERT_EQ(v, 0.0f);

  const auto x = gaussian(16 * 256, 5);
  std::vector<float> w(256, 1.0f);
  for (int c = 0; c < 32; ++c) w[c] = 50.0f;
  QuantOptions weighted;
  weighted.importance = w.data();
  const auto plain = decode(*s, s->quantize(x.data(), Shape{16, 256}, QuantOptions{}));
  const auto shifted = decode(*s, s->quantize(x.data(), Shape{16, 256}, weighted));
  EXPECT_LT(measure_error(x.data(), shifted.data(), 16 * 256, 256, w.data()).weighted_sse,
            measure_error(x.data(), plain.data(), 16 * 256, 256, w.data()).weighted_sse);
}

TEST(Trellis, MalformedSpecsAndOptionsAreUsageErrors) {
  for (const char* bad : {"trellis", "trellis:0", "trellis:5", "trellis:2:4", "trellis:2:15", "trellis:2:12:1",
                          "trellis:x"}) {
    EXPECT_EQ(test::kind_of([&] { make_scheme(bad); }), ErrorKind::kUsage) << bad;
  }
  const auto x = gaussian(2 * 256, 6);
  QuantOptions odd;
  odd.group_size = 12;
  EXPECT_EQ(test::kind_of([&] { make_scheme("trellis:2")->quantize(x.data(), Shape{2, 256}, odd); }),
            ErrorKind::kUsage);
  QuantOptions tensor;
  tensor.granularity = Granularity::kTensor;
  EXPECT_EQ(test::kind_of([&] { make_scheme("trellis:2")->quantize(x.data(), Shape{2, 256}, tensor); }),
            ErrorKind::kUsage);
}

TEST(Trellis, InconsistentPartsAndParamsAreInvalidInput) {
  const auto x = gaussian(4 * 256, 7);
  const auto s = make_scheme("trellis:2:8");
  const Quantized good = s->quantize(x.data(), Shape{4, 256}, QuantOptions{});
  std::vector<float> y(x.size() * 2);
  auto expect_invalid = [&](const Quantized& q, const std::string& what) {
    EXPECT_EQ(test::kind_of([&] { s->dequantize(q, y.data()); }), ErrorKind::kInvalidInput) << what;
    EXPECT_EQ(test::kind_of([&] { s->dequantize_reference(q, y.data()); }), ErrorKind::kInvalidInput) << what;
  };
  for (const char* name : {"codes", "scales", "codebook"}) {
    Quantized q = good;
    q.parts.erase(name);
    expect_invalid(q, std::string("missing ") + name);
  }
  {
    Quantized q = good;
    q.parts["codebook"] = Tensor::zeros(DType::kF16, {128});
    expect_invalid(q, "short codebook");
  }
  {
    Quantized q = good;
    q.parts["scales"] = Tensor::zeros(DType::kU8, {4, 1});
    expect_invalid(q, "u8 scales");
  }
  {
    Quantized q = good;
    q.parts["codes"] = Tensor::zeros(DType::kU8, {4, 64});
    expect_invalid(q, "short codes");
  }
  for (const auto& [key, value] : {std::pair{"bits", "3"}, std::pair{"state_bits", "10"}, std::pair{"group_size", "12"},
                                   std::pair{"group_size", "0"}, std::pair{"padded_cols", "512"},
                                   std::pair{"segment", "1024"}, std::pair{"bits", "two"}}) {
    Quantized q = good;
    q.params[key] = value;
    expect_invalid(q, std::string(key) + "=" + value);
  }
  {
    Quantized q = good;
    q.params.erase("state_bits");
    expect_invalid(q, "no state_bits");
  }
  {
    Quantized q = good;
    q.shape = Shape{2, 512};
    expect_invalid(q, "other shape");
  }
}

}  // namespace
}  // namespace tk::quant
