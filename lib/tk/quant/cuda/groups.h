// Group-wise schemes on a CUDA device: the integer schemes' error-minimising scale search
// and nf4's block scales, the codes from the stored scales, and decoding, each the same
// bits as the CPU's reference (group_search.h and nf4_math.h run on both). Only CUDA
// builds compile this.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tk/quant/group_search.h"

namespace tk::quant::gpu {

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

  // nf4: every block's scale (nf4::fit_scale), and the codes from the stored scales,
  // two per byte, low nibble first (rows * padded_cols / 2 bytes).
  std::vector<float> nf4_scales(bool fast);
  void encode_nf4(const float* scales, uint8_t* packed);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Decode packed rows of padded_cols codes into out (rows x cols, cols <= padded_cols):
// y = float(code - offset) * d[g] + m[g], m null: + 0 (decode_packed_affine's values).
void decode_affine(int device, const uint8_t* packed, int64_t rows, int64_t padded_cols, int64_t cols, int bits,
                   int offset, int64_t group, const float* d, const float* m, float* out);

// Decode packed 4-bit codes through a table of 16 levels: y = table[code] * scales[g]
// (decode_packed_table's values), into out (rows x cols).
void decode_table4(int device, const uint8_t* packed, int64_t rows, int64_t padded_cols, int64_t cols,
                   const float* table, int64_t group, const float* scales, float* out);

}  // namespace tk::quant::gpu
