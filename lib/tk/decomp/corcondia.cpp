// Core consistency diagnostic (Bro & Kiers 2003). With the weights folded into the first
// factor, the least-squares Tucker core of X for the CP factors is
// G = X x_1 pinv(B_1) x_2 pinv(B_2) ... x_d pinv(B_d); for an appropriate CP model G is
// close to the superdiagonal identity T. CORCONDIA = 100 (1 - ||G - T||^2 / R).
// The core is built by one mode product at a time (each a GEMM on the row-major
// layout), never through a Kronecker matrix.
#include <cmath>

#include "tk/core/error.h"
#include "tk/decomp/decomp.h"
#include "tk/linalg/blas.h"

namespace tk::decomp {
namespace {

using linalg::Op;

// pinv(B) of an I x R matrix B as R x I: (B^T B)^+ B^T, through the SPD solver (which
// falls back to a pseudo-inverse for rank-deficient factors).
std::vector<double> pseudo_inverse(const std::vector<double>& b, int64_t rows, int64_t rank) {
  std::vector<double> g(static_cast<size_t>(rank * rank));
  linalg::syrk(Op::kTrans, rank, rows, 1.0, b.data(), rank, 0.0, g.data(), rank);
  std::vector<double> bt = b;  // becomes B G^-1 = pinv(B)^T
  linalg::solve_spd_right(rank, g.data(), rows, bt.data());
  std::vector<double> p(static_cast<size_t>(rank * rows));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t r = 0; r < rank; ++r) p[r * rows + i] = bt[i * rank + r];
  return p;
}

// y = x x_mode p for a row-major tensor x of `shape`, p is R x shape[mode]; the result
// has shape[mode] replaced by R.
std::vector<double> mode_product(const double* x, const std::vector<int64_t>& shape, int mode, const double* p,
                                 int64_t rank) {
  int64_t before = 1, after = 1;
  for (int k = 0; k < mode; ++k) before *= shape[k];
  for (size_t k = mode + 1; k < shape.size(); ++k) after *= shape[k];
  const int64_t dim = shape[mode];
  std::vector<double> y(static_cast<size_t>(before * rank * after));
  if (after == 1) {
    linalg::gemm(Op::kNoTrans, Op::kTrans, before, rank, dim, 1.0, x, dim, p, dim, 0.0, y.data(), rank);
    return y;
  }
  for (int64_t b = 0; b < before; ++b)
    linalg::gemm(Op::kNoTrans, Op::kNoTrans, rank, after, dim, 1.0, p, dim, x + b * dim * after, after, 0.0,
                 y.data() + b * rank * after, after);
  return y;
}

}  // namespace

double corcondia(const DenseView<double>& x, const CpResult& model) {
  const int order = static_cast<int>(x.shape.size());
  const int64_t rank = static_cast<int64_t>(model.lambda.size());
  if (order < 2) throw invalid_input("CORCONDIA needs a tensor of order >= 2");
  if (rank <= 0 || static_cast<int>(model.factors.size()) != order)
    throw usage_error("CORCONDIA: the CP model does not match the tensor's order");
  for (int n = 0; n < order; ++n)
    if (model.factors[n].size() != static_cast<size_t>(x.shape[n] * rank))
      throw usage_error("CORCONDIA: factor " + std::to_string(n) + " does not match the tensor's shape");

  std::vector<int64_t> shape = x.shape;
  std::vector<double> core;
  for (int n = 0; n < order; ++n) {
    std::vector<double> b = model.factors[n];
    if (n == 0)
      for (int64_t i = 0; i < shape[0]; ++i)
        for (int64_t r = 0; r < rank; ++r) b[i * rank + r] *= model.lambda[r];
    const std::vector<double> p = pseudo_inverse(b, x.shape[n], rank);
    core = mode_product(n == 0 ? x.data : core.data(), shape, n, p.data(), rank);
    shape[n] = rank;
  }
  // Distance to the superdiagonal identity: the diagonal index steps by sum_k R^k.
  int64_t diagonal_step = 0;
  for (int n = 0; n < order; ++n) diagonal_step = diagonal_step * rank + 1;
  double distance = 0;
  for (size_t e = 0; e < core.size(); ++e) {
    const double target = static_cast<int64_t>(e) % diagonal_step == 0 ? 1.0 : 0.0;
    distance += (core[e] - target) * (core[e] - target);
  }
  return 100.0 * (1.0 - distance / static_cast<double>(rank));
}

}  // namespace tk::decomp
