// Decompositions as stored tensors: metadata round trip, part checks, and dense
// reconstruction against plain-loop references.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "test_util.h"
#include "tk/decomp/format.h"

namespace tk::decomp {
namespace {

std::vector<double> gaussian(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::vector<double> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(DecompFormat, CpReconstructMatchesLoops) {
  const Shape shape = {3, 4, 5, 2};
  const int rank = 3;
  CpResult r;
  r.lambda = {2.0, -1.0, 0.5};
  for (size_t n = 0; n < shape.size(); ++n) r.factors.push_back(gaussian(shape[n] * rank, n + 1));
  Decomposition d = from_cp("w", shape, DType::kF32, r);
  std::vector<double> want(shape_numel(shape), 0.0);
  size_t e = 0;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 5; ++k)
        for (int64_t l = 0; l < 2; ++l, ++e)
          for (int c = 0; c < rank; ++c)
            want[e] += r.lambda[c] * r.factors[0][i * rank + c] * r.factors[1][j * rank + c] *
                       r.factors[2][k * rank + c] * r.factors[3][l * rank + c];
  expect_near_all(reconstruct(d), want, 1e-12);
  EXPECT_EQ(d.parts.size(), 5u);
  EXPECT_EQ(d.part_name(d.parts[0]), "w.cp.lambda");
  EXPECT_EQ(d.part_name(d.parts[4]), "w.cp.factor.3");
  EXPECT_EQ(d.parts[2].shape, (Shape{4, 3}));
}

TEST(DecompFormat, TuckerReconstructMatchesLoops) {
  const Shape shape = {4, 3, 5}, ranks = {2, 3, 2};
  TuckerResult r;
  r.ranks = ranks;
  r.core = gaussian(12, 7);
  for (size_t n = 0; n < 3; ++n) r.factors.push_back(gaussian(shape[n] * ranks[n], 10 + n));
  Decomposition d = from_tucker("t", shape, DType::kF64, r);
  std::vector<double> want(60, 0.0);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 5; ++k)
        for (int64_t a = 0; a < 2; ++a)
          for (int64_t b = 0; b < 3; ++b)
            for (int64_t c = 0; c < 2; ++c)
              want[(i * 3 + j) * 5 + k] += r.core[(a * 3 + b) * 2 + c] * r.factors[0][i * 2 + a] *
                                           r.factors[1][j * 3 + b] * r.factors[2][k * 2 + c];
  expect_near_all(reconstruct(d), want, 1e-12);
}

TEST(DecompFormat, TtReconstructMatchesLoops) {
  TtResult r;
  r.shape = {3, 4, 2};
  r.ranks = {1, 2, 3, 1};
  for (size_t k = 0; k < 3; ++k) r.cores.push_back(gaussian(r.ranks[k] * r.shape[k] * r.ranks[k + 1], 20 + k));
  // Stored for a source of another shape of the same size (--shape).
  Decomposition d = from_tt("m", {6, 4}, DType::kBF16, r);
  std::vector<double> want(24, 0.0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 2; ++k)
        for (int64_t a = 0; a < 2; ++a)
          for (int64_t b = 0; b < 3; ++b)
            want[(i * 4 + j) * 2 + k] +=
                r.cores[0][i * 2 + a] * r.cores[1][(a * 4 + j) * 3 + b] * r.cores[2][b * 2 + k];
  expect_near_all(reconstruct(d), want, 1e-12);
  EXPECT_EQ(d.shape, (Shape{6, 4}));
  EXPECT_EQ(d.parts[1].shape, (Shape{2, 4, 3}));
}

// A RESCAL result of n entities, m relations and this rank, with Gaussian A and R.
RescalResult gaussian_rescal(int64_t n, int64_t m, int64_t rank, uint64_t seed) {
  RescalResult r;
  r.n = n;
  r.m = m;
  r.a = gaussian(n * rank, seed);
  r.r = gaussian(m * rank * rank, seed + 1);
  return r;
}

TEST(DecompFormat, RescalReconstructMatchesLoops) {
  const int64_t n = 5, m = 3, rank = 2;
  const RescalResult r = gaussian_rescal(n, m, rank, 30);
  Decomposition d = from_rescal("rel", {n, n, m}, DType::kF32, r);
  std::vector<double> want(n * n * m, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < m; ++k)
        for (int64_t a = 0; a < rank; ++a)
          for (int64_t b = 0; b < rank; ++b)
            want[(i * n + j) * m + k] += r.a[i * rank + a] * r.r[(k * rank + a) * rank + b] * r.a[j * rank + b];
  expect_near_all(reconstruct(d), want, 1e-12);
  EXPECT_EQ(d.part_name(d.parts[1]), "rel.rescal.R");
  // Stored as [R, R, m]: R[:, :, k] is the R_k of slice k.
  EXPECT_EQ(d.parts[1].shape, (Shape{rank, rank, m}));
  EXPECT_EQ(d.parts[1].values[(1 * rank + 0) * m + 2], r.r[(2 * rank + 1) * rank + 0]);
}

TEST(DecompFormat, RescalOlderLayoutIsReadAsStored) {
  const int64_t n = 4, m = 2, rank = 2;
  const RescalResult r = gaussian_rescal(n, m, rank, 40);
  Decomposition d = from_rescal("rel", {n, n, m}, DType::kF64, r);
  d.factor_dtype = DType::kF64;
  EXPECT_EQ(parse_decomp_metadata(decomp_metadata({d}, {}, std::nullopt))[0].parts[1].shape, (Shape{rank, rank, m}));
  // A file from before "r_layout": R as [m, R, R], which is RescalResult's own order.
  d.notes.erase("r_layout");
  std::vector<Decomposition> old = parse_decomp_metadata(decomp_metadata({d}, {}, std::nullopt));
  ASSERT_EQ(old.size(), 1u);
  ASSERT_EQ(old[0].parts[1].shape, (Shape{m, rank, rank}));
  set_part(old[0], 0, part_tensor(d, d.parts[0]));
  Tensor stacked = Tensor::empty(DType::kF64, {m, rank, rank});
  std::copy(r.r.begin(), r.r.end(), stacked.mutable_data_as<double>());
  set_part(old[0], 1, stacked);
  expect_near_all(reconstruct(old[0]), reconstruct(from_rescal("rel", {n, n, m}, DType::kF64, r)), 0.0);
  test::expect_error_exact(
      [&] {
        parse_decomp_metadata(std::string(R"({"decomp":{"rel":{"method":"rescal","dtype":"F64","shape":[4,4,2],)"
                                          R"("ranks":[2],"r_layout":"k,r,r"}}})"));
      },
      ErrorKind::kInvalidInput, "tdecomp metadata: unknown RESCAL 'r_layout'", "rel");
}

TEST(DecompFormat, KeptTensorsAreListedBesideDecompositions) {
  const std::string tk = decomp_metadata({}, {{"w", Method::kTucker}}, std::string(R"({"provenance":[]})"));
  EXPECT_TRUE(parse_decomp_metadata(tk).empty());  // a tdecomp output all the same
  std::vector<KeptTensor> kept = parse_kept_metadata(tk);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].name, "w");
  EXPECT_EQ(kept[0].method, Method::kTucker);
  EXPECT_EQ(metadata_without_decomp(tk), std::optional<std::string>(R"({"provenance":[]})"));
  EXPECT_TRUE(parse_kept_metadata(std::nullopt).empty());
  EXPECT_EQ(test::kind_of([] { parse_kept_metadata(std::string(R"({"decomp_kept":{"w":{"method":"svd"}}})")); }),
            ErrorKind::kInvalidInput);
}

TEST(DecompFormat, MetadataRoundTripLoadsParts) {
  TuckerResult r;
  r.ranks = {2, 2};
  r.core = {1, 2, 3, 4};
  r.factors = {gaussian(6, 1), gaussian(8, 2)};
  r.rel_error = 0.125;
  Decomposition d = from_tucker("x", {3, 4}, DType::kF16, r);
  d.factor_dtype = DType::kF32;
  d.seed = 42;
  std::string tk = decomp_metadata({d}, {}, std::string(R"({"provenance":[{"tool":"tconvert"}]})"));
  std::vector<Decomposition> parsed = parse_decomp_metadata(tk);
  ASSERT_EQ(parsed.size(), 1u);
  Decomposition& p = parsed[0];
  EXPECT_EQ(p.name, "x");
  EXPECT_EQ(p.method, Method::kTucker);
  EXPECT_EQ(p.shape, (Shape{3, 4}));
  EXPECT_EQ(p.dtype, DType::kF16);
  EXPECT_EQ(p.factor_dtype, DType::kF32);
  EXPECT_EQ(p.ranks, (std::vector<int64_t>{2, 2}));
  EXPECT_DOUBLE_EQ(p.rel_error, 0.125);
  EXPECT_EQ(p.seed, std::optional<uint64_t>(42));
  load_parts(p, [&](const std::string& name) {
    for (const auto& part : d.parts)
      if (d.part_name(part) == name) return part_tensor(d, part);
    ADD_FAILURE() << name;
    return Tensor();
  });
  // Stored as f32: each value is the f32 rounding of the original.
  for (size_t k = 0; k < d.parts.size(); ++k)
    for (size_t i = 0; i < d.parts[k].values.size(); ++i)
      EXPECT_EQ(p.parts[k].values[i], static_cast<double>(static_cast<float>(d.parts[k].values[i])));
  // Other keys of the previous `tk` value survive; removing the description leaves them.
  EXPECT_EQ(metadata_without_decomp(tk), std::optional<std::string>(R"({"provenance":[{"tool":"tconvert"}]})"));
  EXPECT_EQ(metadata_without_decomp(decomp_metadata({d}, {}, std::nullopt)), std::nullopt);
}

TEST(DecompFormat, RejectsInputWithoutDescription) {
  test::expect_error_exact([] { parse_decomp_metadata(std::nullopt); }, ErrorKind::kInvalidInput,
                           "no tdecomp metadata (not a tdecomp output)");
  test::expect_error_exact([] { parse_decomp_metadata(std::string(R"({"provenance":[]})")); },
                           ErrorKind::kInvalidInput, "no tdecomp metadata (not a tdecomp output)");
  EXPECT_EQ(test::kind_of([] { parse_decomp_metadata(std::string(R"({"decomp":{"x":{"method":"svd","dtype":"F32"}}})")); }),
            ErrorKind::kInvalidInput);
  EXPECT_EQ(test::kind_of([] {
              parse_decomp_metadata(std::string(
                  R"({"decomp":{"x":{"method":"cp","dtype":"F32","shape":[3,4],"ranks":[0],"factor_dtype":"F32"}}})"));
            }),
            ErrorKind::kInvalidInput);
}

TEST(DecompFormat, PartOfWrongShapeIsNamed) {
  CpResult r;
  r.lambda = {1.0};
  r.factors = {gaussian(3, 1), gaussian(4, 2)};
  Decomposition d = from_cp("x", {3, 4}, DType::kF32, r);
  test::expect_error_exact([&] { set_part(d, 1, Tensor::zeros(DType::kF32, {4, 1})); }, ErrorKind::kInvalidInput,
                           "stored shape [4, 1] does not match the metadata's [3, 1]", "x.cp.factor.0");
}

TEST(DecompFormat, RoundPartsIsTheStoredRounding) {
  CpResult r;
  r.lambda = {1.0 / 3.0};
  r.factors = {{0.1, 0.2, 0.3}, {1e-3, 7.77}};
  Decomposition d = from_cp("x", {3, 2}, DType::kF32, r);
  round_parts(d, DType::kBF16);
  EXPECT_EQ(d.parts[0].values[0], static_cast<double>(bf16_to_f32(f32_to_bf16(1.0f / 3.0f))));
  EXPECT_EQ(d.parts[2].values[1], static_cast<double>(bf16_to_f32(f32_to_bf16(7.77f))));
  d.factor_dtype = DType::kBF16;
  EXPECT_EQ(d.stored_bytes(), 2u * (1 + 3 + 2));
  EXPECT_EQ(d.original_bytes(), 4u * 6);
}

}  // namespace
}  // namespace tk::decomp
