#include "tk/ckpt/box.h"

#include <algorithm>
#include <set>

namespace tk::ckpt {

uint64_t box_numel(const Box& box) { return shape_numel(box.shape); }

std::string box_to_string(const Box& box) {
  std::string s = "[";
  for (size_t d = 0; d < box.shape.size(); ++d) {
    if (d) s += ", ";
    s += std::to_string(box.start[d]) + ":" + std::to_string(box.start[d] + box.shape[d]);
  }
  return s + "]";
}

bool box_inside(const Box& box, const Shape& global) {
  if (box.start.size() != global.size() || box.shape.size() != global.size()) return false;
  for (size_t d = 0; d < global.size(); ++d) {
    if (box.start[d] < 0 || box.shape[d] < 0 || box.start[d] > global[d]) return false;
    if (box.shape[d] > global[d] - box.start[d]) return false;
  }
  return true;
}

std::optional<Box> box_intersect(const Box& a, const Box& b) {
  Box r;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    int64_t lo = std::max(a.start[d], b.start[d]);
    int64_t hi = std::min(a.start[d] + a.shape[d], b.start[d] + b.shape[d]);
    if (hi <= lo) return std::nullopt;
    r.start.push_back(lo);
    r.shape.push_back(hi - lo);
  }
  return r;
}

void box_runs(const Box& src, const Box& dst, const Box& region, uint64_t elem_bytes,
              const std::function<void(uint64_t, uint64_t, uint64_t)>& run) {
  const size_t nd = region.shape.size();
  if (box_numel(region) == 0) return;
  // Trailing dimensions that the region spans whole in both buffers merge into one run.
  size_t inner = nd;  // dimensions [inner, nd) form each run
  uint64_t run_elems = 1;
  while (inner > 0) {
    size_t d = inner - 1;
    run_elems *= static_cast<uint64_t>(region.shape[d]);
    --inner;
    if (region.shape[d] != src.shape[d] || region.shape[d] != dst.shape[d]) break;
  }
  // Row-major strides (in elements) of both buffers.
  std::vector<uint64_t> src_stride(nd + 1, 1), dst_stride(nd + 1, 1);
  for (size_t d = nd; d-- > 0;) {
    src_stride[d] = src_stride[d + 1] * static_cast<uint64_t>(src.shape[d]);
    dst_stride[d] = dst_stride[d + 1] * static_cast<uint64_t>(dst.shape[d]);
  }
  std::vector<int64_t> index(region.start);  // global index of the run's first element
  for (;;) {
    uint64_t s = 0, t = 0;
    for (size_t d = 0; d < nd; ++d) {
      s += static_cast<uint64_t>(index[d] - src.start[d]) * src_stride[d + 1];
      t += static_cast<uint64_t>(index[d] - dst.start[d]) * dst_stride[d + 1];
    }
    run(s * elem_bytes, t * elem_bytes, run_elems * elem_bytes);
    // Next index over the outer dimensions [0, inner).
    size_t d = inner;
    while (d > 0) {
      --d;
      if (++index[d] < region.start[d] + region.shape[d]) break;
      index[d] = region.start[d];
      if (d == 0) return;
    }
    if (inner == 0) return;
  }
}

std::optional<Shape> box_uncovered_point(const Box& want, const std::vector<Box>& boxes) {
  const size_t nd = want.shape.size();
  if (box_numel(want) == 0) return std::nullopt;
  std::vector<std::vector<int64_t>> candidates(nd);
  uint64_t corners = 1;
  for (size_t d = 0; d < nd; ++d) {
    std::set<int64_t> c = {want.start[d]};
    const int64_t lo = want.start[d], hi = want.start[d] + want.shape[d];
    for (const auto& b : boxes)
      for (int64_t x : {b.start[d], b.start[d] + b.shape[d]})
        if (x > lo && x < hi) c.insert(x);
    candidates[d].assign(c.begin(), c.end());
    corners *= candidates[d].size();
    if (corners > 1000000) return std::nullopt;
  }
  std::vector<size_t> pick(nd, 0);
  Shape point(nd);
  for (;;) {
    for (size_t d = 0; d < nd; ++d) point[d] = candidates[d][pick[d]];
    bool covered = std::any_of(boxes.begin(), boxes.end(), [&](const Box& b) {
      for (size_t d = 0; d < nd; ++d)
        if (point[d] < b.start[d] || point[d] >= b.start[d] + b.shape[d]) return false;
      return true;
    });
    if (!covered) return point;
    size_t d = nd;
    while (d > 0 && ++pick[d - 1] == candidates[d - 1].size()) pick[--d] = 0;
    if (d == 0) return std::nullopt;
  }
}

}  // namespace tk::ckpt
