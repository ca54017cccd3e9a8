#include "tk/decomp/decompose.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "tk/core/error.h"
#ifdef TK_HAVE_CUDA
#include "tk/decomp/cuda/cp.h"
#include "tk/decomp/cuda/tt.h"
#include "tk/decomp/cuda/tucker.h"
#endif

namespace tk::decomp {

namespace {

// What of `options` has no GPU path, as the refusal of --device cuda names it; empty
// when all of it has one.
std::string without_gpu_path(const DecomposeOptions& options) {
  switch (options.method) {
    case Method::kCp: return options.cp.mask ? "masked CP-ALS" : "";
    case Method::kTucker: return "";
    case Method::kTt: return "";
    case Method::kRescal: return "RESCAL";
  }
  return "";
}

// The one seam between the CPU and the GPU decompositions.
template <typename T>
CpResult cp_on(const device::Placement& where, const DenseView<T>& x, const CpOptions& options) {
#ifdef TK_HAVE_CUDA
  if (where.cuda) return cuda::cp_als(x, options, where.index);
#endif
  return cp_als(x, options);
}

template <typename T>
TuckerResult tucker_on(const device::Placement& where, const DenseView<T>& x, const TuckerOptions& options) {
#ifdef TK_HAVE_CUDA
  if (where.cuda) return cuda::tucker(x, options, where.index);
#endif
  return tucker(x, options);
}

template <typename T> TtResult tt_on(const device::Placement& where, const DenseView<T>& x, const TtOptions& options) {
#ifdef TK_HAVE_CUDA
  if (where.cuda) return cuda::tt_svd(x, options, where.index);
#endif
  return tt_svd(x, options);
}

template <typename T>
Decomposition decompose_any(const DenseView<T>& x, const DecomposeSource& src, const DecomposeOptions& o) {
  Decomposition d;
  switch (o.method) {
    case Method::kCp:
      d = from_cp(src.name, src.shape, src.dtype, cp_on(o.device, x, o.cp));
      d.seed = o.cp.seed;
      break;
    case Method::kTucker: d = from_tucker(src.name, src.shape, src.dtype, tucker_on(o.device, x, o.tucker)); break;
    case Method::kTt: d = from_tt(src.name, src.shape, src.dtype, tt_on(o.device, x, o.tt)); break;
    case Method::kRescal:
      if constexpr (std::is_same_v<T, double>) {
        d = from_rescal(src.name, src.shape, src.dtype, rescal(x, o.rescal));
        d.seed = o.rescal.seed;
      } else {
        throw usage_error("RESCAL computes in f64");
      }
      break;
  }
  return d;
}

template <typename T>
BudgetChoice within_budget_any(const DenseView<T>& x, const DecomposeSource& src, const DecomposeOptions& o,
                               uint64_t budget_bytes) {
  BudgetProblem p;
  p.method = o.method;
  p.error_of = [&x](const Decomposition& d) { return reconstruction_error(x, d); };
  switch (o.method) {
    case Method::kCp:
      p.cp_elements_per_rank = 1;
      for (int64_t n : x.shape) {
        p.cp_elements_per_rank += n;
        p.max_rank = std::max<int>(p.max_rank, static_cast<int>(n));
      }
      p.at_rank = [&](int rank) {
        CpOptions c = o.cp;
        c.rank = rank;
        Decomposition d = from_cp(src.name, src.shape, src.dtype, cp_on(o.device, x, c));
        d.seed = c.seed;
        return d;
      };
      break;
    case Method::kTucker:
      p.at_tol = [&](double tol) {
        TuckerOptions t = o.tucker;
        t.tol = tol;
        return from_tucker(src.name, src.shape, src.dtype, tucker_on(o.device, x, t));
      };
      break;
    case Method::kTt:
      p.at_tol = [&](double tol) {
        TtOptions t = o.tt;
        t.tol = tol;
        return from_tt(src.name, src.shape, src.dtype, tt_on(o.device, x, t));
      };
      break;
    case Method::kRescal: throw usage_error("RESCAL has no search within a size budget");
  }
  return budget_search(p, budget_bytes);
}

}  // namespace

device::Placement placement(const device::Request& request, const DecomposeOptions& options, uint64_t elements) {
  const std::string what = without_gpu_path(options);
  return device::place(request, elements, kGpuMinElements, what.empty(), what);
}

Decomposition decompose(const DenseView<double>& x, const DecomposeSource& source, const DecomposeOptions& options) {
  return decompose_any(x, source, options);
}
Decomposition decompose(const DenseView<float>& x, const DecomposeSource& source, const DecomposeOptions& options) {
  return decompose_any(x, source, options);
}

BudgetChoice decompose_within_budget(const DenseView<double>& x, const DecomposeSource& source,
                                     const DecomposeOptions& options, uint64_t budget_bytes) {
  return within_budget_any(x, source, options, budget_bytes);
}
BudgetChoice decompose_within_budget(const DenseView<float>& x, const DecomposeSource& source,
                                     const DecomposeOptions& options, uint64_t budget_bytes) {
  return within_budget_any(x, source, options, budget_bytes);
}

DType default_factor_dtype(DType source) { return source == DType::kF64 ? DType::kF64 : DType::kF32; }

Stored store_as(Decomposition& d, DType factor_dtype, uint64_t tensor_bytes,
                const std::function<double(const Decomposition&)>& error_of) {
  d.factor_dtype = factor_dtype;
  if (!smaller_than_tensor(d.stored_bytes(), tensor_bytes)) return Stored::kTensor;
  if (d.factor_dtype != DType::kF64) {
    round_parts(d, d.factor_dtype);
    d.rel_error = error_of(d);
  }
  return Stored::kFactors;
}

}  // namespace tk::decomp
