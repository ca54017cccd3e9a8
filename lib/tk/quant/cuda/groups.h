// Group-wise schemes on a CUDA device: the integer schemes' error-minimising scale search
// and nf4's block scales, the codes from the stored scales (groups.cu); MX's, nvfp4's and
// fp8's scales and codes (minifloat.cu); the K-quants' super-blocks (kquant.cu); and
// decoding. Each gives the same bits as the CPU's reference (group_search.h, nf4_math.h,
// minifloat_math.h and kquant_math.h run on both). Only CUDA builds compile this.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tk/quant/error_math.h"
#include "tk/quant/group_search.h"
#include "tk/quant/iq4nl_math.h"
#include "tk/quant/kquant_math.h"
#include "tk/quant/minifloat_math.h"

namespace tk::quant::gpu {

using detail::Measure;
using tk::detail::FloatFormat;

// A zero-padded rows x padded_cols f32 input copied to device `device`, each row cut into
// groups of `group` values (a multiple of 8), with one error weight per column.
class Groups {
 public:
  Groups(int device, const float* x, const float* weights, int64_t rows, int64_t padded_cols, int64_t group);
  ~Groups();
  Groups(const Groups&) = delete;
  Groups& operator=(const Groups&) = delete;

  // Every group's scale (row-major over rows, then groups), as search_symmetric (codes in
  // [-nmax, nmax - 1]) or search_asymmetric (codes in [0, nmax], min free) give it.
  std::vector<detail::AffineScale> search(bool symmetric, int nmax, bool fast);

  // The codes from each group's stored scale as 1 / d (`inv`, 0 for d = 0) and, when
  // asymmetric, its min, packed `bits` wide: rows * padded_cols * bits / 8 bytes.
  void encode(const float* inv, const float* mins, int nmax, int bits, uint8_t* packed);

  // nf4 and iq4nl: every block's scale (nf4::fit_scale, iq4nl::fit_scale), and the codes
  // from the stored scales through a table of 16 levels (nf4::encode), two per byte, low
  // nibble first (rows * padded_cols / 2 bytes).
  std::vector<float> nf4_scales(bool fast);
  std::vector<float> iq4nl_scales(bool fast);
  void encode_table4(const detail::nf4::Levels& levels, const float* scales, uint8_t* packed);

  // MX (groups of 32): every block's codes, packed `bits` wide, and its E8M0 scale code
  // (mx::encode_block; `table` holds the 256 codes' values).
  void encode_mx(const detail::mx::Element& element, const float* table, bool ceil, bool search, int bits,
                 uint8_t* packed, uint8_t* scales);

  // nvfp4 (groups of 16) under tensor scale t: codes two per byte and the E4M3 block
  // scale codes (nvfp4::encode_block; fp4 and fp8 hold the 256 codes' values).
  void encode_nvfp4(const float* fp4, const float* fp8, float t, bool fast, uint8_t* packed, uint8_t* scales);

  // K-quants (groups of 256, kquant::choose): every super-block's codes packed f.bits
  // wide, its scales d and dmin (f16 values), and its sub-blocks' integers as stored
  // (q biased by qlo_abs when symmetric), subs() per super-block.
  void encode_kquant(const detail::kquant::Format& f, bool fast, uint8_t* packed, float* d, float* dmin, uint8_t* q,
                     uint8_t* qm);

  // fp8 (groups of 1, rows of padded_cols values) in `format`, whose 256 codes' values are
  // `table`. The error of every row under each of `count` scales (row-major by scale, as
  // fp8::row_error); each row's own scale (amax / max_elem times the best factor, 1 for an
  // all-zero row); and the codes of every row under its scale.
  std::vector<double> fp8_row_errors(const FloatFormat& format, const float* table, const float* scales, int count);
  std::vector<float> fp8_row_scales(const FloatFormat& format, const float* table, float max_elem,
                                    const float* factors, bool fast);
  void encode_fp8(const FloatFormat& format, const float* row_scales, uint8_t* codes);

  // The input on the device (groups_state.h, for the CUDA sources' launch helpers).
  struct State;

 private:
  std::unique_ptr<State> state_;
};

// Decode packed rows of padded_cols codes into out (rows x cols, cols <= padded_cols):
// y = float(code - offset) * d[g] + m[g], m null: + 0 (decode_packed_affine's values).
// With `measure`, out is not written: the rows' sums are measured there instead.
void decode_affine(int device, const uint8_t* packed, int64_t rows, int64_t padded_cols, int64_t cols, int bits,
                   int offset, int64_t group, const float* d, const float* m, float* out,
                   const Measure* measure = nullptr);

// Decode rows of padded_cols codes, packed `bits` wide (4, 6 or 8; LSB first), through a
// table of 2^bits values: y = table[code] * scales[g] (CodeTable's and
// decode_packed_table's values), into out (rows x cols).
void decode_table(int device, const uint8_t* packed, int bits, int64_t rows, int64_t padded_cols, int64_t cols,
                  const float* table, int64_t group, const float* scales, float* out, const Measure* measure = nullptr);

}  // namespace tk::quant::gpu
