// The one small MPI layer: a communicator whose collectives fail with a deadline instead
// of hanging when a rank died or hangs. No MPI type appears here, so the library above it
// (the distributed checkpointer) builds and is tested without MPI; mpi_comm.cpp, built
// with TK_MPI, is the only file that includes mpi.h.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <vector>

namespace tk::dist {

using Clock = std::chrono::steady_clock;

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Collectives: every rank calls them in the same order. Each throws kRuntime "...
  // timed out" when it has not completed on this rank by `deadline`, and kRuntime for an
  // MPI failure; the communicator should not be used for collectives after either.
  //
  // Gather `record` (the same size on every rank) at rank 0: size() records in rank
  // order there, nothing elsewhere.
  virtual std::vector<uint8_t> gather(std::span<const uint8_t> record, Clock::time_point deadline) = 0;
  // Gather `mine` (sizes may differ) at rank 0: every rank's, in rank order, there;
  // nothing elsewhere.
  virtual std::vector<std::vector<uint8_t>> gatherv(std::span<const uint8_t> mine, Clock::time_point deadline) = 0;
  // Replace `bytes` (the same size on every rank) with rank 0's.
  virtual void broadcast(std::span<uint8_t> bytes, Clock::time_point deadline) = 0;
  // Every rank's `mine` (sizes may differ), in rank order, on every rank.
  virtual std::vector<std::vector<uint8_t>> allgather(std::span<const uint8_t> mine, Clock::time_point deadline) = 0;
  // Send to[r] to rank r (to.size() == size(), sizes may differ); returns what every rank
  // sent to this one, in rank order. Each piece must stay under 2 GiB; `to` is taken so
  // that its memory can go as soon as it is copied.
  virtual std::vector<std::vector<uint8_t>> alltoallv(std::vector<std::vector<uint8_t>> to,
                                                      Clock::time_point deadline) = 0;
  // The same when this rank knows how many bytes each rank sends it (`from[r]`), as in
  // an exchange repeated every iteration: the sizes are not exchanged first. A piece of
  // another size is an internal error.
  virtual std::vector<std::vector<uint8_t>> alltoallv(std::vector<std::vector<uint8_t>> to,
                                                      const std::vector<size_t>& from, Clock::time_point deadline);
  // Replace `values` (the same length on every rank) by their element-wise sum, or
  // maximum, over every rank; every rank gets the same bytes.
  virtual void allreduce_sum(std::span<double> values, Clock::time_point deadline) = 0;
  virtual void allreduce_sum(std::span<int64_t> values, Clock::time_point deadline) = 0;
  virtual void allreduce_max(std::span<int64_t> values, Clock::time_point deadline) = 0;
};

// The deadline the distributed computations give each collective: one that has not
// completed in an hour means a rank died or hangs, and the waiting ranks stop with the
// communicator's timeout error instead of waiting forever.
inline Clock::time_point compute_deadline() { return Clock::now() + std::chrono::hours(1); }

// Replace `values` by their element-wise sum over every rank, added in double whatever T.
template <typename T> void sum_in_double(Comm& comm, std::vector<T>& values) {
  std::vector<double> wide(values.begin(), values.end());
  comm.allreduce_sum(std::span<double>(wide), compute_deadline());
  std::copy(wide.begin(), wide.end(), values.begin());
}

// Pieces of bytes (a gather's, in rank order) as one array of T, end to end.
template <typename T> std::vector<T> concatenated(const std::vector<std::vector<uint8_t>>& pieces) {
  size_t bytes = 0;
  for (const auto& piece : pieces) bytes += piece.size();
  std::vector<T> out(bytes / sizeof(T));
  auto* at = reinterpret_cast<uint8_t*>(out.data());
  for (const auto& piece : pieces) at = std::copy(piece.begin(), piece.end(), at);
  return out;
}

// Make an error on some ranks an error on all: every rank calls this at the same point
// with the exception it caught there (nullptr when it has none). When any rank has one,
// every rank throws the tk::Error of the lowest such rank (its kind, message and place),
// so that all stop with one message and one exit status instead of some waiting for the
// others.
void raise_together(Comm& comm, std::exception_ptr mine, Clock::time_point deadline);

// Whether this build has the MPI transport.
bool mpi_available();
// The world of the MPI job this process was started in, for a tool run as `mpirun -np P
// tool ...` or `srun --mpi=pmix -n P tool ...`: initialises MPI (finalised at exit) and
// returns a communicator over every rank (errors returned, not aborting). nullptr when no
// MPI launcher started the process. Throws kUnavailable when one did, for more than one
// rank, in a build without MPI.
std::unique_ptr<Comm> world();
// A duplicate of the MPI communicator with Fortran handle `fint` (MPI_Comm_c2f), errors
// returned rather than aborting. Throws kUnavailable when built without MPI, kUsage when
// MPI is not initialised or the handle is not a communicator.
std::unique_ptr<Comm> mpi_comm(int fint);

}  // namespace tk::dist
