#include "tk/quant/iq3_lattice.h"

#include <algorithm>
#include <climits>

#include "tk/core/error.h"
#include "tk/io/ggml_iq_grids.h"

namespace tk::quant::iq3 {

namespace {

constexpr int kCombinations = 1 << (3 * kDims);

int level_at(int combination, int j) { return (combination >> (3 * j)) & 7; }

}  // namespace

Lattice::Lattice(const uint32_t* grid, int points) {
  // The levels are the distinct bytes of the grid, ascending: exactly 8.
  std::vector<int> bytes;
  for (int p = 0; p < points; ++p)
    for (int j = 0; j < kDims; ++j) bytes.push_back(static_cast<int>((grid[p] >> (8 * j)) & 0xFF));
  std::sort(bytes.begin(), bytes.end());
  bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
  if (bytes.size() != kLevels) throw internal_error("an IQ3 grid does not have 8 levels");
  for (int k = 0; k < kLevels; ++k) level_[k] = static_cast<float>(bytes[static_cast<size_t>(k)]);
  for (int k = 0; k + 1 < kLevels; ++k) midpoint_[k] = 0.5f * (level_[k] + level_[k + 1]);
  first_ = level_[0];
  inv_step_ = 1.0f / (level_[1] - level_[0]);

  values_.resize(static_cast<size_t>(points * kDims));
  point_of_.assign(kCombinations, -1);
  std::vector<int> combination_of(static_cast<size_t>(points));
  for (int p = 0; p < points; ++p) {
    int c = 0;
    for (int j = 0; j < kDims; ++j) {
      const int byte = static_cast<int>((grid[p] >> (8 * j)) & 0xFF);
      const int k = static_cast<int>(std::lower_bound(bytes.begin(), bytes.end(), byte) - bytes.begin());
      values_[static_cast<size_t>(p * kDims + j)] = static_cast<float>(byte);
      c |= k << (3 * j);
    }
    point_of_[static_cast<size_t>(c)] = static_cast<int16_t>(p);
    combination_of[static_cast<size_t>(p)] = c;
  }

  // Neighbours of each combination off the grid: the points at the least and the next
  // squared distance in level steps.
  near_first_.assign(kCombinations + 1, 0);
  std::vector<int> dist(static_cast<size_t>(points));
  for (int c = 0; c < kCombinations; ++c) {
    near_first_[static_cast<size_t>(c)] = static_cast<uint32_t>(near_.size());
    if (point_of_[static_cast<size_t>(c)] >= 0) continue;
    int least = INT_MAX, next = INT_MAX;
    for (int p = 0; p < points; ++p) {
      int d = 0;
      for (int j = 0; j < kDims; ++j) {
        const int diff = level_at(c, j) - level_at(combination_of[static_cast<size_t>(p)], j);
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
      if (dist[static_cast<size_t>(p)] <= next) near_.push_back(static_cast<uint16_t>(p));
  }
  near_first_[kCombinations] = static_cast<uint32_t>(near_.size());
}

int Lattice::nearest(const float* m, const float* w, float scale, float inv) const {
  int c = 0;
  for (int j = 0; j < kDims; ++j) {
    // The level of an evenly spaced grid, then one step either way where the spacing is
    // uneven (IQ3_XXS's top level, 62 where 60 would be even).
    const float t = m[j] * inv;
    const float u = (t - first_) * inv_step_ + 0.5f;  // NaN goes to level 0
    int k = static_cast<int>(u > 0 ? (u < kLevels - 1 ? u : kLevels - 1) : 0);
    if (k < kLevels - 1 && t > midpoint_[k]) ++k;
    else if (k > 0 && !(t > midpoint_[k - 1])) --k;
    c |= k << (3 * j);
  }
  if (const int p = point_of_[static_cast<size_t>(c)]; p >= 0) return p;
  int best = 0;
  float best_err = -1;
  for (uint32_t i = near_first_[static_cast<size_t>(c)]; i < near_first_[static_cast<size_t>(c) + 1]; ++i) {
    const float* v = values(near_[i]);
    float err = 0;
    for (int j = 0; j < kDims; ++j) {
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

const Lattice& iq3xxs_lattice() {
  static const Lattice lattice(io::kIq3xxsGrid, 256);
  return lattice;
}

const Lattice& iq3s_lattice() {
  static const Lattice lattice(io::kIq3sGrid, 512);
  return lattice;
}

}  // namespace tk::quant::iq3
