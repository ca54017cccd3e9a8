// Rank selection: the clustering pieces on hand-made similarities, and the whole method
// picking the planted rank of small synthetic CP and nonnegative RESCAL models.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "test_util.h"
#include "tk/decomp/format.h"
#include "tk/decomp/rank_select.h"

namespace tk::decomp {
namespace {

// Realisations that each find the same k components in a shuffled order: similarity 1
// within a component, `cross` between different ones.
std::vector<double> shuffled_similarity(int n_real, int k, double cross, std::vector<int>& truth) {
  std::mt19937 rng(5);
  truth.assign(n_real * k, 0);
  for (int r = 0; r < n_real; ++r) {
    std::vector<int> perm(k);
    for (int c = 0; c < k; ++c) perm[c] = c;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int c = 0; c < k; ++c) truth[r * k + c] = perm[c];
  }
  const int total = n_real * k;
  std::vector<double> sim(total * total);
  for (int i = 0; i < total; ++i)
    for (int j = 0; j < total; ++j) sim[i * total + j] = truth[i] == truth[j] ? 1.0 : cross;
  return sim;
}

TEST(RankSelect, ClustersShuffledRealisations) {
  std::vector<int> truth;
  std::vector<double> sim = shuffled_similarity(6, 4, 0.1, truth);
  std::vector<int> cluster = cluster_realisations(sim, 6, 4);
  // Same partition as the truth (cluster labels may be renamed).
  for (size_t i = 0; i < truth.size(); ++i)
    for (size_t j = 0; j < truth.size(); ++j) EXPECT_EQ(truth[i] == truth[j], cluster[i] == cluster[j]);
  // Each realisation contributes one member to each cluster.
  for (int r = 0; r < 6; ++r) {
    std::vector<int> seen(4, 0);
    for (int c = 0; c < 4; ++c) ++seen[cluster[r * 4 + c]];
    for (int v : seen) EXPECT_EQ(v, 1);
  }
  for (double s : cluster_silhouettes(sim, cluster, 4)) EXPECT_NEAR(s, 1.0, 1e-12);
}

TEST(RankSelect, UnrelatedComponentsScoreLow) {
  const int n_real = 6, k = 3, total = n_real * k;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(-0.3, 0.3);
  std::vector<double> sim(total * total);
  for (int i = 0; i < total; ++i)
    for (int j = 0; j <= i; ++j) sim[i * total + j] = sim[j * total + i] = i == j ? 1.0 : u(rng);
  std::vector<int> cluster = cluster_realisations(sim, n_real, k);
  for (double s : cluster_silhouettes(sim, cluster, k)) EXPECT_LT(s, 0.3);
}

TEST(RankSelect, ChoosesLargestStableLevelledRank) {
  std::vector<RankScore> scores(5);
  const double err[] = {0.5, 0.2, 0.011, 0.0105, 0.0102};
  const double sil[] = {0.99, 0.97, 0.95, 0.40, 0.20};
  for (int i = 0; i < 5; ++i) {
    scores[i].rank = i + 2;
    scores[i].rel_error = err[i];
    scores[i].silhouette_min = sil[i];
  }
  EXPECT_EQ(choose_rank(scores, 0.75, 0.05), 4);
  EXPECT_TRUE(scores[2].stable && scores[2].levelled);
  EXPECT_FALSE(scores[1].levelled);
  EXPECT_FALSE(scores[3].stable);
  // No stable rank has levelled off: the largest stable rank.
  scores[2].silhouette_min = 0.5;
  EXPECT_EQ(choose_rank(scores, 0.75, 0.05), 3);
  // Nothing stable: the most stable.
  for (auto& s : scores) s.silhouette_min = 0.1 * s.rank;
  EXPECT_EQ(choose_rank(scores, 0.75, 0.05), 6);
}

TEST(RankSelect, RejectsBadRanges) {
  std::vector<double> x(16, 1.0);
  DenseView<double> v{x.data(), {4, 4}};
  RankSelectOptions o;
  o.min_rank = 3;
  o.max_rank = 2;
  EXPECT_EQ(test::kind_of([&] { select_rank_cp(v, o); }), ErrorKind::kUsage);
  o.max_rank = 3;
  o.realisations = 1;
  EXPECT_EQ(test::kind_of([&] { select_rank_cp(v, o); }), ErrorKind::kUsage);
  std::vector<double> neg(4 * 4 * 2, -1.0);
  o.realisations = 3;
  EXPECT_EQ(test::kind_of([&] { select_rank_rescal({neg.data(), {4, 4, 2}}, o); }), ErrorKind::kInvalidInput);
}

std::vector<double> uniform(size_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

TEST(RankSelect, FindsPlantedCpRank) {
  const Shape shape = {14, 13, 12};
  const int planted = 3;
  CpResult model;
  model.lambda.assign(planted, 1.0);
  for (size_t n = 0; n < 3; ++n) model.factors.push_back(uniform(shape[n] * planted, 100 + n, 0.0, 1.0));
  std::vector<double> x = reconstruct(from_cp("x", shape, DType::kF64, model));
  RankSelectOptions o;
  o.min_rank = 1;
  o.max_rank = 5;
  o.realisations = 5;
  o.seed = 1;
  RankSelection sel = select_rank_cp({x.data(), shape}, o);
  ASSERT_EQ(sel.scores.size(), 5u);
  EXPECT_EQ(sel.chosen, planted);
  EXPECT_GT(sel.scores[2].silhouette_min, 0.9);
  EXPECT_LT(sel.scores[2].rel_error, 0.03);
  EXPECT_GT(sel.scores[2].corcondia, 90.0);
}

TEST(RankSelect, FindsPlantedRescalRank) {
  const int64_t n = 20, m = 4;
  const int planted = 3;
  RescalResult model;
  model.n = n;
  model.m = m;
  // Blocky A (each entity mostly in one group) as in relational data.
  model.a = uniform(n * planted, 200, 0.0, 0.1);
  for (int64_t i = 0; i < n; ++i) model.a[i * planted + i % planted] += 1.0;
  model.r = uniform(m * planted * planted, 201, 0.0, 1.0);
  std::vector<double> x = reconstruct(from_rescal("x", {n, n, m}, DType::kF64, model));
  RankSelectOptions o;
  o.min_rank = 2;
  o.max_rank = 5;
  o.realisations = 5;
  o.seed = 2;
  RankSelection sel = select_rank_rescal({x.data(), {n, n, m}}, o);
  EXPECT_EQ(sel.chosen, planted);
  EXPECT_TRUE(std::isnan(sel.scores[0].corcondia));
}

TEST(RankSelect, RealisationsSplitBetweenProcessesScoreAsOne) {
  const Shape shape = {10, 9, 8};
  CpResult model;
  model.lambda.assign(2, 1.0);
  for (size_t n = 0; n < 3; ++n) model.factors.push_back(uniform(shape[n] * 2, 300 + n, 0.0, 1.0));
  std::vector<double> x = reconstruct(from_cp("x", shape, DType::kF64, model));
  const DenseView<double> v{x.data(), shape};
  RankSelectOptions o;
  o.min_rank = 1;
  o.max_rank = 3;
  o.realisations = 3;
  o.seed = 5;
  const RankSelection whole = select_rank_cp(v, o);
  // Three "processes", each fitting every third realisation, gathered in reverse.
  std::vector<Realisation> gathered;
  for (int p = 2; p >= 0; --p) {
    int j = 0;
    for (Realisation& r : realise_cp(v, o, [&](int, int) { return j++ % 3 == p; })) gathered.push_back(std::move(r));
  }
  ASSERT_EQ(gathered.size(), 9u);
  const RankSelection split = score_cp(v, o, gathered);
  EXPECT_EQ(split.chosen, whole.chosen);
  ASSERT_EQ(split.scores.size(), whole.scores.size());
  for (size_t i = 0; i < whole.scores.size(); ++i) {
    EXPECT_EQ(split.scores[i].rel_error, whole.scores[i].rel_error) << "bit for bit: the same fits";
    EXPECT_EQ(split.scores[i].silhouette_min, whole.scores[i].silhouette_min);
    EXPECT_EQ(split.scores[i].corcondia, whole.scores[i].corcondia);
  }
  // A grid with a hole, a realisation twice, or one of another shape is refused.
  std::vector<Realisation> holed(gathered.begin() + 1, gathered.end());
  test::expect_error_exact([&] { score_cp(v, o, holed); }, ErrorKind::kInvalidInput,
                           "1 of 9 realisations missing (the first: realisation 3 of rank 1)");
  std::vector<Realisation> twice = gathered;
  twice.push_back(gathered[0]);
  test::expect_error_exact([&] { score_cp(v, o, twice); }, ErrorKind::kInvalidInput,
                           "realisation 3 of rank 1 is given twice");
  std::vector<Realisation> other = gathered;
  other[0].modes[0].pop_back();
  test::expect_error_exact([&] { score_cp(v, o, other); }, ErrorKind::kInvalidInput,
                           "realisation 3 of rank 1 does not match the tensor");
}

}  // namespace
}  // namespace tk::decomp
