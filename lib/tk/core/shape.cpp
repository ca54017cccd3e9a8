#include "tk/core/shape.h"

#include <charconv>

#include "tk/core/error.h"

namespace tk {

uint64_t shape_numel(const Shape& shape) {
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw invalid_input("negative dimension " + std::to_string(d) + " in shape");
    if (d == 0) n = 0;
    else if (n != 0 && static_cast<uint64_t>(d) > kLimit / n)
      throw invalid_input("shape " + shape_to_string(shape) + " has too many elements");
    else n *= static_cast<uint64_t>(d);
  }
  // A zero dimension makes the tensor empty, but the other dimensions still must not
  // overflow on their own; check the product of the non-zero ones.
  if (n == 0) {
    uint64_t m = 1;
    for (int64_t d : shape) {
      if (d == 0) continue;
      if (static_cast<uint64_t>(d) > kLimit / m)
        throw invalid_input("shape " + shape_to_string(shape) + " has too many elements");
      m *= static_cast<uint64_t>(d);
    }
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Shape shape_parse(const std::string& text) {
  Shape shape;
  const char* p = text.data();
  const char* end = p + text.size();
  if (p == end) throw usage_error("empty shape");
  while (p < end) {
    int64_t d = 0;
    auto [next, ec] = std::from_chars(p, end, d);
    if (ec != std::errc() || d < 0) throw usage_error("malformed shape '" + text + "'");
    shape.push_back(d);
    p = next;
    if (p < end) {
      if (*p != ',' && *p != 'x') throw usage_error("malformed shape '" + text + "'");
      ++p;
      if (p == end) throw usage_error("malformed shape '" + text + "'");
    }
  }
  shape_numel(shape);
  return shape;
}

}  // namespace tk
