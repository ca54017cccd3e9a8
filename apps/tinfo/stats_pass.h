// Statistics of many tensors of one reader, in the reader's storage order (so pipes
// work), small tensors several at a time in parallel, large ones one at a time, piece
// by piece, each piece with its own parallel pass.
#pragma once

#include <vector>

#include "tk/core/stats.h"
#include "tk/io/tensor_file.h"

namespace tk::tinfo {

// Statistics of tensors `indices` (increasing) of `reader`, in the same order.
// Memory: a piece of a large tensor (unless the reader holds it whole), or a batch of
// small ones up to a few tens of MiB.
std::vector<TensorStats> stats_pass(io::TensorReader& reader, const std::vector<size_t>& indices);

}  // namespace tk::tinfo
