// Rank selection by the stability of factors across realisations (the method of
// pyDNMFk / RESCALk for latent-dimension selection): for each candidate rank, decompose
// several perturbed copies of the data, cluster the resulting components across the
// realisations, and score the clusters by their silhouettes. A rank is credible when its
// clusters are tight (every realisation finds the same components) and the error has
// levelled off; too high a rank splits or invents components that differ from one
// realisation to the next.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tk/decomp/decomp.h"

namespace tk::decomp {

struct RankSelectOptions {
  int min_rank = 2, max_rank = 12;
  int realisations = 8;          // perturbed decompositions per rank
  double noise = 0.03;           // perturbation: X * (1 + noise * U(-1, 1)), elementwise
  double threshold = 0.75;       // minimum cluster silhouette of a stable rank
  double level = 0.05;           // error levelled off: err(k) - err_min <= level * (err_max - err_min)
  int max_iters = 200;
  double tol = 1e-7;
  uint64_t seed = 0;
  bool corcondia = true;         // CP: core consistency of the best realisation per rank
  // Called after each realisation (rank, realisation index 0-based, its relative error).
  std::function<void(int, int, double)> on_realisation;
};

struct RankScore {
  int rank = 0;
  double silhouette_mean = 0;    // mean over clusters of the mean member silhouette
  double silhouette_min = 0;     // smallest cluster mean silhouette (1 for rank 1)
  double rel_error = 0;          // median over realisations, against the unperturbed data
  double rel_error_min = 0;
  double corcondia = 0;          // percent; NaN when not computed (RESCAL)
  bool stable = false;           // silhouette_min >= threshold
  bool levelled = false;         // error within `level` of the smallest
};

struct RankSelection {
  std::vector<RankScore> scores;  // one per rank, ascending
  int chosen = 0;                 // the largest stable rank whose error has levelled off
};

// Rank selection for CP (random-init CP-ALS on each realisation; components compared by
// the cosine of their rank-one tensors) and for nonnegative RESCAL (random init; columns
// of A compared by cosine; needs X >= 0: kInvalidInput otherwise). kUsage for an empty or
// invalid range, fewer than 2 realisations, noise outside [0, 1).
RankSelection select_rank_cp(const DenseView<double>& x, const RankSelectOptions& options);
RankSelection select_rank_rescal(const DenseView<double>& x, const RankSelectOptions& options);

// ---- the same in two steps, to spread the realisations over processes ----
//
// Realisation `index` of rank `rank` is seeded by (options.seed, rank, index) alone, so
// that any split of the grid of realisations between processes (MPI ranks, the tasks of
// a job array) gives the realisations, and the selection, of one process.

struct Realisation {
  int rank = 0, index = 0;                  // index: 0 .. realisations - 1
  double rel_error = 0;                     // against the unperturbed data
  std::vector<double> lambda;               // CP: the weights; RESCAL: empty
  std::vector<std::vector<double>> modes;   // CP: each mode's I_n x rank factor; RESCAL: A
};

// Selects the (rank, index) pairs a process fits; empty: all of them.
using RealisationFilter = std::function<bool(int rank, int index)>;

// The realisations of the grid [min_rank, max_rank] x [0, realisations) that `mine`
// selects, in grid order (rank, then index).
std::vector<Realisation> realise_cp(const DenseView<double>& x, const RankSelectOptions& options,
                                    const RealisationFilter& mine = {});
std::vector<Realisation> realise_rescal(const DenseView<double>& x, const RankSelectOptions& options,
                                        const RealisationFilter& mine = {});

// Score the whole grid's realisations, in any order: kInvalidInput when one is missing,
// given twice, outside the grid or of another shape than the tensor's factors. CP
// computes the core consistency of each rank's lowest-error realisation against `x`.
RankSelection score_cp(const DenseView<double>& x, const RankSelectOptions& options, const std::vector<Realisation>& all);
RankSelection score_rescal(const DenseView<double>& x, const RankSelectOptions& options,
                           const std::vector<Realisation>& all);

// ---- the pieces, exposed for tests ----

// Cluster n_real x k items (realisation r, component c at index r*k + c) into k clusters
// holding exactly one component of each realisation: medoids start as realisation 0's
// components; each realisation is matched to the medoids greedily (most similar pair
// first); medoids are re-chosen as the member most similar to the rest; repeated until
// nothing changes. `similarity` is (n_real*k)^2 row-major, in [-1, 1]. Returns the
// cluster of each item.
std::vector<int> cluster_realisations(const std::vector<double>& similarity, int n_real, int k);

// Mean silhouette per cluster with distance 1 - similarity.
std::vector<double> cluster_silhouettes(const std::vector<double>& similarity, const std::vector<int>& cluster, int k);

// The chosen rank: the largest rank that is stable and levelled; else the largest stable
// rank; else the rank with the highest silhouette_min. Sets stable/levelled in `scores`.
int choose_rank(std::vector<RankScore>& scores, double threshold, double level);

}  // namespace tk::decomp
