// The lattice codebooks of llama.cpp's IQ2 and IQ3 types as a search structure. Each grid
// point is `dims` values (IQ2: 8, IQ3: 4), each one of a few levels (IQ2: 8, 25, 43;
// IQ3_XXS: 4, 12, ..., 52, 62; IQ3_S: 1, 3, ..., 15), and a grid holds 256 to 1024 of
// the level combinations.
//
// The point nearest to a target under diagonal weights is found the way ggml's
// quantizers find it: each value rounded to its nearest level gives the combination
// that is best unconstrained; if the grid holds it, that is the answer; otherwise the
// answer is the best, by the weighted error, of the grid points next to it (those at the
// least squared distance in level steps, and for IQ3 also the next: listed once per
// combination). The IQ2 grids take the least alone: the next ring holds 18 to 58 points
// on average, which doubled the search time for 0.09 to 0.4 dB (BENCHMARKS: iq2, iq3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tk::quant::iq {

constexpr int kMaxLevels = 8;
constexpr int kMaxDims = 8;

class Lattice {
 public:
  // `points` words, value j of a point in byte j (ggml_iq_grids.h), `dims` values each;
  // `rings`: how many of the least distinct distances the neighbour lists take (1 or 2).
  Lattice(const uint64_t* grid, int points, int dims, int rings);

  int dims() const { return dims_; }
  int points() const { return static_cast<int>(values_.size()) / dims_; }
  // Value j of point p, as the decoder reads it (the byte's integer).
  float value(int p, int j) const { return values_[static_cast<size_t>(p * dims_ + j)]; }
  float top() const { return level_[levels_ - 1]; }

  // The point whose values v minimise sum w_j (m_j - scale * v_j)^2 over the `dims`
  // values (scale > 0; inv = 1 / scale), as described above.
  int nearest(const float* m, const float* w, float scale, float inv) const;

 private:
  int dims_ = 0, levels_ = 0;
  float level_[kMaxLevels] = {};
  float midpoint_[kMaxLevels - 1] = {};
  float first_ = 0, inv_step_ = 0;    // level 0 and 1 / (level 1 - level 0)
  std::vector<float> values_;         // points x dims
  std::vector<int16_t> point_of_;     // combination (base levels_, value 0 lowest) -> point, or -1
  std::vector<uint32_t> near_first_;  // combination -> first of its neighbours in near_ (CSR)
  std::vector<uint16_t> near_;
};

// The grids, each built once.
const Lattice& iq2xxs_lattice();
const Lattice& iq2xs_lattice();
const Lattice& iq2s_lattice();
const Lattice& iq3xxs_lattice();
const Lattice& iq3s_lattice();

}  // namespace tk::quant::iq
