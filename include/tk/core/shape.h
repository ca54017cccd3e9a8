// Shapes: row-major dimension lists with overflow-checked element counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tk {

using Shape = std::vector<int64_t>;

// Number of elements (1 for a 0-rank shape). Throws tk::Error(kInvalidInput) when a
// dimension is negative or the product exceeds 2^62.
uint64_t shape_numel(const Shape& shape);

// "[2, 3, 4]"
std::string shape_to_string(const Shape& shape);

// Parse "2,3,4" or "2x3x4" (for command lines). Throws kUsage on malformed text.
Shape shape_parse(const std::string& text);

}  // namespace tk
