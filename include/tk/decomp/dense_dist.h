// Dense decompositions across the processes of an MPI job (any tk::dist::Comm): the
// tensor is cut into slabs along one mode, each process holding (and reading) only its
// rows of that mode, as a 1 x ... x P x ... x 1 processor grid.
//
// CP-ALS: the cut mode is mode 0 (a slab is one byte range of a row-major file). Factor 0
// is spread as the slabs are, the others are whole on every process. An MTTKRP of mode 0
// is complete in each process's rows; of any other mode it is summed over the slabs
// (I_n x R values), after which every process solves the same small system. The Gram
// start sums each mode's Gram matrix over the slabs.
//
// Tucker: the cut mode is the one ST-HOSVD projects last (tucker_cut_mode). Every other
// mode's Gram matrix is summed over the slabs, its eigenvectors are computed on every
// process alike, and each slab is projected locally; the shrunk slabs are then gathered
// and the last mode is done whole on every process. HOOI sums each partial projection
// over the slabs (or gathers it, for the cut mode). The result, on every process, is the
// one-process result up to the order of floating-point sums, and --tol's bound holds as
// there (tucker.cpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tk/decomp/decomp.h"

namespace tk::dist {
class Comm;
}

namespace tk::decomp {

// CP-ALS of the tensor of `shape` whose mode-0 slabs (slab_rows) are spread over the
// processes of `comm`, `mine` being this process's. The options are cp_als's (no mask);
// every process gets the whole result, equal to cp_als's for the same tensor and seed up
// to the order of floating-point sums. on_iteration is called on process 0 only.
CpResult cp_als(const DenseView<double>& mine, const std::vector<int64_t>& shape, dist::Comm& comm,
                const CpOptions& options);
CpResult cp_als(const DenseView<float>& mine, const std::vector<int64_t>& shape, dist::Comm& comm,
                const CpOptions& options);

// The mode a tensor of `shape` is cut along for tucker() across processes with these
// options: the last of ST-HOSVD's projection order.
size_t tucker_cut_mode(const std::vector<int64_t>& shape, const TuckerOptions& options);

// The rows [first, second) of a mode of `extent` that process `process` of `processes`
// holds (equal shares, the larger ones last; empty when processes > extent).
std::pair<int64_t, int64_t> slab_rows(int64_t extent, int process, int processes);

// Tucker of the tensor of `shape` whose slabs along tucker_cut_mode(shape, options) are
// spread over the processes of `comm`: `mine` is this process's (slab_rows of that mode).
// Every process gets the whole result; on_iteration is called on process 0 only.
TuckerResult tucker(const DenseView<double>& mine, const std::vector<int64_t>& shape, dist::Comm& comm,
                    const TuckerOptions& options);
TuckerResult tucker(const DenseView<float>& mine, const std::vector<int64_t>& shape, dist::Comm& comm,
                    const TuckerOptions& options);

}  // namespace tk::decomp
