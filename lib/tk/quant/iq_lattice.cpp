#include "tk/quant/iq_lattice.h"

#include <algorithm>
#include <climits>

#include "tk/core/error.h"
#include "tk/io/ggml_iq_grids.h"

namespace tk::quant::iq {

Lattice::Lattice(const uint64_t* grid, int points, int dims, int rings) : dims_(dims) {
  auto byte_of = [&](int p, int j) { return static_cast<int>((grid[p] >> (8 * j)) & 0xFF); };
  // The levels are the distinct bytes of the grid, ascending.
  std::vector<int> bytes;
  for (int p = 0; p < points; ++p)
    for (int j = 0; j < dims; ++j) bytes.push_back(byte_of(p, j));
  std::sort(bytes.begin(), bytes.end());
  bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
  levels_ = static_cast<int>(bytes.size());
  if (levels_ < 2 || levels_ > kMaxLevels || dims < 1 || dims > kMaxDims)
    throw internal_error("an IQ grid has an unexpected shape");
  for (int k = 0; k < levels_; ++k) level_[k] = static_cast<float>(bytes[static_cast<size_t>(k)]);
  for (int k = 0; k + 1 < levels_; ++k) midpoint_[k] = 0.5f * (level_[k] + level_[k + 1]);
  first_ = level_[0];
  inv_step_ = 1.0f / (level_[1] - level_[0]);

  int combinations = 1;
  for (int j = 0; j < dims; ++j) combinations *= levels_;
  values_.resize(static_cast<size_t>(points * dims));
  point_of_.assign(static_cast<size_t>(combinations), -1);
  // Level index of value j of each point, and of each combination.
  std::vector<uint8_t> point_levels(static_cast<size_t>(points * dims));
  for (int p = 0; p < points; ++p) {
    int c = 0;
    for (int j = dims - 1; j >= 0; --j) {
      const int k = static_cast<int>(std::lower_bound(bytes.begin(), bytes.end(), byte_of(p, j)) - bytes.begin());
      values_[static_cast<size_t>(p * dims + j)] = static_cast<float>(byte_of(p, j));
      point_levels[static_cast<size_t>(p * dims + j)] = static_cast<uint8_t>(k);
      c = c * levels_ + k;
    }
    point_of_[static_cast<size_t>(c)] = static_cast<int16_t>(p);
  }

  // Neighbours of each combination off the grid: the points at the least (and, with two
  // rings, the next) squared distance in level steps.
  near_first_.assign(static_cast<size_t>(combinations) + 1, 0);
  std::vector<int> dist(static_cast<size_t>(points));
  int levels[kMaxDims];
  for (int c = 0; c < combinations; ++c) {
    near_first_[static_cast<size_t>(c)] = static_cast<uint32_t>(near_.size());
    if (point_of_[static_cast<size_t>(c)] >= 0) continue;
    for (int j = 0, rest = c; j < dims; ++j, rest /= levels_) levels[j] = rest % levels_;
    int least = INT_MAX, next = INT_MAX;
    for (int p = 0; p < points; ++p) {
      int d = 0;
      for (int j = 0; j < dims; ++j) {
        const int diff = levels[j] - point_levels[static_cast<size_t>(p * dims + j)];
        d += diff * diff;
      }
      dist[static_cast<size_t>(p)] = d;
      if (d < least) {
        next = least;
        least = d;
      } else if (d > least && d < next) {
        next = d;
      }
    }
    for (int p = 0; p < points; ++p)
      if (dist[static_cast<size_t>(p)] <= (rings > 1 ? next : least)) near_.push_back(static_cast<uint16_t>(p));
  }
  near_first_[static_cast<size_t>(combinations)] = static_cast<uint32_t>(near_.size());
}

int Lattice::nearest(const float* m, const float* w, float scale, float inv) const {
  int c = 0;
  for (int j = dims_ - 1; j >= 0; --j) {
    // The level of an evenly spaced grid, then one step either way where the spacing is
    // uneven (IQ3_XXS's top level, 62 where 60 would be even; IQ2's 8, 25, 43).
    const float t = m[j] * inv;
    const float u = (t - first_) * inv_step_ + 0.5f;  // NaN goes to level 0
    const auto top = static_cast<float>(levels_ - 1);
    int k = static_cast<int>(u > 0 ? (u < top ? u : top) : 0);
    if (k < levels_ - 1 && t > midpoint_[k]) ++k;
    else if (k > 0 && !(t > midpoint_[k - 1])) --k;
    c = c * levels_ + k;
  }
  if (const int p = point_of_[static_cast<size_t>(c)]; p >= 0) return p;
  int best = 0;
  float best_err = -1;
  for (uint32_t i = near_first_[static_cast<size_t>(c)]; i < near_first_[static_cast<size_t>(c) + 1]; ++i) {
    const float* v = values_.data() + static_cast<size_t>(near_[i]) * static_cast<size_t>(dims_);
    float err = 0;
    for (int j = 0; j < dims_; ++j) {
      const float e = m[j] - scale * v[j];
      err += w[j] * (e * e);
    }
    if (best_err < 0 || err < best_err) {
      best_err = err;
      best = near_[i];
    }
  }
  return best;
}

namespace {

template <size_t kN> std::vector<uint64_t> widen(const uint32_t (&grid)[kN]) { return {grid, grid + kN}; }

}  // namespace

const Lattice& iq2xxs_lattice() {
  static const Lattice lattice(io::kIq2xxsGrid, 256, 8, 1);
  return lattice;
}
const Lattice& iq2xs_lattice() {
  static const Lattice lattice(io::kIq2xsGrid, 512, 8, 1);
  return lattice;
}
const Lattice& iq2s_lattice() {
  static const Lattice lattice(io::kIq2sGrid, 1024, 8, 1);
  return lattice;
}
const Lattice& iq3xxs_lattice() {
  static const Lattice lattice(widen(io::kIq3xxsGrid).data(), 256, 4, 2);
  return lattice;
}
const Lattice& iq3s_lattice() {
  static const Lattice lattice(widen(io::kIq3sGrid).data(), 512, 4, 2);
  return lattice;
}

}  // namespace tk::quant::iq
