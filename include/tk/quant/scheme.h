// Quantization schemes: one table of named schemes (uniform integer, nf4, fp8,
// OCP microscaling, nvfp4, k-means and vector codebooks, ...), each turning an f32
// tensor into plain tensors (packed codes, scales, zero points, codebooks) plus a few
// layout parameters, and back. Every scheme has a scalar reference implementation and
// an optimised path that must produce the same bytes (tests check it).
//
// Layout conventions shared by all schemes:
// - A tensor is viewed as rows x cols: cols = the last dimension (the input channels of
//   a weight matrix), rows = the product of the others (a 1-D tensor is one row).
// - Groups and blocks run along a row; a row whose length is not a multiple of the
//   group size is padded with zeros to the next multiple (padded_cols in the params).
// - Importance (optional) is one weight per column, used as the error weight of every
//   element in that column.
// - Output bytes depend only on the input, the options and the seed: never on the
//   thread count or the machine (no FMA-dependent rounding in decisions, no
//   unordered reductions).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/core/shape.h"
#include "tk/core/tensor.h"
#include "tk/quant/error_math.h"

namespace tk::quant {

enum class Granularity { kDefault, kTensor, kChannel, kGroup };
enum class ScaleRule { kDefault, kFloor, kCeil, kSearch };  // MX shared exponent

struct QuantOptions {
  int64_t group_size = 0;            // 0: the scheme's default
  Granularity granularity = Granularity::kDefault;
  bool symmetric = true;             // integer schemes: false adds a zero point
  DType scale_dtype = DType::kF16;   // where the scheme lets the user choose
  ScaleRule scale_rule = ScaleRule::kDefault;
  bool fast = false;                 // absmax scales, no error search
  bool double_quant = false;         // nf4: quantize the block scales too
  double outlier_fraction = 0;       // codebook schemes: share kept exactly in f16
  const float* importance = nullptr; // cols weights, or null
  uint64_t seed = 0;
  bool reference = false;            // run the scalar reference path (tests compare it)
  // nvfp4: round the tensor scale up to a power of two, so that its reciprocal (what
  // compressed-tensors stores and divides by) is exact. Costs at most a factor 2 of the
  // E4M3 block scales' range, none of their precision.
  bool power_of_two_tensor_scale = false;
  // Asymmetric integer schemes: the offset as an integer zero point z per group, y =
  // (code - z) d, as compressed-tensors stores it, instead of a float min.
  bool integer_zero_point = false;
  // The CUDA device that quantize() and the dequantize_on() of its output run on where
  // the scheme has a GPU path for these options (gpu_path), the same bytes as the CPU's;
  // -1: the CPU.
  int device = -1;
};

// One quantized tensor. `parts` are plain tensors stored as NAME.<suffix> in the output
// file; `params` (strings) are the layout parameters recorded in the metadata. Together
// with the original shape they are all dequantize() needs.
struct Quantized {
  std::string scheme;                          // canonical spec, e.g. "int4", "kmeans:3"
  Shape shape;                                 // original shape
  std::map<std::string, std::string> params;   // e.g. group_size, padded_cols, symmetric
  std::map<std::string, Tensor> parts;         // e.g. "codes" (U8), "scales" (F16)
  // Bytes of all parts: the true storage cost, metadata included.
  uint64_t stored_bytes() const;
};

class Scheme {
 public:
  virtual ~Scheme() = default;
  // Canonical spec ("int4", "mxfp4", "kmeans:3", "vq:4:8").
  virtual std::string name() const = 0;
  // One line for --help / --explain.
  virtual std::string description() const = 0;
  // Exact bits per weight of a rows x cols tensor with these options, all parts counted.
  virtual double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions& options) const = 0;
  // Rows of `cols` values are padded with zeros to a multiple of this many values under
  // these options (1: no padding). tk::quant::choose_view uses it to fill blocks.
  virtual int64_t row_block(int64_t cols, const QuantOptions& options) const {
    (void)cols, (void)options;
    return 1;
  }
  // Whether QuantOptions::group_size chooses anything: false for schemes whose blocks
  // are fixed by their format (K-quants, MX, nvfp4) or that have no groups (fp8, vq).
  virtual bool takes_group_size() const { return true; }
  // Whether each row's codes and error depend on that row alone under these options
  // (scales per row or block), or on the rest of the tensor only through its largest
  // magnitude (which a sample holding the tensor's largest rows shares), so that the
  // error on such a sample of rows estimates the tensor's without bias. False where
  // something is fitted to the whole tensor: a codebook, a searched per-tensor scale.
  virtual bool rows_independent(const QuantOptions& options) const {
    (void)options;
    return true;
  }
  // Quantize `x` (numel(shape) f32 values, finite). Throws kUsage for options the
  // scheme does not take (e.g. a group size that is not a multiple of its block).
  virtual Quantized quantize(const float* x, const Shape& shape, const QuantOptions& options) const = 0;
  // Rebuild the f32 values (numel(q.shape)) from the parts and params alone. Throws
  // kInvalidInput when parts are missing, have the wrong dtype or size, or params are
  // inconsistent.
  virtual void dequantize(const Quantized& q, float* out) const = 0;
  // The scalar reference of dequantize(); the same values bit for bit. Schemes without
  // a separate optimised decoder need not override it.
  virtual void dequantize_reference(const Quantized& q, float* out) const { dequantize(q, out); }
  // Whether quantize() under these options, and dequantize_on() of what it makes, have a
  // GPU path (taken when options.device >= 0). False for the CPU-only schemes.
  virtual bool gpu_path(const QuantOptions& options) const {
    (void)options;
    return false;
  }
  // dequantize() on CUDA device `device` where this scheme decodes q there, else on the
  // CPU: the same values either way.
  virtual void dequantize_on(const Quantized& q, float* out, int device) const {
    (void)device;
    dequantize(q, out);
  }
  // Where this scheme decodes q on CUDA device `device` (as dequantize_on does): each
  // row's error sums against x (q's rows x cols, on the host; `weights` per column or
  // null; clipping over blocks of `block` values, 0: not counted) into rows[], without
  // the reconstruction leaving the device, and true. False where it does not decode
  // there: measure on the host instead (row_errors).
  virtual bool measure_on(const Quantized& q, const float* x, const float* weights, int64_t block, int device,
                          detail::RowSums* rows) const {
    (void)q, (void)x, (void)weights, (void)block, (void)device, (void)rows;
    return false;
  }
};

// The scheme for a spec such as "int4", "nf4", "mxfp4", "kmeans:3", "vq:4:8". Throws
// kUsage listing the valid names when unknown or when its arguments are malformed.
std::unique_ptr<Scheme> make_scheme(std::string_view spec);
// Every scheme family with its syntax, for --help and error messages.
std::vector<std::string> scheme_names();
// What runs on the GPU (Scheme::gpu_path), in words, for --help and error messages.
std::string gpu_schemes_text();

// Error of an approximation y of x (n values, optional per-column weights over rows of
// length cols): what the report and the budget solver use.
struct ErrorStats {
  double rel_rmse = 0;     // ||x - y|| / ||x||
  double sqnr_db = 0;      // 10 log10(||x||^2 / ||x - y||^2); +inf when exact
  double max_abs = 0;
  double weighted_sse = 0; // sum w_col * (x - y)^2 (w = 1 without importance)
  double clipped_share = 0;  // share of values clipped, where the caller counted them
  double signal = 0;       // ||x||^2
};
// Each row's sums (rows of `cols` values, in parallel; error_math.h), clipping counted over
// blocks of `block` values along a row (0: not counted).
std::vector<detail::RowSums> row_errors(const float* x, const float* y, int64_t rows, int64_t cols,
                                        const float* weights, int64_t block);
// The rows' sums added in row order (the same for any thread count, and for the GPU's
// rows): n values in all.
ErrorStats error_stats(const std::vector<detail::RowSums>& rows, int64_t n);
ErrorStats measure_error(const float* x, const float* y, int64_t n, int64_t cols,
                         const float* importance);

}  // namespace tk::quant
