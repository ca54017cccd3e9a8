// Rank selection by clustering components across perturbed realisations.
#include "tk/decomp/rank_select.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/decomp/budget.h"
#include "tk/decomp/format.h"

namespace tk::decomp {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_options(const DenseView<double>& x, const RankSelectOptions& o) {
  if (o.min_rank < 1 || o.max_rank < o.min_rank)
    throw usage_error("the rank range must satisfy 1 <= MIN <= MAX").with_option("decomp.rank_range");
  if (o.realisations < 2)
    throw usage_error("rank selection needs at least 2 realisations").with_option("decomp.realisations");
  if (!(o.noise >= 0 && o.noise < 1))
    throw usage_error("the noise level must lie in [0, 1)").with_option("decomp.noise");
  if (x.shape.size() < 2) throw invalid_input("tensor of order < 2");
}

// X * (1 + noise * U(-1, 1)), one seeded stream per (rank, realisation).
std::vector<double> perturbed(const DenseView<double>& x, double noise, uint64_t seed) {
  const uint64_t n = shape_numel(x.shape);
  std::vector<double> out(x.data, x.data + n);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (auto& v : out) v *= 1.0 + noise * u(rng);
  return out;
}

uint64_t realisation_seed(uint64_t seed, int rank, int m) {
  return seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(rank) * 1000003ull + static_cast<uint64_t>(m);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double dot_columns(const std::vector<double>& a, int64_t rows, int rank, int ca, const std::vector<double>& b, int cb) {
  double s = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const double u = a[i * rank + ca], v = b[i * rank + cb];
    s += u * v;
    na += u * u;
    nb += v * v;
  }
  return na > 0 && nb > 0 ? s / std::sqrt(na * nb) : 0.0;
}

// Similarity of components: the cosine of the rank-one tensors (the product of the
// modes' cosines, times the weights' signs), which is blind to CP's sign flips.
std::vector<double> similarity_matrix(const std::vector<const Realisation*>& real, const Shape& rows, int k) {
  const int total = static_cast<int>(real.size()) * k;
  auto sign = [](const Realisation& r, int c) { return r.lambda.empty() || r.lambda[c] >= 0 ? 1.0 : -1.0; };
  std::vector<double> sim(static_cast<size_t>(total) * total);
  for (int i = 0; i < total; ++i)
    for (int j = 0; j <= i; ++j) {
      const Realisation& a = *real[i / k];
      const Realisation& b = *real[j / k];
      double s = sign(a, i % k) * sign(b, j % k);
      for (size_t n = 0; n < a.modes.size(); ++n) s *= dot_columns(a.modes[n], rows[n], k, i % k, b.modes[n], j % k);
      sim[static_cast<size_t>(i) * total + j] = sim[static_cast<size_t>(j) * total + i] = s;
    }
  return sim;
}

// Score one rank from its realisations (components and errors).
RankScore score_rank(int k, const std::vector<const Realisation*>& real, const Shape& rows) {
  std::vector<double> errors;
  for (const Realisation* r : real) errors.push_back(r->rel_error);
  RankScore s;
  s.rank = k;
  s.rel_error = median(errors);
  s.rel_error_min = *std::min_element(errors.begin(), errors.end());
  s.corcondia = kNaN;
  if (k == 1) {
    s.silhouette_mean = s.silhouette_min = 1.0;  // one cluster: nothing to confuse it with
    return s;
  }
  std::vector<double> sim = similarity_matrix(real, rows, k);
  std::vector<int> cluster = cluster_realisations(sim, static_cast<int>(real.size()), k);
  std::vector<double> sil = cluster_silhouettes(sim, cluster, k);
  s.silhouette_min = *std::min_element(sil.begin(), sil.end());
  double sum = 0;
  for (double v : sil) sum += v;
  s.silhouette_mean = sum / k;
  return s;
}

// Each (rank, index) of the options' grid that `mine` selects, fitted in grid order.
template <typename Fit>
std::vector<Realisation> realise(const DenseView<double>& x, const RankSelectOptions& o, const RealisationFilter& mine,
                                 Fit&& fit) {
  check_options(x, o);
  std::vector<Realisation> out;
  for (int k = o.min_rank; k <= o.max_rank; ++k)
    for (int m = 0; m < o.realisations; ++m) {
      if (mine && !mine(k, m)) continue;
      const uint64_t seed = realisation_seed(o.seed, k, m);
      std::vector<double> xp = perturbed(x, o.noise, seed);
      Realisation r = fit(DenseView<double>{xp.data(), x.shape}, k, seed);
      r.rank = k;
      r.index = m;
      if (o.on_realisation) o.on_realisation(k, m, r.rel_error);
      out.push_back(std::move(r));
    }
  return out;
}

// "realisation 3 of rank 2", for messages: index is 0-based, the message 1-based.
std::string realisation_name(int rank, int index) { return fmt::format("realisation {} of rank {}", index + 1, rank); }

// Every rank's realisations, checked to be the options' grid exactly, then scored.
RankSelection score(const DenseView<double>& x, const RankSelectOptions& o, const Shape& rows, size_t modes,
                    const std::vector<Realisation>& all, std::vector<const Realisation*>* best) {
  check_options(x, o);
  const size_t ranks = static_cast<size_t>(o.max_rank - o.min_rank + 1);
  std::vector<std::vector<const Realisation*>> grid(ranks, std::vector<const Realisation*>(o.realisations, nullptr));
  for (const Realisation& r : all) {
    auto which = [&r] { return realisation_name(r.rank, r.index); };
    if (r.rank < o.min_rank || r.rank > o.max_rank || r.index < 0 || r.index >= o.realisations)
      throw invalid_input(which() + " lies outside the rank range and realisation count");
    const Realisation*& slot = grid[static_cast<size_t>(r.rank - o.min_rank)][static_cast<size_t>(r.index)];
    if (slot != nullptr) throw invalid_input(which() + " is given twice");
    if (r.modes.size() != modes || (!r.lambda.empty() && r.lambda.size() != static_cast<size_t>(r.rank)) ||
        !std::isfinite(r.rel_error))
      throw invalid_input(which() + " does not match the tensor");
    for (size_t n = 0; n < modes; ++n)
      if (r.modes[n].size() != static_cast<size_t>(rows[n]) * static_cast<size_t>(r.rank))
        throw invalid_input(which() + " does not match the tensor");
    slot = &r;
  }
  size_t missing = 0;
  std::string first;
  for (size_t i = 0; i < ranks; ++i)
    for (int m = 0; m < o.realisations; ++m) {
      if (grid[i][static_cast<size_t>(m)] != nullptr) continue;
      if (missing == 0) first = realisation_name(o.min_rank + static_cast<int>(i), m);
      ++missing;
    }
  if (missing > 0)
    throw invalid_input(fmt::format("{} of {} realisations missing (the first: {})", missing,
                                    ranks * static_cast<size_t>(o.realisations), first));
  RankSelection out;
  for (size_t i = 0; i < ranks; ++i) {
    const auto& real = grid[i];
    out.scores.push_back(score_rank(o.min_rank + static_cast<int>(i), real, rows));
    if (best)
      best->push_back(*std::min_element(real.begin(), real.end(), [](const Realisation* a, const Realisation* b) {
        return a->rel_error < b->rel_error;
      }));
  }
  out.chosen = choose_rank(out.scores, o.threshold, o.level);
  return out;
}

void check_rescal_input(const DenseView<double>& x) {
  if (x.shape.size() != 3 || x.shape[0] != x.shape[1])
    throw invalid_input("RESCAL needs an n x n x m tensor, got " + shape_to_string(x.shape));
  const uint64_t n = shape_numel(x.shape);
  for (uint64_t i = 0; i < n; ++i)
    if (x.data[i] < 0) throw invalid_input("rank selection for RESCAL fits nonnegative RESCAL; the data has negative entries");
}

}  // namespace

std::vector<int> cluster_realisations(const std::vector<double>& similarity, int n_real, int k) {
  const int total = n_real * k;
  auto sim = [&](int i, int j) { return similarity[static_cast<size_t>(i) * total + j]; };
  std::vector<int> medoid(k), cluster(total, -1);
  for (int c = 0; c < k; ++c) medoid[c] = c;
  for (int round = 0; round < 100; ++round) {
    std::vector<int> next(total, -1);
    for (int r = 0; r < n_real; ++r) {
      // Greedy matching: the most similar (component, medoid) pair first.
      std::vector<bool> item_used(k, false), cluster_used(k, false);
      for (int step = 0; step < k; ++step) {
        double best = -std::numeric_limits<double>::infinity();
        int bi = -1, bc = -1;
        for (int i = 0; i < k; ++i)
          for (int c = 0; c < k; ++c)
            if (!item_used[i] && !cluster_used[c] && sim(r * k + i, medoid[c]) > best) {
              best = sim(r * k + i, medoid[c]);
              bi = i;
              bc = c;
            }
        item_used[bi] = cluster_used[bc] = true;
        next[r * k + bi] = bc;
      }
    }
    std::vector<int> next_medoid(k);
    for (int c = 0; c < k; ++c) {
      double best = -std::numeric_limits<double>::infinity();
      for (int i = 0; i < total; ++i) {
        if (next[i] != c) continue;
        double s = 0;
        for (int j = 0; j < total; ++j)
          if (next[j] == c) s += sim(i, j);
        if (s > best) {
          best = s;
          next_medoid[c] = i;
        }
      }
    }
    const bool settled = next == cluster && next_medoid == medoid;
    cluster = std::move(next);
    medoid = std::move(next_medoid);
    if (settled) break;
  }
  return cluster;
}

std::vector<double> cluster_silhouettes(const std::vector<double>& similarity, const std::vector<int>& cluster, int k) {
  const int total = static_cast<int>(cluster.size());
  std::vector<double> sum(k, 0.0);
  std::vector<int> count(k, 0);
  for (int i = 0; i < total; ++i) {
    std::vector<double> dist(k, 0.0);
    std::vector<int> members(k, 0);
    for (int j = 0; j < total; ++j) {
      if (j == i) continue;
      dist[cluster[j]] += 1.0 - similarity[static_cast<size_t>(i) * total + j];
      ++members[cluster[j]];
    }
    const int own = cluster[i];
    const double a = members[own] ? dist[own] / members[own] : 0.0;
    double b = std::numeric_limits<double>::infinity();
    for (int c = 0; c < k; ++c)
      if (c != own && members[c]) b = std::min(b, dist[c] / members[c]);
    const double denom = std::max(a, b);
    sum[own] += denom > 0 && std::isfinite(b) ? (b - a) / denom : 0.0;
    ++count[own];
  }
  std::vector<double> sil(k);
  for (int c = 0; c < k; ++c) sil[c] = count[c] ? sum[c] / count[c] : 0.0;
  return sil;
}

int choose_rank(std::vector<RankScore>& scores, double threshold, double level) {
  if (scores.empty()) return 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : scores) {
    lo = std::min(lo, s.rel_error);
    hi = std::max(hi, s.rel_error);
  }
  int stable_levelled = 0, stable = 0, best = scores.front().rank;
  double best_sil = -std::numeric_limits<double>::infinity();
  for (auto& s : scores) {
    s.stable = s.silhouette_min >= threshold;
    s.levelled = s.rel_error - lo <= level * (hi - lo);
    if (s.stable) stable = s.rank;
    if (s.stable && s.levelled) stable_levelled = s.rank;
    if (s.silhouette_min > best_sil) {
      best_sil = s.silhouette_min;
      best = s.rank;
    }
  }
  return stable_levelled ? stable_levelled : stable ? stable : best;
}

std::vector<Realisation> realise_cp(const DenseView<double>& x, const RankSelectOptions& o,
                                    const RealisationFilter& mine) {
  return realise(x, o, mine, [&](const DenseView<double>& xp, int k, uint64_t seed) {
    CpOptions c;
    c.rank = k;
    c.init = CpInit::kRandom;
    c.seed = seed;
    c.tol = o.tol;
    c.max_iters = o.max_iters;
    CpResult r = cp_als(xp, c);
    Realisation out;
    out.rel_error = reconstruction_error(x, from_cp("x", x.shape, DType::kF64, r));
    out.lambda = std::move(r.lambda);
    out.modes = std::move(r.factors);
    return out;
  });
}

std::vector<Realisation> realise_rescal(const DenseView<double>& x, const RankSelectOptions& o,
                                        const RealisationFilter& mine) {
  check_rescal_input(x);
  return realise(x, o, mine, [&](const DenseView<double>& xp, int k, uint64_t seed) {
    RescalOptions r;
    r.rank = k;
    r.init = RescalInit::kRandom;  // like CP: each realisation starts somewhere else
    r.nonneg = true;
    r.seed = seed;
    r.tol = o.tol;
    r.max_iters = o.max_iters;
    RescalResult res = rescal(xp, r);
    Realisation out;
    out.rel_error = reconstruction_error(x, from_rescal("x", x.shape, DType::kF64, res));
    out.modes = {std::move(res.a)};
    return out;
  });
}

RankSelection score_cp(const DenseView<double>& x, const RankSelectOptions& o, const std::vector<Realisation>& all) {
  std::vector<const Realisation*> best;  // per rank: the lowest-error model
  RankSelection sel = score(x, o, x.shape, x.shape.size(), all, &best);
  for (const Realisation* r : best)
    if (r->lambda.size() != static_cast<size_t>(r->rank))
      throw invalid_input(fmt::format("realisation {} of rank {} has no CP weights", r->index + 1, r->rank));
  if (o.corcondia)
    for (size_t i = 0; i < sel.scores.size(); ++i) {
      CpResult model;
      model.lambda = best[i]->lambda;
      model.factors = best[i]->modes;
      sel.scores[i].corcondia = corcondia(x, model);
    }
  return sel;
}

RankSelection score_rescal(const DenseView<double>& x, const RankSelectOptions& o,
                           const std::vector<Realisation>& all) {
  check_rescal_input(x);
  return score(x, o, {x.shape[0]}, 1, all, nullptr);
}

RankSelection select_rank_cp(const DenseView<double>& x, const RankSelectOptions& o) {
  return score_cp(x, o, realise_cp(x, o));
}

RankSelection select_rank_rescal(const DenseView<double>& x, const RankSelectOptions& o) {
  return score_rescal(x, o, realise_rescal(x, o));
}

}  // namespace tk::decomp
