// Dense reconstruction of a stored decomposition: every contraction is a GEMM.
#include "tk/core/error.h"
#include "tk/decomp/format.h"
#include "tk/linalg/blas.h"

namespace tk::decomp {

namespace {

using linalg::Op;

const std::vector<double>& values(const Decomposition& d, size_t part) {
  const Part& p = d.parts.at(part);
  if (p.values.size() != shape_numel(p.shape)) throw internal_error("part not loaded", d.part_name(p));
  return p.values;
}

// X as (I_0 ... I_{d-2}) x I_{d-1} = KhatriRao(A_0, ..., A_{d-2}) diag(lambda) A_{d-1}^T.
std::vector<double> reconstruct_cp(const Decomposition& d) {
  const int64_t rank = d.ranks.at(0);
  const size_t order = d.shape.size();
  const auto& lambda = values(d, 0);
  // The Khatri-Rao product of the leading factors, rows in row-major index order, with
  // lambda folded into its columns.
  std::vector<double> kr(values(d, 1));
  int64_t rows = d.shape[0];
  for (size_t n = 1; n + 1 < order; ++n) {
    const auto& a = values(d, n + 1);
    const int64_t in = d.shape[n];
    std::vector<double> next(static_cast<size_t>(rows * in * rank));
    for (int64_t p = 0; p < rows; ++p)
      for (int64_t i = 0; i < in; ++i)
        for (int64_t r = 0; r < rank; ++r) next[(p * in + i) * rank + r] = kr[p * rank + r] * a[i * rank + r];
    kr = std::move(next);
    rows *= in;
  }
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t r = 0; r < rank; ++r) kr[p * rank + r] *= lambda[r];
  const int64_t last = d.shape[order - 1];
  std::vector<double> x(static_cast<size_t>(rows * last));
  linalg::gemm(Op::kNoTrans, Op::kTrans, rows, last, rank, 1.0, kr.data(), rank, values(d, order).data(), rank, 0.0,
               x.data(), last);
  return x;
}

// X = core x_0 U_0 x_1 U_1 ... : one mode product at a time, each a GEMM per leading
// index (a single GEMM for the first and last modes).
std::vector<double> reconstruct_tucker(const Decomposition& d) {
  std::vector<double> cur = values(d, 0);
  Shape dims = d.ranks;
  for (size_t n = 0; n < dims.size(); ++n) {
    const auto& u = values(d, n + 1);
    const int64_t i_n = d.shape[n], j_n = dims[n];
    int64_t lead = 1, trail = 1;
    for (size_t k = 0; k < n; ++k) lead *= dims[k];
    for (size_t k = n + 1; k < dims.size(); ++k) trail *= dims[k];
    std::vector<double> next(static_cast<size_t>(lead * i_n * trail));
    if (trail == 1) {
      linalg::gemm(Op::kNoTrans, Op::kTrans, lead, i_n, j_n, 1.0, cur.data(), j_n, u.data(), j_n, 0.0, next.data(), i_n);
    } else {
      for (int64_t l = 0; l < lead; ++l)
        linalg::gemm(Op::kNoTrans, Op::kNoTrans, i_n, trail, j_n, 1.0, u.data(), j_n, cur.data() + l * j_n * trail,
                     trail, 0.0, next.data() + l * i_n * trail, trail);
    }
    cur = std::move(next);
    dims[n] = i_n;
  }
  return cur;
}

// Left to right: (n_0 ... n_{k-1}) x r_k times core k as r_k x (n_k r_{k+1}).
std::vector<double> reconstruct_tt(const Decomposition& d) {
  std::vector<double> cur = values(d, 0);
  int64_t rows = d.tt_shape[0];
  for (size_t k = 1; k < d.tt_shape.size(); ++k) {
    const int64_t rk = d.ranks[k], cols = d.tt_shape[k] * d.ranks[k + 1];
    std::vector<double> next(static_cast<size_t>(rows * cols));
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, rows, cols, rk, 1.0, cur.data(), rk, values(d, k).data(), cols, 0.0,
                 next.data(), cols);
    cur = std::move(next);
    rows *= d.tt_shape[k];
  }
  return cur;
}

// X[:, :, k] = A R_k A^T for each of the m slices; R_k = R[:, :, k] (or R[k] in the
// older layout).
std::vector<double> reconstruct_rescal(const Decomposition& d) {
  const int64_t n = d.shape[0], m = d.shape[2], rank = d.ranks.at(0);
  const auto& a = values(d, 0);
  const auto& r = values(d, 1);
  auto layout = d.notes.find("r_layout");
  const bool legacy = layout != d.notes.end() && layout->second == kRescalLegacyLayout;
  std::vector<double> x(static_cast<size_t>(n * n * m));
  std::vector<double> ar(static_cast<size_t>(n * rank)), slice(static_cast<size_t>(n * n));
  std::vector<double> rk(static_cast<size_t>(rank * rank));
  for (int64_t k = 0; k < m; ++k) {
    for (int64_t ab = 0; ab < rank * rank; ++ab) rk[ab] = legacy ? r[k * rank * rank + ab] : r[ab * m + k];
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, n, rank, rank, 1.0, a.data(), rank, rk.data(), rank, 0.0, ar.data(),
                 rank);
    linalg::gemm(Op::kNoTrans, Op::kTrans, n, n, rank, 1.0, ar.data(), rank, a.data(), rank, 0.0, slice.data(), n);
    for (int64_t ij = 0; ij < n * n; ++ij) x[ij * m + k] = slice[ij];
  }
  return x;
}

}  // namespace

std::vector<double> reconstruct(const Decomposition& d) {
  if (shape_numel(d.shape) == 0) return {};
  switch (d.method) {
    case Method::kCp: return reconstruct_cp(d);
    case Method::kTucker: return reconstruct_tucker(d);
    case Method::kTt: return reconstruct_tt(d);
    case Method::kRescal: return reconstruct_rescal(d);
  }
  throw internal_error("unknown decomposition method", d.name);
}

}  // namespace tk::decomp
