// Helpers for the Tucker, TT and RESCAL tests: seeded tensors, dense reconstructions
// written the plain way (independent of the code under test where it matters), errors.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tk/decomp/decomp.h"
#include "tk/decomp/modes.h"
#include "tk/linalg/blas.h"

namespace tk::decomp::test {

inline int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

inline std::vector<double> gaussian(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = normal(rng);
  return v;
}

// n x r with orthonormal columns.
inline std::vector<double> orthonormal(int64_t n, int64_t r, uint64_t seed) {
  std::vector<double> a = gaussian(n * r, seed);
  linalg::qr(n, r, a.data(), nullptr);
  return a;
}

inline double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += a[i] * a[i];
  }
  return std::sqrt(diff / norm);
}

// x[i1..id] = 1 / (1 + i1 + ... + id): smooth, of fast-decaying ranks.
inline std::vector<double> hilbert_like(const std::vector<int64_t>& shape) {
  std::vector<double> x(static_cast<size_t>(count_of(shape)));
  std::vector<int64_t> idx(shape.size(), 0);
  for (double& v : x) {
    int64_t sum = 0;
    for (int64_t i : idx) sum += i;
    v = 1.0 / double(1 + sum);
    for (size_t k = shape.size(); k-- > 0;) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  return x;
}

// core ×_1 U_1 ... ×_d U_d through n-mode products (checked against index loops in
// modes_test.cpp).
inline std::vector<double> tucker_reconstruct(const TuckerResult& t, const std::vector<int64_t>& shape) {
  std::vector<double> current = t.core;
  std::vector<int64_t> cur_shape = t.ranks;
  for (size_t n = 0; n < shape.size(); ++n) {
    std::vector<double> next(static_cast<size_t>(count_of(cur_shape) / cur_shape[n] * shape[n]));
    modes::mode_product(current.data(), cur_shape, n, t.factors[n].data(), linalg::Op::kNoTrans, shape[n],
                        next.data());
    cur_shape[n] = shape[n];
    current = std::move(next);
  }
  return current;
}

// Contract the TT cores left to right into the dense tensor.
inline std::vector<double> tt_reconstruct(const TtResult& tt) {
  std::vector<double> acc(tt.cores[0]);  // (n_1) x r_1
  int64_t rows = tt.shape[0];
  for (size_t k = 1; k < tt.cores.size(); ++k) {
    const int64_t r = tt.ranks[k], cols = tt.shape[k] * tt.ranks[k + 1];
    std::vector<double> next(static_cast<size_t>(rows * cols));
    linalg::gemm(linalg::Op::kNoTrans, linalg::Op::kNoTrans, rows, cols, r, 1.0, acc.data(), r, tt.cores[k].data(),
                 cols, 0.0, next.data(), cols);
    acc = std::move(next);
    rows *= tt.shape[k];
  }
  return acc;
}

// A tensor of multilinear rank `ranks` (orthonormal factors, Gaussian core) plus
// `noise` relative Gaussian noise.
inline std::vector<double> planted_tucker(const std::vector<int64_t>& shape, const std::vector<int64_t>& ranks,
                                          double noise, uint64_t seed) {
  TuckerResult t;
  t.ranks = ranks;
  t.core = gaussian(count_of(ranks), seed);
  for (size_t n = 0; n < shape.size(); ++n) t.factors.push_back(orthonormal(shape[n], ranks[n], seed + 1 + n));
  std::vector<double> x = tucker_reconstruct(t, shape);
  if (noise > 0) {
    const std::vector<double> e = gaussian(count_of(shape), seed + 100);
    double nx = 0, ne = 0;
    for (size_t i = 0; i < x.size(); ++i) nx += x[i] * x[i], ne += e[i] * e[i];
    for (size_t i = 0; i < x.size(); ++i) x[i] += noise * std::sqrt(nx / ne) * e[i];
  }
  return x;
}

}  // namespace tk::decomp::test
