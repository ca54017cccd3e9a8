// The budget's snap rule (allocation_drop_snaps) on real quantizers: a matrix near
// Q4_1's grid (a grid plus a small change, as a fine-tune of a quantized model is)
// loses the candidates that land on that grid; the same matrix exactly on the grid,
// or off every grid, loses none.
#include <algorithm>
#include <cmath>
#include <random>

#include "test_util.h"
#include "tk/io/gguf_rules.h"
#include "tk/quant/allocation.h"
#include "tk/quant/gguf_blocks.h"
#include "tk/quant/measure.h"

namespace tk::quant {
namespace {

constexpr int64_t kRows = 128, kCols = 256;

struct Candidate {
  std::string name;
  io::GgmlType type;
};

// llama.cpp's types on a 256-wide matrix, as tquant offers them for GGUF output.
const std::vector<Candidate>& candidates() {
  static const std::vector<Candidate> c = {
      {"Q4_0", io::GgmlType::kQ4_0}, {"Q5_0", io::GgmlType::kQ5_0}, {"Q8_0", io::GgmlType::kQ8_0},
      {"IQ4_NL", io::GgmlType::kIQ4_NL}, {"Q3_K", io::GgmlType::kQ3_K}, {"Q6_K", io::GgmlType::kQ6_K},
      {"Q4_1", io::GgmlType::kQ4_1}, {"Q5_1", io::GgmlType::kQ5_1}, {"Q4_K", io::GgmlType::kQ4_K},
  };
  return c;
}

Candidates measure(const std::vector<float>& x, double* signal) {
  Candidates t;
  t.items.resize(1), t.usable.resize(1), t.estimates.resize(1), t.samples.resize(1);
  for (const Candidate& c : candidates()) {
    const GgufTwin twin = *tensorkit_twin(c.type);
    const Estimate e = estimate_error(*make_scheme(twin.scheme), x, {kRows, kCols}, twin.options, nullptr);
    t.items[0].bytes.push_back(e.bytes);
    t.items[0].error.push_back(e.error);
    t.estimates[0].push_back(e);
    t.usable[0].push_back(c.name);
  }
  *signal = 0;
  for (float v : x) *signal += static_cast<double>(v) * v;
  return t;
}

std::vector<float> gaussian(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0, 0.02F);
  std::vector<float> x(kRows * kCols);
  for (float& v : x) v = n(rng);
  return x;
}

// x restored from Q4_1: every value on that grid.
std::vector<float> on_q4_1(const std::vector<float>& x) {
  const GgufTwin twin = *tensorkit_twin(io::GgmlType::kQ4_1);
  const auto scheme = make_scheme(twin.scheme);
  const Quantized q = scheme->quantize(x.data(), {kRows, kCols}, twin.options);
  std::vector<float> y(x.size());
  scheme->dequantize(q, y.data());
  return y;
}

std::vector<std::string> dropped(const std::vector<float>& x, DType source) {
  double signal = 0;
  Candidates t = measure(x, &signal);
  const std::vector<std::string> before = t.usable[0];
  allocation_drop_snaps(t, 0, signal, x.size(), source);
  std::vector<std::string> out;
  for (const std::string& c : before)
    if (std::find(t.usable[0].begin(), t.usable[0].end(), c) == t.usable[0].end()) out.push_back(c);
  return out;
}

TEST(Snaps, NearTheGridTheGridsCandidatesGo) {
  std::vector<float> x = on_q4_1(gaussian(1));
  // A change of rank one, about a tenth of Q4_1's step (a fine-tune's size).
  std::mt19937 rng(2);
  std::normal_distribution<float> n(0, 1);
  std::vector<float> u(kRows), v(kCols);
  for (float& a : u) a = n(rng);
  for (float& a : v) a = n(rng);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c) x[r * kCols + c] += 3e-4F * u[r] * v[c];
  const std::vector<std::string> d = dropped(x, DType::kF32);
  // Q4_1 lands on the old grid; Q5_1, which holds Q4_1's levels at half its step, lands
  // on the same plateau (more bits, hardly less error).
  EXPECT_NE(std::find(d.begin(), d.end(), "Q4_1"), d.end());
  EXPECT_NE(std::find(d.begin(), d.end(), "Q5_1"), d.end());
  for (const char* kept : {"Q4_0", "Q5_0", "Q8_0", "IQ4_NL", "Q3_K", "Q6_K"})
    EXPECT_EQ(std::find(d.begin(), d.end(), kept), d.end()) << kept;
}

TEST(Snaps, OnTheGridNothingGoes) {
  // Exactly on the grid (a quantized model stored as floats): landing there loses
  // nothing, and the candidates stay.
  EXPECT_TRUE(dropped(on_q4_1(gaussian(3)), DType::kF32).empty());
}

TEST(Snaps, OffEveryGridNothingGoes) {
  EXPECT_TRUE(dropped(gaussian(4), DType::kF32).empty());
  EXPECT_TRUE(dropped(gaussian(5), DType::kBF16).empty());
}

TEST(Snaps, LosslessFollowsTheSourcesPrecision) {
  EXPECT_DOUBLE_EQ(lossless_sqnr_db(DType::kF32), 60);
  EXPECT_DOUBLE_EQ(lossless_sqnr_db(DType::kF16), 60);
  EXPECT_NEAR(lossless_sqnr_db(DType::kBF16), 43.0, 0.1);
  EXPECT_LT(lossless_sqnr_db(DType::kF8E4M3), lossless_sqnr_db(DType::kBF16));
}

TEST(Snaps, FewCandidatesDrawNoLine) {
  Candidates t;
  t.items = {BudgetItem{{100, 200, 300}, {1e-9, 1.0, 0.5}}};
  t.usable = {{"a", "b", "c"}};
  t.estimates.resize(1);
  t.estimates[0].resize(3);
  t.samples.resize(1);
  EXPECT_TRUE(allocation_drop_snaps(t, 0, 1000.0, 1000, DType::kF32).empty());
}

// allocation_drop_dominated: a candidate whose difference from a cheaper one is known
// exactly (margin 0) and is no better goes; one the estimates cannot tell apart stays.
Candidates two(const std::vector<double>& errors, const std::vector<uint64_t>& bytes, double se) {
  Candidates t;
  t.items = {BudgetItem{bytes, errors}};
  t.usable = {{"cheap", "dear"}};
  t.estimates.resize(1), t.samples.resize(1);
  for (double e : errors) {
    Estimate est;
    est.error = e, est.se = se, est.exact = se == 0;
    t.estimates[0].push_back(est);
  }
  return t;
}

TEST(Dominated, NoBetterAndDearerGoesWhenKnownExactly) {
  Candidates t = two({0.5, 0.5}, {100, 120}, 0);
  EXPECT_EQ(allocation_drop_dominated(t, 0), 1u);
  EXPECT_EQ(t.usable[0], std::vector<std::string>{"cheap"});
}

TEST(Dominated, WithinTheMarginBothStay) {
  Candidates t = two({0.5, 0.5}, {100, 120}, 0.01);
  EXPECT_EQ(allocation_drop_dominated(t, 0), 0u);
  t = two({0.5, 0.49}, {100, 120}, 0);  // better, exactly: stays
  EXPECT_EQ(allocation_drop_dominated(t, 0), 0u);
}

TEST(Dominated, Q5_1OnQ4_1sGridGoes) {
  // Values on Q4_1's grid: Q5_1 holds the same levels, so its error is Q4_1's at more
  // bytes, measured whole on both (margin 0).
  const std::vector<float> x = on_q4_1(gaussian(6));
  Candidates t;
  t.items.resize(1), t.usable.resize(1), t.estimates.resize(1), t.samples.resize(1);
  for (io::GgmlType type : {io::GgmlType::kQ4_1, io::GgmlType::kQ5_1}) {
    const GgufTwin twin = *tensorkit_twin(type);
    const Estimate e = estimate_error(*make_scheme(twin.scheme), x, {kRows, kCols}, twin.options, nullptr);
    t.items[0].bytes.push_back(e.bytes);
    t.items[0].error.push_back(e.error);
    t.estimates[0].push_back(e);
    t.usable[0].push_back(type == io::GgmlType::kQ4_1 ? "Q4_1" : "Q5_1");
  }
  ASSERT_LE(t.items[0].error[0], t.items[0].error[1]);
  EXPECT_EQ(allocation_drop_dominated(t, 0), 1u);
  EXPECT_EQ(t.usable[0], std::vector<std::string>{"Q4_1"});
}

}  // namespace
}  // namespace tk::quant
