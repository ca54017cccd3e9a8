// tk::dist::Comm over MPI: non-blocking collectives polled until a deadline.
#include <mpi.h>

#include <string>
#include <thread>

#include "tk/core/error.h"
#include "tk/dist/comm.h"

namespace tk::dist {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw runtime_error(std::string(what) + " failed: " + std::string(text, static_cast<size_t>(len)));
}

// Poll `request` until it completes or `deadline` passes. The sleep between polls grows
// to 1 ms: ranks often outnumber cores, and a spinning rank steals the writer's time.
void wait_until(MPI_Request& request, Clock::time_point deadline, const char* what) {
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (Clock::now() >= deadline)
      throw runtime_error(std::string("collective commit timed out in ") + what +
                          " (a rank died or hangs; the step is not committed by this rank)");
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
  }
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
    std::vector<uint8_t> all(rank_ == 0 ? record.size() * static_cast<size_t>(size_) : 0);
    guard([&] {
      MPI_Request request;
      check(MPI_Igather(record.data(), static_cast<int>(record.size()), MPI_BYTE, all.data(),
                        static_cast<int>(record.size()), MPI_BYTE, 0, comm_, &request), "MPI_Igather");
      wait_until(request, deadline, "MPI_Igather");
    });
    return all;
  }

  std::vector<std::vector<uint8_t>> gatherv(std::span<const uint8_t> mine, Clock::time_point deadline) override {
    std::vector<std::vector<uint8_t>> out(rank_ == 0 ? static_cast<size_t>(size_) : 0);
    guard([&] {
      int my_size = static_cast<int>(mine.size());
      std::vector<int> sizes(rank_ == 0 ? static_cast<size_t>(size_) : 0);
      MPI_Request request;
      check(MPI_Igather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm_, &request), "MPI_Igather");
      wait_until(request, deadline, "MPI_Igather");
      std::vector<int> displs(sizes.size());
      int total = 0;
      for (size_t r = 0; r < sizes.size(); ++r) {
        displs[r] = total;
        total += sizes[r];
      }
      std::vector<uint8_t> all(static_cast<size_t>(total));
      check(MPI_Igatherv(mine.data(), my_size, MPI_BYTE, all.data(), sizes.data(), displs.data(), MPI_BYTE, 0, comm_,
                         &request), "MPI_Igatherv");
      wait_until(request, deadline, "MPI_Igatherv");
      for (size_t r = 0; r < sizes.size(); ++r) out[r].assign(all.begin() + displs[r], all.begin() + displs[r] + sizes[r]);
    });
    return out;
  }

  void broadcast(std::span<uint8_t> bytes, Clock::time_point deadline) override {
    guard([&] {
      MPI_Request request;
      check(MPI_Ibcast(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, comm_, &request), "MPI_Ibcast");
      wait_until(request, deadline, "MPI_Ibcast");
    });
  }

  std::vector<std::vector<uint8_t>> allgather(std::span<const uint8_t> mine, Clock::time_point deadline) override {
    std::vector<std::vector<uint8_t>> out(static_cast<size_t>(size_));
    guard([&] {
      int my_size = static_cast<int>(mine.size());
      std::vector<int> sizes(static_cast<size_t>(size_));
      MPI_Request request;
      check(MPI_Iallgather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm_, &request), "MPI_Iallgather");
      wait_until(request, deadline, "MPI_Iallgather");
      std::vector<int> displs(static_cast<size_t>(size_));
      int total = 0;
      for (int r = 0; r < size_; ++r) {
        displs[r] = total;
        total += sizes[r];
      }
      std::vector<uint8_t> all(static_cast<size_t>(total));
      check(MPI_Iallgatherv(mine.data(), my_size, MPI_BYTE, all.data(), sizes.data(), displs.data(), MPI_BYTE, comm_,
                            &request), "MPI_Iallgatherv");
      wait_until(request, deadline, "MPI_Iallgatherv");
      for (int r = 0; r < size_; ++r) out[r].assign(all.begin() + displs[r], all.begin() + displs[r] + sizes[r]);
    });
    return out;
  }

 private:
  template <typename Body> void guard(Body&& body) {
    if (broken_) throw runtime_error("communicator unusable after an earlier failed collective");
    try {
      body();
    } catch (...) {
      broken_ = true;
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
