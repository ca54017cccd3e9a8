// tk::dist::Comm over MPI: non-blocking collectives polled until a deadline.
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

// Poll `request` until it completes or `deadline` passes. For the first 200 us each poll
// yields the core (the collectives of an ALS iteration mostly complete within that);
// then the sleep between polls grows to 1 ms: ranks often outnumber cores, and a
// spinning rank steals the writer's time.
void wait_until(MPI_Request& request, Clock::time_point deadline, const char* what) {
  const Clock::time_point spin_until = Clock::now() + std::chrono::microseconds(200);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
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

// The buffers of one collective, the data sent included. A collective request cannot be
// cancelled, and after a timeout MPI still reads from and writes into its buffers when
// the late ranks' messages arrive (in any later MPI call), so the buffers of a timed-out
// collective are kept, reachable, until the process ends.
struct Buffers {
  std::vector<uint8_t> send, all;
  std::vector<int> sizes, displs;
  std::vector<int> send_sizes, send_displs;  // alltoallv's outgoing layout
  int my_size = 0;
};

void keep_until_exit(std::shared_ptr<Buffers> buffers) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<Buffers>> abandoned;
  std::lock_guard lock(mutex);
  abandoned.push_back(std::move(buffers));
}

// Displacements of `sizes` laid end to end; returns the total.
// MPI counts are int: a larger exchange is refused rather than truncated.
int lay_out(const std::vector<int>& sizes, std::vector<int>& displs) {
  displs.resize(sizes.size());
  int64_t total = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    displs[r] = static_cast<int>(total);
    total += sizes[r];
    if (total > INT32_MAX) throw runtime_error("an MPI exchange of more than 2 GiB on one rank; run on more ranks");
  }
  return static_cast<int>(total);
}

int int_count(size_t bytes) {
  if (bytes > static_cast<size_t>(INT32_MAX)) throw runtime_error("an MPI message of more than 2 GiB; run on more ranks");
  return static_cast<int>(bytes);
}

template <typename T> MPI_Datatype mpi_type();
template <> MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <> MPI_Datatype mpi_type<int64_t>() { return MPI_INT64_T; }

std::vector<std::vector<uint8_t>> split(const Buffers& b) {
  std::vector<std::vector<uint8_t>> out(b.sizes.size());
  for (size_t r = 0; r < b.sizes.size(); ++r) {
    out[r].assign(b.all.begin() + b.displs[r], b.all.begin() + b.displs[r] + b.sizes[r]);
  }
  return out;
}

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
    auto b = buffers(mine);
    guard(b, [&] {
      b->sizes.resize(rank_ == 0 ? static_cast<size_t>(size_) : 0);
      MPI_Request request;
      check(MPI_Igather(&b->my_size, 1, MPI_INT, b->sizes.data(), 1, MPI_INT, 0, comm_, &request), "MPI_Igather");
      wait_until(request, deadline, "MPI_Igather");
      b->all.resize(static_cast<size_t>(lay_out(b->sizes, b->displs)));
      check(MPI_Igatherv(b->send.data(), b->my_size, MPI_BYTE, b->all.data(), b->sizes.data(), b->displs.data(),
                         MPI_BYTE, 0, comm_, &request), "MPI_Igatherv");
      wait_until(request, deadline, "MPI_Igatherv");
    });
    return split(*b);
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
    auto b = buffers(mine);
    guard(b, [&] {
      b->sizes.resize(static_cast<size_t>(size_));
      MPI_Request request;
      check(MPI_Iallgather(&b->my_size, 1, MPI_INT, b->sizes.data(), 1, MPI_INT, comm_, &request), "MPI_Iallgather");
      wait_until(request, deadline, "MPI_Iallgather");
      b->all.resize(static_cast<size_t>(lay_out(b->sizes, b->displs)));
      check(MPI_Iallgatherv(b->send.data(), b->my_size, MPI_BYTE, b->all.data(), b->sizes.data(), b->displs.data(),
                            MPI_BYTE, comm_, &request), "MPI_Iallgatherv");
      wait_until(request, deadline, "MPI_Iallgatherv");
    });
    return split(*b);
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
  // alltoallv, the incoming sizes exchanged first unless `from` gives them.
  std::vector<std::vector<uint8_t>> exchange(std::vector<std::vector<uint8_t>> to, const std::vector<size_t>* from,
                                             Clock::time_point deadline) {
    if (to.size() != static_cast<size_t>(size_)) throw internal_error("alltoallv needs one piece per rank");
    auto b = std::make_shared<Buffers>();
    b->send_sizes.resize(to.size());
    for (size_t r = 0; r < to.size(); ++r) b->send_sizes[r] = int_count(to[r].size());
    b->send.resize(static_cast<size_t>(lay_out(b->send_sizes, b->send_displs)));
    for (size_t r = 0; r < to.size(); ++r) {
      std::copy(to[r].begin(), to[r].end(), b->send.begin() + b->send_displs[r]);
      std::vector<uint8_t>().swap(to[r]);
    }
    guard(b, [&] {
      b->sizes.resize(static_cast<size_t>(size_));
      MPI_Request request;
      if (from) {
        for (size_t r = 0; r < from->size(); ++r) b->sizes[r] = int_count((*from)[r]);
      } else {
        check(MPI_Ialltoall(b->send_sizes.data(), 1, MPI_INT, b->sizes.data(), 1, MPI_INT, comm_, &request),
              "MPI_Ialltoall");
        wait_until(request, deadline, "MPI_Ialltoall");
      }
      b->all.resize(static_cast<size_t>(lay_out(b->sizes, b->displs)));
      check(MPI_Ialltoallv(b->send.data(), b->send_sizes.data(), b->send_displs.data(), MPI_BYTE, b->all.data(),
                           b->sizes.data(), b->displs.data(), MPI_BYTE, comm_, &request), "MPI_Ialltoallv");
      wait_until(request, deadline, "MPI_Ialltoallv");
    });
    return split(*b);
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
