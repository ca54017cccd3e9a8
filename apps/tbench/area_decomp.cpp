// tbench decomp: CP-ALS, Tucker (ST-HOSVD) and TT-SVD (lib/tk/decomp) at given ranks or
// tolerances: fit, relative error, storage in bits per value, time and time per
// iteration.
#include <cmath>

#include "tbench.h"
#include "tk/core/error.h"
#include "tk/decomp/decomp.h"
#include "tk/decomp/format.h"

namespace tk::tbench {
namespace {

using bench::Better;

void set_model_metrics(Result& r, const decomp::Decomposition& d, uint64_t numel) {
  r.set("rel_error", d.rel_error, "1", Better::kLower);
  r.set("fit", d.fit(), "1", Better::kHigher);
  r.set("sqnr_db", d.rel_error > 0 ? -20 * std::log10(d.rel_error) : INFINITY, "dB", Better::kHigher);
  // Factors stored as f32, as tdecomp writes them by default.
  r.set("bits_per_value", 8.0 * static_cast<double>(d.stored_bytes()) / static_cast<double>(numel), "bit",
        Better::kLower);
  r.set("ratio", static_cast<double>(d.original_bytes()) / static_cast<double>(d.stored_bytes()), "x",
        Better::kHigher);
}

void run_method(const Cell& cell, Result& r) {
  const Tensor& t = cell.input->data;
  if (t.rank() < 2) throw usage_error("decompositions take tensors of order 2 or more", cell.input->name);
  std::vector<double> values = values_f64(t);
  decomp::DenseView<double> view{values.data(), t.shape()};
  decomp::Decomposition d;
  int iterations = 0;
  bench::Measurement m;
  if (cell.method == "cp") {
    decomp::CpOptions o;
    o.rank = static_cast<int>(param_number(cell, "rank"));
    o.max_iters = static_cast<int>(param_number(cell, "max_iters"));
    decomp::CpResult res;
    m = bench::measure([&] { res = decomp::cp_als(view, o); }, cell.timing);
    d = decomp::from_cp("x", t.shape(), t.dtype(), res);
    iterations = res.iterations;
  } else if (cell.method == "tucker") {
    decomp::TuckerOptions o;
    int64_t rank = static_cast<int64_t>(param_number(cell, "rank"));
    for (int64_t dim : t.shape()) o.ranks.push_back(std::min(rank, dim));
    decomp::TuckerResult res;
    m = bench::measure([&] { res = decomp::tucker(view, o); }, cell.timing);
    d = decomp::from_tucker("x", t.shape(), t.dtype(), res);
  } else {
    decomp::TtOptions o;
    o.tol = param_number(cell, "tol");
    decomp::TtResult res;
    m = bench::measure([&] { res = decomp::tt_svd(view, o); }, cell.timing);
    d = decomp::from_tt("x", t.shape(), t.dtype(), res);
  }
  set_model_metrics(r, d, t.numel());
  r.set_time("seconds", m, 1, "s");
  if (iterations > 0) {
    bench::Measurement per = m;
    for (double& s : per.seconds) s /= iterations;
    per.summary = bench::summarize(per.seconds);
    r.set_time("seconds_per_iter", per, 1, "s");
    r.set("iterations", iterations, "1", Better::kNone);
  }
  std::string ranks;
  for (int64_t v : d.ranks) {
    if (!ranks.empty()) ranks += 'x';
    ranks += std::to_string(v);
  }
  r.note = "ranks " + ranks;
}

}  // namespace

Area decomp_area() {
  Area a;
  a.name = "decomp";
  a.description = "CP, Tucker and TT decompositions: fit, relative error, bits per value, time";
  a.methods = {
      {"cp", {"rank", "max_iters"}, "CP-ALS from the Gram initialisation"},
      {"tucker", {"rank"}, "Tucker by ST-HOSVD with the same rank on every mode (capped at the dimension)"},
      {"tt", {"tol"}, "Tensor-Train by TT-SVD to a relative tolerance"},
  };
  a.default_methods = {"cp", "tucker", "tt"};
  a.params = {{"rank", "2,4,8", "cp: rank; tucker: rank per mode", {}},
              {"max_iters", "50", "cp: ALS iterations at most", {}},
              {"tol", "0.3,0.1,0.03", "tt: relative error tolerance", {}}};
  a.default_shapes = {"32x32x32"};
  a.default_dists = {"lowrank"};
  a.run = run_method;
  return a;
}

}  // namespace tk::tbench
