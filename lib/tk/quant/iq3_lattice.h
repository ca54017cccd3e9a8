// The lattice codebooks of llama.cpp's IQ3 types as a search structure: each grid point
// is 4 values, each one of 8 levels (IQ3_XXS: 4, 12, ..., 52, 62; IQ3_S: 1, 3, ..., 15),
// and a grid holds 256 (IQ3_XXS) or 512 (IQ3_S) of the 4096 level combinations.
//
// The point nearest to a target under diagonal weights is found the way ggml's
// quantizers find it: each value rounded to its nearest level gives the combination
// that is best unconstrained; if the grid holds it, that is the answer; otherwise the
// answer is the best, by the weighted error, of the grid points next to it (those at the
// least and the next squared distance in level steps, listed once per combination).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tk::quant::iq3 {

constexpr int kLevels = 8;
constexpr int kDims = 4;

class Lattice {
 public:
  // `grid`: `points` words, value j of a point in byte j (ggml_iq_grids.h).
  Lattice(const uint32_t* grid, int points);

  int points() const { return static_cast<int>(values_.size() / kDims); }
  // Value j of point p, as the decoder reads it (the byte's integer).
  float value(int p, int j) const { return values_[static_cast<size_t>(p * kDims + j)]; }
  const float* values(int p) const { return values_.data() + p * kDims; }
  float top() const { return level_[kLevels - 1]; }

  // The point whose values v minimise sum w_j (m_j - scale * v_j)^2 (scale > 0; inv =
  // 1 / scale), as described above.
  int nearest(const float* m, const float* w, float scale, float inv) const;

 private:
  float level_[kLevels] = {};
  float midpoint_[kLevels - 1] = {};
  float first_ = 0, inv_step_ = 0;  // level 0 and 1 / (level 1 - level 0)
  std::vector<float> values_;        // points x 4
  std::vector<int16_t> point_of_;    // combination (3 bits per value, value 0 lowest) -> point, or -1
  std::vector<uint32_t> near_first_; // combination -> first of its neighbours in near_ (CSR)
  std::vector<uint16_t> near_;
};

// The two IQ3 grids, built once.
const Lattice& iq3xxs_lattice();
const Lattice& iq3s_lattice();

}  // namespace tk::quant::iq3
