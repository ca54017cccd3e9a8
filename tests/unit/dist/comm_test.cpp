// The communicator's collectives as the distributed code relies on them, on ranks that
// are threads (thread_comm.h): alltoallv's routing, reductions, and raise_together.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "dist/thread_comm.h"
#include "tk/core/error.h"
#include "tk/dist/comm.h"

namespace tk::dist {
namespace {

Clock::time_point soon() { return Clock::now() + std::chrono::seconds(30); }

TEST(Comm, AlltoallvDeliversEveryPieceToItsRankInRankOrder) {
  test::run_ranks(3, [](int me, std::unique_ptr<Comm> comm) {
    std::vector<std::vector<uint8_t>> out(3);
    for (int to = 0; to < 3; ++to) out[to].assign(static_cast<size_t>(me + to), static_cast<uint8_t>(10 * me + to));
    const auto in = comm->alltoallv(out, soon());
    ASSERT_EQ(in.size(), 3u);
    for (int from = 0; from < 3; ++from)
      EXPECT_EQ(in[from], std::vector<uint8_t>(static_cast<size_t>(from + me), static_cast<uint8_t>(10 * from + me)));
  });
}

TEST(Comm, ReductionsGiveEveryRankTheSameSumsAndMaxima) {
  test::run_ranks(4, [](int me, std::unique_ptr<Comm> comm) {
    std::vector<double> d = {0.5 * me, 1.0};
    comm->allreduce_sum(std::span<double>(d), soon());
    EXPECT_EQ(d, (std::vector<double>{3.0, 4.0}));
    std::vector<int64_t> i = {me, -me};
    comm->allreduce_max(std::span<int64_t>(i), soon());
    EXPECT_EQ(i, (std::vector<int64_t>{3, 0}));
    comm->allreduce_sum(std::span<int64_t>(i), soon());
    EXPECT_EQ(i, (std::vector<int64_t>{12, 0}));
  });
}

TEST(RaiseTogether, OneRanksErrorIsEveryRanksAndTheLowestRankWins) {
  std::mutex mutex;
  std::vector<std::string> seen;
  test::run_ranks(4, [&](int me, std::unique_ptr<Comm> comm) {
    raise_together(*comm, nullptr, soon());  // nobody failed: nothing thrown
    std::exception_ptr mine;
    if (me == 2) mine = std::make_exception_ptr(invalid_input("bad line", "x.tns: line 9"));
    if (me == 3) mine = std::make_exception_ptr(io_error("cannot read", "x.tns"));
    try {
      raise_together(*comm, mine, soon());
      ADD_FAILURE() << "rank " << me << " did not throw";
    } catch (const Error& e) {
      std::lock_guard lock(mutex);
      seen.push_back(std::string(error_kind_name(e.kind())) + ": " + e.message() + " (" + e.where() + ")");
    }
  });
  ASSERT_EQ(seen.size(), 4u);
  for (const std::string& s : seen) EXPECT_EQ(s, "invalid input: bad line (x.tns: line 9)");
}

}  // namespace
}  // namespace tk::dist
