// tk::dist::Comm over MPI: non-blocking collectives (and, for alltoallv, point-to-point
// messages) polled until a deadline; any size, in rounds of at most 2 GiB.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tk/core/error.h"
#include "tk/dist/comm.h"
#include "tk/dist/launch.h"

namespace tk::dist {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw runtime_error(std::string(what) + " failed: " + std::string(text, static_cast<size_t>(len)));
}

// Poll `requests` until all complete or `deadline` passes. For the first 5 ms each poll
// yields the core: a large message takes several protocol steps, each needing both ranks
// in MPI, and a sleeping rank delays every step (sparse CP's iteration on 2 and 4 ranks
// took 1.5x as long with 0.2 ms: docs/BENCHMARKS.md). Then the sleep between polls
// grows to 1 ms: ranks often outnumber cores, and a spinning rank steals the writer's
// time.
void wait_all(std::vector<MPI_Request>& requests, Clock::time_point deadline, const char* what) {
  const Clock::time_point spin_until = Clock::now() + std::chrono::milliseconds(5);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int done = 0;
    check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE), what);
    if (done) return;
    if (Clock::now() < spin_until) {
      std::this_thread::yield();
      continue;
    }
    if (Clock::now() >= deadline)
      throw runtime_error(std::string("collective commit timed out in ") + what +
                          " (a rank died or hangs; the step is not committed by this rank)");
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
  }
}

void wait_until(MPI_Request& request, Clock::time_point deadline, const char* what) {
  std::vector<MPI_Request> one = {request};
  wait_all(one, deadline, what);
  request = one[0];
}

// The most bytes one rank moves in one MPI call (MPI counts are int); larger gathers go
// in rounds and larger point-to-point pieces in parts. TK_MPI_MESSAGE_BYTES lowers it, so
// that tests can exercise the rounds with small data.
int64_t message_cap() {
  static const int64_t cap = [] {
    const char* text = std::getenv("TK_MPI_MESSAGE_BYTES");
    const int64_t wanted = text ? std::atoll(text) : 0;
    return wanted > 0 ? std::min<int64_t>(wanted, INT32_MAX) : int64_t{INT32_MAX};
  }();
  return cap;
}

// Bytes [n k / parts, n (k+1) / parts) of n: part k of `parts` near-equal parts.
int64_t part_begin(int64_t n, int64_t k, int64_t parts) { return n / parts * k + n % parts * k / parts; }

// The buffers of one collective, the data sent included. A collective request cannot be
// cancelled, and after a timeout MPI still reads from and writes into its buffers when
// the late ranks' messages arrive (in any later MPI call), so the buffers of a timed-out
// collective are kept, reachable, until the process ends.
struct Buffers {
  std::vector<uint8_t> send, all;
  std::vector<int> sizes, displs;
  int my_size = 0;
  std::vector<int64_t> out_sizes, in_sizes;          // whole pieces' sizes (any size)
  std::vector<std::vector<uint8_t>> out, in;         // alltoallv's pieces, and gathered ones
  std::vector<MPI_Request> requests;
};

void keep_until_exit(std::shared_ptr<Buffers> buffers) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<Buffers>> abandoned;
  std::lock_guard lock(mutex);
  abandoned.push_back(std::move(buffers));
}

// Displacements of `sizes` laid end to end (each round keeps the total within int);
// returns the total.
int lay_out(const std::vector<int>& sizes, std::vector<int>& displs) {
  displs.resize(sizes.size());
  int64_t total = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    displs[r] = static_cast<int>(total);
    total += sizes[r];
  }
  if (total > INT32_MAX) throw internal_error("an MPI round over 2 GiB");
  return static_cast<int>(total);
}

int int_count(size_t count) {
  if (count > static_cast<size_t>(INT32_MAX)) throw runtime_error("an MPI reduction of more than 2^31 values");
  return static_cast<int>(count);
}

template <typename T> MPI_Datatype mpi_type();
template <> MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <> MPI_Datatype mpi_type<int64_t>() { return MPI_INT64_T; }

class MpiComm final : public Comm {
 public:
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiComm() override {
    // Freeing a communicator with a collective still pending (after a timeout) is
    // erroneous; leave it to MPI_Finalize then.
    if (!broken_) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<uint8_t> gather(std::span<const uint8_t> record, Clock::time_point deadline) override {
    auto b = buffers(record);
    b->all.resize(rank_ == 0 ? record.size() * static_cast<size_t>(size_) : 0);
    guard(b, [&] {
      MPI_Request request;
      check(MPI_Igather(b->send.data(), b->my_size, MPI_BYTE, b->all.data(), b->my_size, MPI_BYTE, 0, comm_,
                        &request), "MPI_Igather");
      wait_until(request, deadline, "MPI_Igather");
    });
    return std::move(b->all);
  }

  std::vector<std::vector<uint8_t>> gatherv(std::span<const uint8_t> mine, Clock::time_point deadline) override {
    return gather_rounds(mine, false, deadline);
  }

  void broadcast(std::span<uint8_t> bytes, Clock::time_point deadline) override {
    auto b = buffers(bytes);
    guard(b, [&] {
      MPI_Request request;
      check(MPI_Ibcast(b->send.data(), b->my_size, MPI_BYTE, 0, comm_, &request), "MPI_Ibcast");
      wait_until(request, deadline, "MPI_Ibcast");
    });
    std::copy(b->send.begin(), b->send.end(), bytes.begin());
  }

  std::vector<std::vector<uint8_t>> allgather(std::span<const uint8_t> mine, Clock::time_point deadline) override {
    return gather_rounds(mine, true, deadline);
  }

  std::vector<std::vector<uint8_t>> alltoallv(std::vector<std::vector<uint8_t>> to,
                                              Clock::time_point deadline) override {
    return exchange(std::move(to), nullptr, deadline);
  }
  std::vector<std::vector<uint8_t>> alltoallv(std::vector<std::vector<uint8_t>> to, const std::vector<size_t>& from,
                                              Clock::time_point deadline) override {
    if (from.size() != static_cast<size_t>(size_)) throw internal_error("alltoallv needs one size per rank");
    return exchange(std::move(to), &from, deadline);
  }

  void allreduce_sum(std::span<double> values, Clock::time_point deadline) override {
    allreduce(values, MPI_SUM, deadline);
  }
  void allreduce_sum(std::span<int64_t> values, Clock::time_point deadline) override {
    allreduce(values, MPI_SUM, deadline);
  }
  void allreduce_max(std::span<int64_t> values, Clock::time_point deadline) override {
    allreduce(values, MPI_MAX, deadline);
  }

 private:
  // Every rank's piece (sizes may differ, any size) at rank 0 (`all` false) or everywhere:
  // the sizes first, then as many rounds of I(all)gatherv as keep each round's total
  // within message_cap(), each carrying part k of every piece.
  std::vector<std::vector<uint8_t>> gather_rounds(std::span<const uint8_t> mine, bool all, Clock::time_point deadline) {
    auto b = std::make_shared<Buffers>();
    b->send.assign(mine.begin(), mine.end());
    const bool receives = all || rank_ == 0;
    guard(b, [&] {
      const int64_t my_size = static_cast<int64_t>(b->send.size());
      b->in_sizes.resize(static_cast<size_t>(size_));
      MPI_Request request;
      check(MPI_Iallgather(&my_size, 1, MPI_INT64_T, b->in_sizes.data(), 1, MPI_INT64_T, comm_, &request),
            "MPI_Iallgather");
      wait_until(request, deadline, "MPI_Iallgather");
      int64_t total = 0;
      for (int64_t n : b->in_sizes) total += n;
      const int64_t rounds = std::max<int64_t>(1, (total + message_cap() - 1) / message_cap());
      if (receives) {
        b->in.resize(static_cast<size_t>(size_));
        for (size_t p = 0; p < b->in.size(); ++p) b->in[p].resize(static_cast<size_t>(b->in_sizes[p]));
      }
      b->sizes.resize(static_cast<size_t>(size_));
      for (int64_t k = 0; k < rounds; ++k) {
        for (size_t p = 0; p < b->sizes.size(); ++p)
          b->sizes[p] = static_cast<int>(part_begin(b->in_sizes[p], k + 1, rounds) - part_begin(b->in_sizes[p], k, rounds));
        b->all.resize(receives ? static_cast<size_t>(lay_out(b->sizes, b->displs)) : 0);
        const int64_t from = part_begin(my_size, k, rounds);
        const int count = b->sizes[static_cast<size_t>(rank_)];
        if (all)
          check(MPI_Iallgatherv(b->send.data() + from, count, MPI_BYTE, b->all.data(), b->sizes.data(),
                                b->displs.data(), MPI_BYTE, comm_, &request), "MPI_Iallgatherv");
        else
          check(MPI_Igatherv(b->send.data() + from, count, MPI_BYTE, b->all.data(), b->sizes.data(), b->displs.data(),
                             MPI_BYTE, 0, comm_, &request), "MPI_Igatherv");
        wait_until(request, deadline, all ? "MPI_Iallgatherv" : "MPI_Igatherv");
        if (!receives) continue;
        for (size_t p = 0; p < b->in.size(); ++p)
          std::copy_n(b->all.begin() + b->displs[p], b->sizes[p],
                      b->in[p].begin() + part_begin(b->in_sizes[p], k, rounds));
      }
    });
    return std::move(b->in);
  }

  // alltoallv by point to point: the incoming sizes exchanged first unless `from` gives
  // them; each piece goes in parts of at most message_cap() bytes; empty pieces send
  // nothing, which suits the sparse patterns of the distributed decompositions.
  std::vector<std::vector<uint8_t>> exchange(std::vector<std::vector<uint8_t>> to, const std::vector<size_t>* from,
                                             Clock::time_point deadline) {
    if (to.size() != static_cast<size_t>(size_)) throw internal_error("alltoallv needs one piece per rank");
    auto b = std::make_shared<Buffers>();
    b->out = std::move(to);
    guard(b, [&] {
      const size_t n = static_cast<size_t>(size_);
      b->out_sizes.resize(n);
      for (size_t p = 0; p < n; ++p) b->out_sizes[p] = static_cast<int64_t>(b->out[p].size());
      b->in_sizes.resize(n);
      if (from) {
        for (size_t p = 0; p < n; ++p) b->in_sizes[p] = static_cast<int64_t>((*from)[p]);
      } else {
        MPI_Request request;
        check(MPI_Ialltoall(b->out_sizes.data(), 1, MPI_INT64_T, b->in_sizes.data(), 1, MPI_INT64_T, comm_, &request),
              "MPI_Ialltoall");
        wait_until(request, deadline, "MPI_Ialltoall");
      }
      b->in.resize(n);
      const int64_t cap = message_cap();
      for (size_t p = 0; p < n; ++p) {
        b->in[p].resize(static_cast<size_t>(b->in_sizes[p]));
        if (static_cast<int>(p) == rank_) {
          if (b->in_sizes[p] != b->out_sizes[p]) throw internal_error("alltoallv: this rank's own piece changed size");
          b->in[p] = std::move(b->out[p]);
          continue;
        }
        for (int64_t at = 0; at < b->in_sizes[p]; at += cap) {
          b->requests.emplace_back();
          check(MPI_Irecv(b->in[p].data() + at, static_cast<int>(std::min(cap, b->in_sizes[p] - at)), MPI_BYTE,
                          static_cast<int>(p), kExchangeTag, comm_, &b->requests.back()), "MPI_Irecv");
        }
        for (int64_t at = 0; at < b->out_sizes[p]; at += cap) {
          b->requests.emplace_back();
          check(MPI_Isend(b->out[p].data() + at, static_cast<int>(std::min(cap, b->out_sizes[p] - at)), MPI_BYTE,
                          static_cast<int>(p), kExchangeTag, comm_, &b->requests.back()), "MPI_Isend");
        }
      }
      wait_all(b->requests, deadline, "alltoallv");
    });
    return std::move(b->in);
  }

  template <typename T> void allreduce(std::span<T> values, MPI_Op op, Clock::time_point deadline) {
    auto b = buffers({reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes()});
    b->all.resize(b->send.size());
    guard(b, [&] {
      MPI_Request request;
      check(MPI_Iallreduce(b->send.data(), b->all.data(), int_count(values.size()), mpi_type<T>(), op, comm_,
                           &request), "MPI_Iallreduce");
      wait_until(request, deadline, "MPI_Iallreduce");
    });
    std::copy(b->all.begin(), b->all.end(), reinterpret_cast<uint8_t*>(values.data()));
  }

  static std::shared_ptr<Buffers> buffers(std::span<const uint8_t> send) {
    auto b = std::make_shared<Buffers>();
    b->send.assign(send.begin(), send.end());
    b->my_size = static_cast<int>(send.size());
    return b;
  }
  template <typename Body> void guard(const std::shared_ptr<Buffers>& b, Body&& body) {
    if (broken_) throw runtime_error("communicator unusable after an earlier failed collective");
    try {
      body();
    } catch (...) {
      broken_ = true;
      keep_until_exit(b);
      throw;
    }
  }

  static constexpr int kExchangeTag = 7071;  // alltoallv's messages; nothing else uses point to point

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  bool broken_ = false;
};

}  // namespace

bool mpi_available() { return true; }

std::unique_ptr<Comm> world() {
  if (!launched_by_mpi()) return nullptr;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw usage_error("MPI was finalised already");
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    std::atexit([] {
      int done = 0;
      MPI_Finalized(&done);
      if (!done) MPI_Finalize();
    });
  }
  MPI_Comm dup;
  check(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  return std::make_unique<MpiComm>(dup);
}

std::unique_ptr<Comm> mpi_comm(int fint) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) throw usage_error("MPI is not initialised (call MPI_Init first)");
  MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(fint));
  if (comm == MPI_COMM_NULL) throw usage_error("the communicator is MPI_COMM_NULL");
  MPI_Comm dup;
  check(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  return std::make_unique<MpiComm>(dup);
}

}  // namespace tk::dist
