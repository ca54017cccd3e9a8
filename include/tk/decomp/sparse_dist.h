// Sparse CP-ALS across the processes of an MPI job (any tk::dist::Comm), as SPLATT's
// medium-grained decomposition does it:
// - The P processes form a grid p_1 x ... x p_d (the factors of P go, largest first, to
//   the mode with the most rows per part). Mode n is cut into p_n layers of about equal
//   nonzero counts, and a process holds the nonzeros of its own layer in every mode.
// - Within a layer, each process owns a contiguous share of the layer's rows. It holds
//   those rows of the factor, plus copies of the other rows its nonzeros touch.
// - An MTTKRP runs on the process's own nonzeros. Partial rows go to the rows' owners,
//   which add them up, solve and normalise. The new rows go back to the processes that
//   touch them. Only R x R Gram matrices and a few scalars are summed over all
//   processes; no factor is reduced whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tk/decomp/decomp.h"

namespace tk::dist {
class Comm;
}

namespace tk::decomp {

// This process's share of a .tns file that every process of `comm` reads
// (io::read_tns_part): 0-based indices, and the shape that all the parts together give
// (or options.shape). An error on any process (a bad line, an unreadable file) is
// thrown on every process, with the same message.
io::SparseTensor read_tns_shared(const std::string& path, dist::Comm& comm, const io::TnsReadOptions& options = {});

// What a distributed run did, the same on every process.
struct SparseDistStats {
  std::vector<int64_t> grid;          // processes along each mode
  int64_t nnz_min = 0, nnz_max = 0;   // nonzeros a process holds, after the exchange
  int64_t nnz_total = 0;              // of the whole tensor
  // Bytes of factor rows one process sends to others in one ALS iteration (the partial
  // MTTKRP rows to their owners, the new rows back), for every mode together: the
  // busiest process, and the mean over processes.
  uint64_t bytes_per_iteration_max = 0;
  double bytes_per_iteration_mean = 0;
  int64_t factor_rows_max = 0;        // factor rows a process holds (owned + copies)
  uint64_t peak_rss_max = 0;          // the largest peak resident set of a process, bytes
};

// Sparse CP-ALS of the tensor whose nonzeros are spread over the processes of `comm`:
// `mine` holds this process's (any subset, disjoint from the others'; global 0-based
// indices; the same shape everywhere), as read_tns_shared gives them; move it in, and
// its memory goes once the nonzeros are sent to their layers. The options are
// those of the one-process cp_als_sparse, and so are the result's iterations, fit and
// error on every process; the factors and lambda come on process 0 only (empty
// elsewhere). For the same tensor, options and seed they equal cp_als_sparse's up to the
// order of floating-point sums. on_iteration is called on process 0 only.
CpResult cp_als_sparse(io::SparseTensor mine, const CpOptions& options, dist::Comm& comm,
                       SparseDistStats* stats = nullptr);

}  // namespace tk::decomp
