// One entry point for the four methods on a dense tensor: the method's options in, a
// Decomposition (format.h) out, and the storage-budget search (budget.h) set up for
// the method; where each runs (placement). The tools add what is theirs: reading,
// masks, initial models read from files, progress, and writing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tk/core/dtype.h"
#include "tk/core/shape.h"
#include "tk/decomp/budget.h"
#include "tk/decomp/decomp.h"
#include "tk/decomp/format.h"
#include "tk/device/device.h"

namespace tk::decomp {

// The tensor a model stands for. Its data may be viewed under another shape of as many
// elements (TT's --shape); the model records this one.
struct DecomposeSource {
  std::string name;
  Shape shape;
  DType dtype = DType::kF32;
};

// The options of the method that runs; the others are not read.
struct DecomposeOptions {
  Method method = Method::kCp;
  CpOptions cp;
  TuckerOptions tucker;
  TtOptions tt;
  RescalOptions rescal;
  device::Placement device;  // where it runs (placement()); the CPU by default
};

// Under --device auto, tensors of at least this many elements are decomposed on a GPU.
// Below it the CPU's ST-HOSVD, or a few CP-ALS iterations, take a fraction of a second,
// about what a GPU spends before its first product: creating the CUDA context and the
// cuBLAS and cuSOLVER handles, and uploading the tensor (scripts/gpu/tdecomp_bench.sh
// measures both sides).
constexpr uint64_t kGpuMinElements = uint64_t(1) << 24;

// Where decompose() runs options.method on a tensor of `elements` values
// (device::place): dense CP-ALS (unmasked), Tucker (ST-HOSVD and HOOI) and TT-SVD have
// a GPU path; masked CP and RESCAL do not, so cuda[:N] throws kUnavailable naming them
// and auto takes the CPU.
device::Placement placement(const device::Request& request, const DecomposeOptions& options, uint64_t elements);

// Decompose `x` by options.method on options.device. CP and RESCAL models record their
// options' seed.
// RESCAL computes in f64: the f32 overload throws kUsage for it.
Decomposition decompose(const DenseView<double>& x, const DecomposeSource& source, const DecomposeOptions& options);
Decomposition decompose(const DenseView<float>& x, const DecomposeSource& source, const DecomposeOptions& options);

// The model of options.method (CP, Tucker or TT) with the least error within
// `budget_bytes`, by budget_search: CP over ranks up to the largest mode (options.cp
// with its rank replaced), Tucker and TT over tolerances (their options with tol
// replaced). Throws kUsage for RESCAL and when not even the smallest model fits.
BudgetChoice decompose_within_budget(const DenseView<double>& x, const DecomposeSource& source,
                                     const DecomposeOptions& options, uint64_t budget_bytes);
BudgetChoice decompose_within_budget(const DenseView<float>& x, const DecomposeSource& source,
                                     const DecomposeOptions& options, uint64_t budget_bytes);

// The dtype a model's factors are stored in unless asked otherwise: f64 for an f64
// tensor, else f32.
DType default_factor_dtype(DType source);

// A model is stored only where it is smaller than the tensor it stands for; else the
// tensor is stored unchanged. A storage budget of the tensor's bytes or more therefore
// leaves nothing to decompose.
inline bool smaller_than_tensor(uint64_t bytes, uint64_t tensor_bytes) { return bytes < tensor_bytes; }

// Make `d` the model as stored, with its factors in `factor_dtype`: kTensor where that
// is not smaller than the tensor (`tensor_bytes`; d is left unrounded), else the factors
// rounded to the dtype and, where it is narrower than f64, the error measured again on
// the rounded factors (`error_of`).
enum class Stored { kFactors, kTensor };
Stored store_as(Decomposition& d, DType factor_dtype, uint64_t tensor_bytes,
                const std::function<double(const Decomposition&)>& error_of);

}  // namespace tk::decomp
