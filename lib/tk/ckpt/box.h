// Boxes of a global tensor: the region offsets[d] <= i[d] < offsets[d] + shape[d] that a
// saved slice holds or a restoring rank wants, and the byte geometry of copying between
// two row-major buffers holding different boxes. Internal to lib/tk/ckpt.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tk/core/shape.h"

namespace tk::ckpt {

struct Box {
  Shape start;  // offsets of the box in the global tensor
  Shape shape;  // extents
};

uint64_t box_numel(const Box& box);
// "[0:500, 0:37]" (half-open ranges of the global index).
std::string box_to_string(const Box& box);
// True when the box lies inside a tensor of `global` shape (same rank, no negative part).
bool box_inside(const Box& box, const Shape& global);
// The common part of two boxes of the same rank; nullopt when they do not overlap (an
// empty box overlaps nothing).
std::optional<Box> box_intersect(const Box& a, const Box& b);

// Call `run(src_offset, dst_offset, bytes)` for every contiguous run of `region` (inside
// both boxes) between a row-major buffer holding box `src` and one holding box `dst`,
// elements of `elem_bytes` bytes, in increasing order of both offsets.
void box_runs(const Box& src, const Box& dst, const Box& region, uint64_t elem_bytes,
              const std::function<void(uint64_t, uint64_t, uint64_t)>& run);

// A point of `want` that none of `boxes` covers, found among the corners the boxes'
// edges make (exact: between two edges coverage does not change); nullopt when every
// corner is covered, or when there are too many corners to search (callers decide
// coverage by volume, since saved boxes never overlap, and use this to name a point).
std::optional<Shape> box_uncovered_point(const Box& want, const std::vector<Box>& boxes);

}  // namespace tk::ckpt
