// Sparse CP-ALS on coordinates. The MTTKRP runs over the nonzeros only: each thread takes
// a contiguous block of them and accumulates into its own I_n x R buffer; the buffers are
// added in thread order, so a run is deterministic for a given thread count. The Gram
// initialisation groups the nonzeros by their fibre (all indices but mode n) and adds
// the products of each fibre's values, again without densifying anything.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tk/core/error.h"
#include "tk/core/isa.h"
#include "tk/decomp/cp_internal.h"
#include "tk/decomp/decomp.h"
#include "tk/linalg/blas.h"

namespace tk::decomp {
namespace cp_detail {

void SparseMttkrp::operator()(int mode, const Factors<double>& a, double* m) {
  const int64_t dim = x_.shape[mode];
  const int64_t out_size = dim * rank_;
  const int max_threads = x_.nnz() < (int64_t{1} << 14) ? 1 : omp_get_max_threads();
  accumulators_.assign(static_cast<size_t>(out_size) * static_cast<size_t>(max_threads), 0.0);
  int used = 1;
#pragma omp parallel num_threads(max_threads)
  {
    const int threads = omp_get_num_threads();
    const int t = omp_get_thread_num();
#pragma omp single
    used = threads;
    const int64_t begin = x_.nnz() * t / threads, end = x_.nnz() * (t + 1) / threads;
    accumulate(mode, a, begin, end, accumulators_.data() + static_cast<size_t>(t) * out_size);
  }
  std::copy(accumulators_.begin(), accumulators_.begin() + out_size, m);
  for (int t = 1; t < used; ++t) {
    const double* acc = accumulators_.data() + static_cast<size_t>(t) * out_size;
    for (int64_t e = 0; e < out_size; ++e) m[e] += acc[e];
  }
}

// out[i_mode, :] += value * prod_{k != mode} A_k[i_k, :] over nonzeros [begin, end).
void SparseMttkrp::accumulate(int mode, const Factors<double>& a, int64_t begin, int64_t end, double* out) const {
  const int order = x_.order();
  if (order == 3) return accumulate3(mode, a, begin, end, out);
  const int64_t rank = rank_;
  std::vector<double> row(static_cast<size_t>(rank));
  for (int64_t e = begin; e < end; ++e) {
    const int64_t* idx = &x_.indices[static_cast<size_t>(e * order)];
    std::fill(row.begin(), row.end(), x_.values[e]);
    for (int k = 0; k < order; ++k) {
      if (k == mode) continue;
      const double* f = &a[k][idx[k] * rank];
      for (int64_t r = 0; r < rank; ++r) row[r] *= f[r];
    }
    double* dst = out + idx[mode] * rank;
    for (int64_t r = 0; r < rank; ++r) dst[r] += row[r];
  }
}

// The common order-3 case (most FROSTT tensors) as one fused loop the compiler vectorises:
// compiled as it stands and, inlined, into accumulate3_avx2 (4 doubles a vector, and FMA:
// the sums may differ from the baseline's in the last bit, as between builds).
void SparseMttkrp::accumulate3(int mode, const Factors<double>& a, int64_t begin, int64_t end, double* out) const {
#if TK_X86
  if (use_avx2()) return accumulate3_avx2(mode, a, begin, end, out);
#endif
  accumulate3_body(mode, a, begin, end, out);
}

#if TK_X86
TK_TARGET_AVX2 void SparseMttkrp::accumulate3_avx2(int mode, const Factors<double>& a, int64_t begin, int64_t end,
                                                   double* out) const {
  accumulate3_body(mode, a, begin, end, out);
}
#else
void SparseMttkrp::accumulate3_avx2(int mode, const Factors<double>& a, int64_t begin, int64_t end,
                                    double* out) const {
  accumulate3_body(mode, a, begin, end, out);
}
#endif

[[gnu::always_inline]] inline void SparseMttkrp::accumulate3_body(int mode, const Factors<double>& a, int64_t begin,
                                                                  int64_t end, double* out) const {
  const int64_t rank = rank_;
  const int k1 = mode == 0 ? 1 : 0, k2 = mode == 2 ? 1 : 2;
  const double* f1 = a[k1].data();
  const double* f2 = a[k2].data();
  const int64_t* indices = x_.indices.data();
  const double* values = x_.values.data();
  for (int64_t e = begin; e < end; ++e) {
    const int64_t* idx = indices + e * 3;
    const double v = values[e];
    const double* __restrict g1 = f1 + idx[k1] * rank;
    const double* __restrict g2 = f2 + idx[k2] * rank;
    double* __restrict dst = out + idx[mode] * rank;
    for (int64_t r = 0; r < rank; ++r) dst[r] += v * g1[r] * g2[r];
  }
}

namespace {

using io::SparseTensor;

class SparseProblem : public GramProblem<double> {
 public:
  SparseProblem(const SparseTensor& x, int64_t rank, double norm_sq, const CpOptions& options)
      : GramProblem<double>(x.shape, rank, norm_sq, options), mttkrp_(x, rank) {}

 protected:
  void mttkrp(int mode, const Factors<double>& a, double* m) override { mttkrp_(mode, a, m); }

 private:
  SparseMttkrp mttkrp_;
};

// Nonzeros ordered by their fibre along `mode` (every index but mode's), so that each
// fibre is one run. Packs the fibre into a 64-bit key when it fits.
std::vector<int64_t> fibre_order(const SparseTensor& x, int mode) {
  const int order = x.order();
  std::vector<int64_t> perm(static_cast<size_t>(x.nnz()));
  std::iota(perm.begin(), perm.end(), 0);
  const int64_t* idx = x.indices.data();
  auto lexicographic = [&](int64_t p, int64_t q) {
    for (int k = 0; k < order; ++k) {
      if (k == mode || idx[p * order + k] == idx[q * order + k]) continue;
      return idx[p * order + k] < idx[q * order + k];
    }
    return p < q;
  };
  double span = 1;
  for (int k = 0; k < order; ++k)
    if (k != mode) span *= static_cast<double>(x.shape[k]);
  if (span >= 9.0e18) {
    std::sort(perm.begin(), perm.end(), lexicographic);
    return perm;
  }
  std::vector<std::pair<uint64_t, int64_t>> keyed(perm.size());
  for (int64_t e = 0; e < x.nnz(); ++e) {
    uint64_t key = 0;
    for (int k = 0; k < order; ++k)
      if (k != mode) key = key * static_cast<uint64_t>(x.shape[k]) + static_cast<uint64_t>(idx[e * order + k]);
    keyed[e] = {key, e};
  }
  std::sort(keyed.begin(), keyed.end());
  for (size_t e = 0; e < keyed.size(); ++e) perm[e] = keyed[e].second;
  return perm;
}

bool same_fibre(const SparseTensor& x, int mode, int64_t p, int64_t q) {
  const int order = x.order();
  for (int k = 0; k < order; ++k)
    if (k != mode && x.indices[p * order + k] != x.indices[q * order + k]) return false;
  return true;
}

}  // namespace

std::vector<double> sparse_mode_gram(const SparseTensor& x, int mode) {
  const int order = x.order();
  const int64_t dim = x.shape[mode];
  std::vector<double> g(static_cast<size_t>(dim * dim), 0.0);
  const std::vector<int64_t> perm = fibre_order(x, mode);
  for (size_t start = 0; start < perm.size();) {
    size_t stop = start + 1;
    while (stop < perm.size() && same_fibre(x, mode, perm[start], perm[stop])) ++stop;
    for (size_t p = start; p < stop; ++p)
      for (size_t q = start; q < stop; ++q)
        g[x.indices[perm[p] * order + mode] * dim + x.indices[perm[q] * order + mode]] +=
            x.values[perm[p]] * x.values[perm[q]];
    start = stop;
  }
  return g;
}

namespace {

Factors<double> sparse_gram_init(const SparseTensor& x, const CpOptions& o) {
  Factors<double> a;
  for (int n = 0; n < x.order(); ++n) {
    const uint64_t seed = o.seed * 1000003u + static_cast<uint64_t>(n);
    if (x.shape[n] > kMaxGramDim) {
      a.push_back(gaussian_matrix<double>(x.shape[n], o.rank, seed));
      continue;
    }
    std::vector<double> g = sparse_mode_gram(x, n);
    a.push_back(leading_eigenvectors(x.shape[n], g, o.rank, seed));
  }
  return a;
}

}  // namespace

double checked_sparse_norm_sq(const SparseTensor& x) {
  const int order = x.order();
  if (x.indices.size() != static_cast<size_t>(x.nnz()) * static_cast<size_t>(order))
    throw invalid_input("sparse tensor: the index array does not match the number of values");
  double norm_sq = 0;
  for (int64_t e = 0; e < x.nnz(); ++e) {
    if (!std::isfinite(x.values[e])) throw invalid_input("the tensor has NaN or Inf entries");
    norm_sq += x.values[e] * x.values[e];
    for (int k = 0; k < order; ++k) {
      const int64_t i = x.indices[e * order + k];
      if (i < 0 || i >= x.shape[k]) throw invalid_input("sparse tensor: an index lies outside the shape");
    }
  }
  return norm_sq;
}

}  // namespace cp_detail

CpResult cp_als_sparse(const io::SparseTensor& x, const CpOptions& options) {
  using namespace cp_detail;
  CpOptions o = options;
  o.mask = nullptr;
  validate_options(x.shape, o);
  const double norm_sq = checked_sparse_norm_sq(x);
  // Threads come from OpenMP (the MTTKRP); the BLAS calls are R x R or I_n x R and run
  // on one thread, so the two pools never compete.
  linalg::SerialBlas serial_blas;
  auto make_problem = [&]() -> std::unique_ptr<CpProblem<double>> {
    return std::make_unique<SparseProblem>(x, o.rank, norm_sq, o);
  };
  auto init = [&](int restart) {
    Factors<double> a = initial_factors<double>(x.shape, o, restart);
    return a.empty() ? sparse_gram_init(x, o) : a;
  };
  return run_cp_als<double>(x.shape, o, norm_sq, make_problem, init);
}

}  // namespace tk::decomp
